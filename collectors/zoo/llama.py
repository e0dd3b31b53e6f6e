"""The generation zoo in PyTorch: a decoder-only transformer of the Llama architecture with seeded
random weights. Its parts: RMSNorm, rotary embeddings, SwiGLU, grouped-query attention, a KV cache.

The sizes, constants and weight names are zoo/llama_arch.py's (framework-free), so exporters to
GGUF and ONNX read the same facts; the math is written out in that module's docstring. This
module imports torch and is imported only by what runs or exports a generation model.
"""

from __future__ import annotations

import math
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from edgestats.collectors.zoo.llama_arch import (
    INIT_STD,
    RMS_NORM_EPS,
    ROPE_THETA,
    LlamaConfig,
    llama_config,
    state_dict_shapes,
)


class RMSNorm(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # computed in fp32 whatever the weights' precision (the sum of squares overflows fp16)
        xf = x.float()
        normed = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + RMS_NORM_EPS)
        return normed.type_as(x) * self.weight


class KVCache:
    """K and V of every layer, allocated once for `max_len` positions: [layers, batch, max_len,
    n_kv_heads, head_dim] each. `pos` is how many positions hold keys and values."""

    def __init__(self, cfg: LlamaConfig, batch: int, max_len: int, dtype: Any, device: Any = "cpu"):
        shape = (cfg.n_layers, batch, max_len, cfg.n_kv_heads, cfg.head_dim)
        self.k = torch.zeros(shape, dtype=dtype, device=device)
        self.v = torch.zeros(shape, dtype=dtype, device=device)
        self.pos = 0

    @property
    def nbytes(self) -> int:
        return self.k.numel() * self.k.element_size() + self.v.numel() * self.v.element_size()


def rope_angles(positions: torch.Tensor, head_dim: int) -> tuple[torch.Tensor, torch.Tensor]:
    """cos and sin of pos * ROPE_THETA ** (-2i / head_dim), [T, head_dim / 2], in fp32."""
    steps = torch.arange(0, head_dim, 2, dtype=torch.float32, device=positions.device)
    freqs = ROPE_THETA ** (-steps / head_dim)
    angles = positions.float()[:, None] * freqs[None, :]
    return angles.cos(), angles.sin()


