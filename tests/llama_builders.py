"""A small generation model for tests that need the Llama math but not a zoo size: 2 layers,
4 query heads sharing 2 KV heads, seeded like the zoo (importable from tests)."""

from __future__ import annotations

from edgestats.collectors.zoo.llama_arch import LlamaConfig

TINY = LlamaConfig("tiny", dim=32, n_layers=2, n_heads=4, n_kv_heads=2, ffn_dim=48, max_seq_len=64)


def tiny_model(seed: int = 3):
    """TINY in fp32, eval mode, its weights seeded by zoo.llama.seed_weights (imports torch)."""
    import torch

    from edgestats.collectors.zoo.llama import Llama, seed_weights

    with torch.device("meta"):
        model = Llama(TINY)
    model = model.to_empty(device="cpu")
    seed_weights(model, seed)
    return model.eval()
