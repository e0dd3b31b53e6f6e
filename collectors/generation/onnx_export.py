"""A generation zoo model as an ONNX graph for ONNX Runtime, with the KV cache as explicit inputs
and outputs. It is exported by torch.onnx.export from the same seeded weights as every other runtime
(docs/generation.md, "The ONNX graph").

The graph, one per model (names are its input and output names):
  tokens            int64 [batch, T]                      the ids to run (T: the prompt, or 1 to decode)
  past_key_{i}      float [batch, n_kv_heads, P, head_dim]  layer i's keys of the P positions so far
  past_value_{i}    float [batch, n_kv_heads, P, head_dim]
  -> logits         float [batch, vocab]                   the last position's logits only
  -> present_key_{i}, present_value_{i}  [batch, n_kv_heads, P + T, head_dim]: past + the T new ones
The position offset is P, the past's length (axis 2): rotary angles and the causal mask start
there, so the same graph runs the prompt (P = 0 or the context depth) and each decode step
(T = 1). Axes batch, T and P are dynamic. Keys are stored after the rotary embedding, as
zoo/llama.py's cache holds them; heads first, so attention reads them without a transpose.

The layers' math is zoo/llama.py's own modules (RMSNorm, rotary embedding, SwiGLU, the same
Linear weights); only attention is written out here, as matrix products with the grouped query
heads folded into a broadcast axis, so the exporter emits plain MatMul/Softmax instead of
repeat_interleave and scaled_dot_product_attention with a data-dependent mask.

The exporter is chosen as for the CNNs (adapters/onnxruntime.py): the dynamo exporter where
onnxscript is installed (the axes given as torch.export dynamic shapes), else the TorchScript-based
one (dynamo=False, dynamic_axes); the opset is the exporter's default. Which one ran is in the
sidecar and the run's environment. Both graphs were checked against PyTorch's tokens here.
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import math
import warnings
from pathlib import Path
from typing import Any

from edgestats.collectors.adapters import common
from edgestats.collectors.adapters.inputs import FrameworkMissingError
from edgestats.collectors.zoo.llama_arch import LlamaConfig, llama_config

# example lengths the graph is traced with: past and new lengths above 1 and unequal, so no axis
# is specialised to a constant (a trace at 0 or 1 could fold that size into the graph)
TRACE_PAST, TRACE_NEW, TRACE_BATCH = 3, 5, 2


def onnx_file_name(name: str, seed: int, precision: str) -> str:
    """The file a model pack holds: llama15m-seed0.kv.fp32.onnx."""
    return f"{name}-seed{seed}.kv.{precision}.onnx"


def input_names(cfg: LlamaConfig) -> list[str]:
    layers = range(cfg.n_layers)
    return ["tokens", *(f"past_key_{i}" for i in layers), *(f"past_value_{i}" for i in layers)]


def output_names(cfg: LlamaConfig) -> list[str]:
    layers = range(cfg.n_layers)
    return ["logits", *(f"present_key_{i}" for i in layers), *(f"present_value_{i}" for i in layers)]


def dynamic_axes(cfg: LlamaConfig) -> dict[str, dict[int, str]]:
    axes: dict[str, dict[int, str]] = {"tokens": {0: "batch", 1: "new"}, "logits": {0: "batch"}}
    for i in range(cfg.n_layers):
        for kind in ("key", "value"):
            axes[f"past_{kind}_{i}"] = {0: "batch", 2: "past"}
            axes[f"present_{kind}_{i}"] = {0: "batch", 2: "total"}
    return axes


def dynamic_shapes(cfg: LlamaConfig) -> tuple:
    """dynamic_axes for the dynamo exporter (torch.export): tokens, then the cache's *args."""
    from torch.export import Dim

    batch, new, past = Dim("batch"), Dim("new"), Dim("past")
    return ({0: batch, 1: new}, tuple({0: batch, 2: past} for _ in range(2 * cfg.n_layers)))