def apply_rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Rotate consecutive pairs (2i, 2i + 1) of each head (llama_arch.ROPE_LAYOUT); x: [B, T, H, D]."""
    xf = x.float()
    x0, x1 = xf[..., 0::2], xf[..., 1::2]
    c, s = cos[None, :, None, :], sin[None, :, None, :]
    return torch.stack((x0 * c - x1 * s, x0 * s + x1 * c), dim=-1).flatten(-2).type_as(x)


class Attention(nn.Module):
    def __init__(self, cfg: LlamaConfig):
        super().__init__()
        self.cfg = cfg
        hd = cfg.head_dim
        self.wq = nn.Linear(cfg.dim, cfg.n_heads * hd, bias=False)
        self.wk = nn.Linear(cfg.dim, cfg.n_kv_heads * hd, bias=False)
        self.wv = nn.Linear(cfg.dim, cfg.n_kv_heads * hd, bias=False)
        self.wo = nn.Linear(cfg.n_heads * hd, cfg.dim, bias=False)

    def forward(self, x: torch.Tensor, layer: int, cache: KVCache, rope: tuple, mask: torch.Tensor):
        cfg, (b, t, _) = self.cfg, x.shape
        q = apply_rope(self.wq(x).view(b, t, cfg.n_heads, cfg.head_dim), *rope)
        k = apply_rope(self.wk(x).view(b, t, cfg.n_kv_heads, cfg.head_dim), *rope)
        v = self.wv(x).view(b, t, cfg.n_kv_heads, cfg.head_dim)
        end = cache.pos + t
        cache.k[layer, :, cache.pos : end] = k
        cache.v[layer, :, cache.pos : end] = v
        group = cfg.n_heads // cfg.n_kv_heads  # query head h reads kv head h // group
        keys = cache.k[layer, :, :end].repeat_interleave(group, dim=2).transpose(1, 2)
        values = cache.v[layer, :, :end].repeat_interleave(group, dim=2).transpose(1, 2)
        out = F.scaled_dot_product_attention(q.transpose(1, 2), keys, values, attn_mask=mask)
        return self.wo(out.transpose(1, 2).reshape(b, t, cfg.n_heads * cfg.head_dim))


class FeedForward(nn.Module):
    def __init__(self, cfg: LlamaConfig):
        super().__init__()
        self.w1 = nn.Linear(cfg.dim, cfg.ffn_dim, bias=False)  # gate
        self.w2 = nn.Linear(cfg.ffn_dim, cfg.dim, bias=False)  # down
        self.w3 = nn.Linear(cfg.dim, cfg.ffn_dim, bias=False)  # up

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


class Block(nn.Module):
    def __init__(self, cfg: LlamaConfig):
        super().__init__()
        self.attention_norm = RMSNorm(cfg.dim)
        self.attention = Attention(cfg)
        self.ffn_norm = RMSNorm(cfg.dim)
        self.feed_forward = FeedForward(cfg)

    def forward(self, x, layer: int, cache: KVCache, rope: tuple, mask: torch.Tensor):
        h = x + self.attention(self.attention_norm(x), layer, cache, rope, mask)
        return h + self.feed_forward(self.ffn_norm(h))


class Llama(nn.Module):
    def __init__(self, cfg: LlamaConfig):
        super().__init__()
        self.cfg = cfg
        self.tok_embeddings = nn.Embedding(cfg.vocab_size, cfg.dim)
        self.layers = nn.ModuleList(Block(cfg) for _ in range(cfg.n_layers))
        self.norm = RMSNorm(cfg.dim)
        self.output = nn.Linear(cfg.dim, cfg.vocab_size, bias=False)

    def forward(self, tokens: torch.Tensor, cache: KVCache) -> torch.Tensor:
        """Logits [B, T, V] of `tokens` [B, T] at positions cache.pos ..., whose keys and values
        are appended to `cache`."""
        t = tokens.shape[1]
        start, end = cache.pos, cache.pos + t
        if end > cache.k.shape[2]:
            raise ValueError(f"the KV cache holds {cache.k.shape[2]} positions; {end} were asked for")
        positions = torch.arange(start, end, device=tokens.device)
        rope = rope_angles(positions, self.cfg.head_dim)
        # query at absolute position p sees keys 0..p (True = attend)
        mask = torch.arange(end, device=tokens.device)[None, :] <= positions[:, None]
        x = self.tok_embeddings(tokens)
        for i, layer in enumerate(self.layers):
            x = layer(x, i, cache, rope, mask)
        cache.pos = end
        return self.output(self.norm(x))


@torch.no_grad()
def seed_weights(model: Llama, seed: int) -> None:
    """Fill every weight from one generator seeded with `seed`, in state-dict order
    (llama_arch.INIT_STD; output.weight with std 1 / sqrt(dim); norms ones)."""
    generator = torch.Generator().manual_seed(seed)
    params = dict(model.named_parameters())
    expected = state_dict_shapes(model.cfg)
    if list(params) != list(expected):  # the documented layout is the module's, name for name
        raise AssertionError("Llama's parameters differ from llama_arch.state_dict_shapes")
    for name, param in params.items():
        if name.endswith("norm.weight"):
            param.fill_(1.0)
        else:
            std = 1 / math.sqrt(model.cfg.dim) if name == "output.weight" else INIT_STD
            param.copy_(torch.randn(param.shape, generator=generator) * std)


def build_llama(name: str, seed: int = 0) -> Llama:
    """The zoo model `name` in fp32, eval mode, with its seeded weights."""
    cfg = llama_config(name)
    with torch.device("meta"):  # no default initialisation: seed_weights writes every weight once
        model = Llama(cfg)
    model = model.to_empty(device="cpu")
    seed_weights(model, seed)
    return model.eval()


@torch.no_grad()
def greedy_generate(
    model: Llama, prompt: list[list[int]], new_tokens: int, context: list[list[int]] | None = None
) -> list[list[int]]:
    """The reference: `new_tokens` greedy tokens per sequence after `context` + `prompt`."""
    param = next(model.parameters())
    depth = len(context[0]) if context else 0
    cache = KVCache(model.cfg, len(prompt), depth + len(prompt[0]) + new_tokens, param.dtype, param.device)
    if context:
        model(torch.tensor(context, device=param.device), cache)
    logits = model(torch.tensor(prompt, device=param.device), cache)
    out: list[list[int]] = [[] for _ in prompt]
    for step in range(new_tokens):
        ids = logits[:, -1].argmax(-1)
        for row, token in zip(out, ids.tolist()):
            row.append(token)
        if step + 1 < new_tokens:
            logits = model(ids[:, None], cache)
    return out
