"""The generation zoo (collectors/zoo/llama.py, llama_arch.py): the PyTorch model computes the math
llama_arch documents (an independent numpy forward on a small configuration: RMSNorm eps, the
interleaved rotary layout, grouped-query heads, SwiGLU), decoding with the KV cache gives the
logits of a full recompute, greedy generation is deterministic, and the weights are the seeded,
named, counted ones the exporters rely on.

torch is imported inside the tests (the fast lane collects this file without paying for it).
Cost: about 6 s of test time in make test's parallel lane (2 cores).
"""

from __future__ import annotations

import numpy as np
import pytest
from llama_builders import TINY, tiny_model

from edgestats.collectors.zoo.llama_arch import (
    LLAMA_ZOO,
    RMS_NORM_EPS,
    ROPE_THETA,
    LlamaConfig,
    gguf_tensor_name,
    seeded_tokens,
    state_dict_names,
)

pytestmark = pytest.mark.frameworks


def numpy_forward(weights: dict[str, np.ndarray], cfg: LlamaConfig, ids: list[int]) -> np.ndarray:
    """llama_arch's documented math, written again in float64 numpy: logits [T, V]."""
    hd, group, t = cfg.head_dim, cfg.n_heads // cfg.n_kv_heads, len(ids)

    def rmsnorm(x, w):
        return x / np.sqrt((x**2).mean(-1, keepdims=True) + RMS_NORM_EPS) * w

    def rope(x):  # [T, H, hd]; pairs (2i, 2i + 1) rotated by pos * theta ** (-2i / hd)
        angles = np.arange(t)[:, None] * ROPE_THETA ** (-np.arange(0, hd, 2) / hd)[None, :]
        cos, sin = np.cos(angles)[:, None, :], np.sin(angles)[:, None, :]
        out = np.empty_like(x)
        out[..., 0::2] = x[..., 0::2] * cos - x[..., 1::2] * sin
        out[..., 1::2] = x[..., 0::2] * sin + x[..., 1::2] * cos
        return out

    x = weights["tok_embeddings.weight"][ids]
    for i in range(cfg.n_layers):
        w = {k.split(f"layers.{i}.", 1)[1]: v for k, v in weights.items() if k.startswith(f"layers.{i}.")}
        h = rmsnorm(x, w["attention_norm.weight"])
        q = rope((h @ w["attention.wq.weight"].T).reshape(t, cfg.n_heads, hd))
        k = rope((h @ w["attention.wk.weight"].T).reshape(t, cfg.n_kv_heads, hd))
        v = (h @ w["attention.wv.weight"].T).reshape(t, cfg.n_kv_heads, hd)
        heads = []
        for head in range(cfg.n_heads):
            kv = head // group
            scores = q[:, head] @ k[:, kv].T / np.sqrt(hd)
            scores = np.where(np.tril(np.ones((t, t), bool)), scores, -np.inf)
            p = np.exp(scores - scores.max(-1, keepdims=True))
            heads.append((p / p.sum(-1, keepdims=True)) @ v[:, kv])
        x = x + np.concatenate(heads, -1) @ w["attention.wo.weight"].T
        h = rmsnorm(x, w["ffn_norm.weight"])
        gate = h @ w["feed_forward.w1.weight"].T
        up = h @ w["feed_forward.w3.weight"].T
        x = x + (gate / (1 + np.exp(-gate)) * up) @ w["feed_forward.w2.weight"].T
    return rmsnorm(x, weights["norm.weight"]) @ weights["output.weight"].T


def test_the_model_computes_the_documented_math():
    import torch

    from edgestats.collectors.zoo.llama import KVCache

    model = tiny_model()
    ids = seeded_tokens(0, 1, 12, "prompt")[0]
    with torch.no_grad():
        logits = model(torch.tensor([ids]), KVCache(TINY, 1, 12, torch.float32))[0].double().numpy()
    weights = {k: v.double().numpy() for k, v in model.state_dict().items()}
    expected = numpy_forward(weights, TINY, ids)
    assert np.abs(logits - expected).max() < 1e-4 * np.abs(expected).max()