def cached_attention(attn: Any, x: Any, past_k: Any, past_v: Any, rope: tuple, mask: Any) -> tuple:
    """zoo/llama.py's Attention with the cache as tensors: (output, present keys, present values).
    Query head h reads kv head h // group: q's heads fold to [n_kv, group] and broadcast over k/v."""
    import torch

    from edgestats.collectors.zoo.llama import apply_rope

    cfg, (b, t, _) = attn.cfg, x.shape
    group = cfg.n_heads // cfg.n_kv_heads
    q = apply_rope(attn.wq(x).view(b, t, cfg.n_heads, cfg.head_dim), *rope)
    k = apply_rope(attn.wk(x).view(b, t, cfg.n_kv_heads, cfg.head_dim), *rope)
    v = attn.wv(x).view(b, t, cfg.n_kv_heads, cfg.head_dim)
    keys = torch.cat((past_k, k.transpose(1, 2)), dim=2)  # [b, n_kv, P + t, hd]
    values = torch.cat((past_v, v.transpose(1, 2)), dim=2)
    q = q.transpose(1, 2).reshape(b, cfg.n_kv_heads, group, t, cfg.head_dim)
    scores = q @ keys.unsqueeze(2).transpose(-1, -2) / math.sqrt(cfg.head_dim)  # [b, kv, g, t, P+t]
    weights = torch.softmax(scores.masked_fill(~mask, float("-inf")), dim=-1)
    out = (weights @ values.unsqueeze(2)).reshape(b, cfg.n_heads, t, cfg.head_dim)
    return attn.wo(out.transpose(1, 2).reshape(b, t, cfg.n_heads * cfg.head_dim)), keys, values


def graph_module(model: Any) -> Any:
    """The nn.Module torch.onnx.export traces: `model` (zoo/llama.py's Llama) with the KV cache
    as inputs and outputs (the module docstring's signature)."""
    import torch
    from torch import nn

    from edgestats.collectors.zoo.llama import rope_angles

    class KVGraph(nn.Module):
        def __init__(self, llama: Any):
            super().__init__()
            self.llama = llama

        def forward(self, tokens: Any, *cache: Any) -> tuple:
            llama, n = self.llama, self.llama.cfg.n_layers
            past_keys, past_values = cache[:n], cache[n:]
            start, t = past_keys[0].shape[2], tokens.shape[1]
            positions = torch.arange(t, device=tokens.device) + start
            rope = rope_angles(positions, llama.cfg.head_dim)
            # query at absolute position p sees keys 0..p
            mask = torch.arange(start + t, device=tokens.device)[None, :] <= positions[:, None]
            x, keys, values = llama.tok_embeddings(tokens), [], []
            for i, block in enumerate(llama.layers):
                out, k, v = cached_attention(
                    block.attention, block.attention_norm(x), past_keys[i], past_values[i], rope, mask
                )
                h = x + out
                x = h + block.feed_forward(block.ffn_norm(h))
                keys.append(k)
                values.append(v)
            logits = llama.output(llama.norm(x[:, -1]))
            return (logits, *keys, *values)

    return KVGraph(model).eval()


def example_inputs(cfg: LlamaConfig) -> tuple:
    import torch

    shape = (TRACE_BATCH, cfg.n_kv_heads, TRACE_PAST, cfg.head_dim)
    tokens = torch.zeros((TRACE_BATCH, TRACE_NEW), dtype=torch.int64)
    return (tokens, *(torch.zeros(shape) for _ in range(2 * cfg.n_layers)))


def export_onnx(name: str, seed: int, target: Path) -> dict[str, Any]:
    """Export zoo model `name` with its weights of `seed` to `target` (fp32); returns the facts
    the sidecar records (the caller writes it)."""
    try:
        import torch

        from edgestats.collectors.zoo.llama import build_llama
    except ImportError as exc:
        raise FrameworkMissingError(
            f"exporting generation model {name!r} to ONNX needs PyTorch ({exc}): "
            "pip install 'edgestats[torch]' on this machine, or build a model pack where it is installed"
        ) from None
    cfg, model = llama_config(name), build_llama(name, seed)
    dynamo = importlib.util.find_spec("onnxscript") is not None
    kwargs: dict[str, Any] = {
        "input_names": input_names(cfg),
        "output_names": output_names(cfg),
        "dynamo": dynamo,
    }
    if dynamo:  # it cannot turn dynamic_axes into torch.export's shapes for the cache's *args
        kwargs.update(dynamic_shapes=dynamic_shapes(cfg), external_data=False)  # one file (110m: 0.45 GB)
    else:
        kwargs["dynamic_axes"] = dynamic_axes(cfg)
    with (
        common.atomic_target(target) as tmp,
        torch.no_grad(),
        warnings.catch_warnings(),
        contextlib.redirect_stdout(io.StringIO()),
    ):
        warnings.simplefilter("ignore")  # the TorchScript exporter's deprecation and tracer warnings
        torch.onnx.export(graph_module(model), example_inputs(cfg), str(tmp), **kwargs)
    return {
        "model": name,
        "seed": seed,
        "params": cfg.params,
        "exporter": f"torch.onnx.export ({'dynamo' if dynamo else 'TorchScript-based, dynamo=False'}; "
        f"torch {torch.__version__})",
        "kv_cache": "inputs past_key_i/past_value_i, outputs present_key_i/present_value_i "
        "[batch, n_kv_heads, positions, head_dim]; position offset = past length",
    }
