"""The generation zoo's facts, framework-free, so every runtime that loads the same weights computes
the same function. The facts are the Llama-architecture sizes, the exact math constants, the weight
layout (state-dict names and shapes, and their GGUF names) and the seeded prompts; the runtimes are
PyTorch, ONNX Runtime, llama.cpp and ExecuTorch, on the same token ids (docs/generation.md).

Standard library only: the exporters and the sweep checks read it without importing torch.
The PyTorch builder is zoo/llama.py.

The math, in one place:
  x = tok_embeddings[ids]
  per layer:  h = x + wo(attention(rmsnorm(x) * attention_norm))
              x = h + w2(silu(w1(rmsnorm(h) * ffn_norm)) * w3(rmsnorm(h) * ffn_norm))
  logits = output(rmsnorm(x) * norm)
  rmsnorm(x) = x / sqrt(mean(x^2) + RMS_NORM_EPS); no biases anywhere; output not tied.
  attention: q = wq x -> [T, n_heads, head_dim], k = wk x, v = wv x -> [T, n_kv_heads, head_dim];
  rotary embeddings on q and k (ROPE_LAYOUT below); query head h reads kv head
  h // (n_heads // n_kv_heads) (grouped-query attention); causal softmax(q k^T / sqrt(head_dim)).
"""

from __future__ import annotations

import random
from dataclasses import dataclass

VOCAB_SIZE = 256  # byte vocabulary: token id = a byte; no tokenizer, no BOS/EOS, no early stop
RMS_NORM_EPS = 1e-5
ROPE_THETA = 10000.0
# Rotation pairs are consecutive elements (2i, 2i + 1) of each head, rotated by angle
# pos * ROPE_THETA ** (-2i / head_dim): Meta's original layout, which is llama.cpp's LLAMA rope
# (mode 0), so a GGUF export needs no permutation of wq / wk.
ROPE_LAYOUT = "interleaved"
MAX_SEQ_LEN = 2048  # context_depth + prompt_tokens + new_tokens of one run, at most
# Seeded initialisation (zoo/llama.py): normal(0, INIT_STD) for embeddings and hidden linears,
# normal(0, 1 / sqrt(dim)) for output.weight (logits of standard deviation about 1, so greedy
# picks are not near-ties that rounding could flip between runtimes), ones for norms.
INIT_STD = 0.02


@dataclass(frozen=True)
class LlamaConfig:
    name: str
    dim: int
    n_layers: int
    n_heads: int
    n_kv_heads: int
    ffn_dim: int
    vocab_size: int = VOCAB_SIZE
    max_seq_len: int = MAX_SEQ_LEN

    @property
    def head_dim(self) -> int:
        return self.dim // self.n_heads

    @property
    def params(self) -> int:
        """Parameters, exactly (every weight of the state dict)."""
        return sum(_numel(shape) for shape in state_dict_shapes(self).values())

    def kv_cache_bytes(self, batch: int, tokens: int, bytes_per_element: int) -> int:
        """K and V of every layer for `tokens` positions of `batch` sequences."""
        return 2 * self.n_layers * batch * tokens * self.n_kv_heads * self.head_dim * bytes_per_element


LLAMA_ZOO: dict[str, LlamaConfig] = {
    c.name: c
    for c in (
        LlamaConfig("llama15m", dim=384, n_layers=10, n_heads=6, n_kv_heads=2, ffn_dim=1024),
        LlamaConfig("llama40m", dim=512, n_layers=14, n_heads=8, n_kv_heads=2, ffn_dim=1408),
        LlamaConfig("llama110m", dim=768, n_layers=12, n_heads=12, n_kv_heads=4, ffn_dim=3328),
    )
}
DEFAULT_GENERATION_MODEL = "llama15m"  # the smallest: collect --kind generation without --model


def llama_config(name: str) -> LlamaConfig:
    if name not in LLAMA_ZOO:
        raise KeyError(f"no generation model {name!r}; known: {', '.join(LLAMA_ZOO)}")
    return LLAMA_ZOO[name]


def is_generation_model(name: str) -> bool:
    return name in LLAMA_ZOO


def _numel(shape: tuple[int, ...]) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


def state_dict_shapes(cfg: LlamaConfig) -> dict[str, tuple[int, ...]]:
    """Every weight's name and shape, in the order they are initialised (nn.Linear: [out, in])."""
    hd = cfg.head_dim
    shapes: dict[str, tuple[int, ...]] = {"tok_embeddings.weight": (cfg.vocab_size, cfg.dim)}
    for i in range(cfg.n_layers):
        p = f"layers.{i}."
        shapes.update(
            {
                p + "attention_norm.weight": (cfg.dim,),
                p + "attention.wq.weight": (cfg.n_heads * hd, cfg.dim),
                p + "attention.wk.weight": (cfg.n_kv_heads * hd, cfg.dim),
                p + "attention.wv.weight": (cfg.n_kv_heads * hd, cfg.dim),
                p + "attention.wo.weight": (cfg.dim, cfg.n_heads * hd),
                p + "ffn_norm.weight": (cfg.dim,),
                p + "feed_forward.w1.weight": (cfg.ffn_dim, cfg.dim),  # gate
                p + "feed_forward.w2.weight": (cfg.dim, cfg.ffn_dim),  # down
                p + "feed_forward.w3.weight": (cfg.ffn_dim, cfg.dim),  # up
            }
        )
    shapes["norm.weight"] = (cfg.dim,)
    shapes["output.weight"] = (cfg.vocab_size, cfg.dim)
    return shapes


def state_dict_names(cfg: LlamaConfig) -> list[str]:
    return list(state_dict_shapes(cfg))


GGUF_LAYER_NAMES = {
    "attention_norm.weight": "attn_norm.weight",
    "attention.wq.weight": "attn_q.weight",
    "attention.wk.weight": "attn_k.weight",
    "attention.wv.weight": "attn_v.weight",
    "attention.wo.weight": "attn_output.weight",
    "ffn_norm.weight": "ffn_norm.weight",
    "feed_forward.w1.weight": "ffn_gate.weight",
    "feed_forward.w2.weight": "ffn_down.weight",
    "feed_forward.w3.weight": "ffn_up.weight",
}
GGUF_TOP_NAMES = {
    "tok_embeddings.weight": "token_embd.weight",
    "norm.weight": "output_norm.weight",
    "output.weight": "output.weight",
}


def gguf_tensor_name(name: str) -> str:
    """llama.cpp's tensor name for a state-dict name (layers.3.attention.wq.weight -> blk.3.attn_q.weight)."""
    if name in GGUF_TOP_NAMES:
        return GGUF_TOP_NAMES[name]
    _, index, rest = name.split(".", 2)
    return f"blk.{index}.{GGUF_LAYER_NAMES[rest]}"


def seeded_tokens(seed: int, batch: int, count: int, stream: str) -> list[list[int]]:
    """`batch` sequences of `count` token ids in [0, VOCAB_SIZE), the same on every runtime and
    machine (Python's Mersenne Twister seeded with a string). `stream` keeps the context-depth
    tokens ("context") apart from the measured prompt ("prompt")."""
    return [
        [rng.randrange(VOCAB_SIZE) for _ in range(count)]
        for rng in (random.Random(f"edgestats-generation:{seed}:{stream}:{row}") for row in range(batch))
    ]