def test_kv_cache_decoding_equals_a_full_recompute_and_is_deterministic():
    """Every decode step's logits (cache, one token at a time, after a context and a prompt)
    equal the full sequence's logits recomputed without a cache, within fp32 rounding; two
    greedy generations from freshly built models give the same tokens."""
    import torch

    from edgestats.collectors.zoo.llama import KVCache, build_llama, greedy_generate

    model = build_llama("llama15m", seed=0)
    context, prompt = seeded_tokens(0, 2, 5, "context"), seeded_tokens(0, 2, 7, "prompt")
    tokens = greedy_generate(model, prompt, 6, context=context)
    assert tokens == greedy_generate(build_llama("llama15m", seed=0), prompt, 6, context=context)
    full = [c + p + t[:-1] for c, p, t in zip(context, prompt, tokens)]
    with torch.no_grad():
        recomputed = model(torch.tensor(full), KVCache(model.cfg, 2, len(full[0]), torch.float32))
        cache = KVCache(model.cfg, 2, len(full[0]), torch.float32)
        stepped = [model(torch.tensor([c + p for c, p in zip(context, prompt)]), cache)[:, -1]]
        for step in range(5):
            stepped.append(model(torch.tensor([[t[step]] for t in tokens]), cache)[:, -1])
    stepped = torch.stack(stepped, dim=1)  # logits after the prompt and after each generated token
    assert torch.allclose(stepped, recomputed[:, -6:], atol=1e-4, rtol=1e-4)
    assert recomputed[:, -6:].argmax(-1).tolist() == tokens  # greedy = argmax of the full recompute


def test_every_tensor_the_forward_makes_is_on_the_model_s_device():
    """A GPU run (--accelerator cuda) failed on a real H200 before any token: the rotary
    frequencies were made on the CPU beside positions on cuda:0. The meta device stands in for the
    GPU here (it refuses any CPU operand the same way): prefill and decode steps, fp32 and fp16."""
    import torch

    from edgestats.collectors.zoo.llama import KVCache, build_llama

    for dtype in (torch.float32, torch.float16):
        model = build_llama("llama15m", seed=0).to(device="meta", dtype=dtype)
        cache = KVCache(model.cfg, 2, 12, dtype, "meta")
        logits = model(torch.zeros((2, 8), dtype=torch.long, device="meta"), cache)
        for _ in range(3):
            logits = model(torch.zeros((2, 1), dtype=torch.long, device="meta"), cache)
        assert logits.device.type == "meta" and logits.shape == (2, 1, model.cfg.vocab_size)
        assert cache.pos == 11


def test_weights_are_seeded_named_and_counted():
    import torch

    from edgestats.collectors.zoo.llama import build_llama

    a, b, c = build_llama("llama15m", 0), build_llama("llama15m", 0), build_llama("llama15m", 1)
    names = state_dict_names(LLAMA_ZOO["llama15m"])
    assert list(a.state_dict()) == names  # the documented layout, buffers and all: nothing else
    assert all(torch.equal(a.state_dict()[n], b.state_dict()[n]) for n in names)
    assert not torch.equal(a.state_dict()["output.weight"], c.state_dict()["output.weight"])
    assert sum(p.numel() for p in a.parameters()) == LLAMA_ZOO["llama15m"].params
    sizes = {name: cfg.params / 1e6 for name, cfg in LLAMA_ZOO.items()}
    assert 14 < sizes["llama15m"] < 17 and 37 < sizes["llama40m"] < 43 and 105 < sizes["llama110m"] < 115


def test_gguf_names_and_seeded_prompts():
    names = [gguf_tensor_name(n) for n in state_dict_names(LLAMA_ZOO["llama15m"])]
    assert names[:3] == ["token_embd.weight", "blk.0.attn_norm.weight", "blk.0.attn_q.weight"]
    assert names[-2:] == ["output_norm.weight", "output.weight"] and len(set(names)) == len(names)
    assert "blk.9.ffn_gate.weight" in names and "blk.9.ffn_down.weight" in names
    prompt = seeded_tokens(7, 3, 20, "prompt")
    assert prompt == seeded_tokens(7, 3, 20, "prompt") and prompt != seeded_tokens(7, 3, 20, "context")
    assert len(prompt) == 3 and len(set(map(tuple, prompt))) == 3
    assert all(0 <= t < 256 for row in prompt for t in row)
