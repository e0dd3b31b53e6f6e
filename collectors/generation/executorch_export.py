"""A generation zoo model as an ExecuTorch program (.pte) for XNNPACK, from the same seeded weights
as every other runtime. It is exported with a static KV cache held in the program as mutable buffers
(docs/generation.md, "The ExecuTorch program").

The program's one method, `forward`:
  tokens     int64 [batch, T]   the ids to run (T: 1 .. capacity; the prompt, or 1 to decode)
  positions  int64 [T]          their absolute positions in the sequence (start, start + 1, ...)
  -> logits  float [batch, vocab]  the last position's logits only
Each layer's keys and values are buffers `k_cache_{i}` / `v_cache_{i}` [batch, n_kv_heads,
capacity, head_dim] that live in the program's memory-planned arena between calls: a forward
writes its T keys and values at `positions` (index_copy_) and attends over the whole buffer with a
mask that lets position p see keys 0..p only. So the buffers' shapes never change (XNNPACK plans
its graph once per T) and entries past the last written position, stale or zero, are masked.
The buffers start as zeros (InitializedMutableBufferPass: their initial state is in the file), so
no uninitialised memory reaches the masked product. Batch and capacity (context + prompt + new
tokens of the run) are fixed in the file, so they are part of its name and cache key; T is a
dynamic axis (torch.export Dim), so one method runs the context, the prompt and each decode step.

Lowered with to_edge_transform_and_lower and the XnnpackPartitioner, fp32: the linear layers,
matrix products and elementwise ops run in the XNNPACK delegate; the cache writes (index_put),
rotary angles and whatever XNNPACK does not take run in ExecuTorch's portable kernels.
"""

from __future__ import annotations

import contextlib
import io
import math
import warnings
from pathlib import Path
from typing import Any

from edgestats.collectors.adapters.inputs import FrameworkMissingError
from edgestats.collectors.zoo.llama_arch import LlamaConfig, llama_config

CACHE_BUFFERS = ("k_cache_", "v_cache_")  # buffer name prefixes: the initialised mutable buffers


def pte_file_name(name: str, seed: int, batch: int, capacity: int) -> str:
    """The file a model pack holds: llama15m-seed0-b1-kv80.fp32.xnnpack.pte."""
    return f"{name}-seed{seed}-b{batch}-kv{capacity}.fp32.xnnpack.pte"


def program_module(model: Any, batch: int, capacity: int) -> Any:
    """`model` (zoo/llama.py's Llama) with the KV cache as mutable buffers (the module docstring's
    signature); the layers' math is the zoo's modules, attention is written out as in
    onnx_export.cached_attention (grouped query heads folded into a broadcast axis)."""
    import torch
    from torch import nn

    from edgestats.collectors.zoo.llama import apply_rope, rope_angles

    cfg: LlamaConfig = model.cfg
    group = cfg.n_heads // cfg.n_kv_heads

    class KVProgram(nn.Module):
        def __init__(self, llama: Any):
            super().__init__()
            self.llama = llama
            shape = (batch, cfg.n_kv_heads, capacity, cfg.head_dim)
            for i in range(cfg.n_layers):
                self.register_buffer(f"k_cache_{i}", torch.zeros(shape))
                self.register_buffer(f"v_cache_{i}", torch.zeros(shape))
            self.register_buffer("slots", torch.arange(capacity), persistent=False)

        def attention(self, i: int, attn: Any, x: Any, positions: Any, rope: tuple, bias: Any) -> Any:
            b, t, _ = x.shape
            q = apply_rope(attn.wq(x).view(b, t, cfg.n_heads, cfg.head_dim), *rope)
            k = apply_rope(attn.wk(x).view(b, t, cfg.n_kv_heads, cfg.head_dim), *rope)
            v = attn.wv(x).view(b, t, cfg.n_kv_heads, cfg.head_dim)
            keys, values = getattr(self, f"k_cache_{i}"), getattr(self, f"v_cache_{i}")
            keys.index_copy_(2, positions, k.transpose(1, 2))  # [b, n_kv, T, hd] at positions
            values.index_copy_(2, positions, v.transpose(1, 2))
            # the group's query heads stacked along the rows of their kv head: [b, kv, T * g, hd]
            # (row t * g + j: position t, head kv * g + j), so the products read the cache as it is
            # (no broadcast copy of it per step)
            q = q.view(b, t, cfg.n_kv_heads, group, cfg.head_dim).transpose(1, 2)
            q = q.reshape(b, cfg.n_kv_heads, t * group, cfg.head_dim)
            scores = q @ keys.transpose(-1, -2) / math.sqrt(cfg.head_dim) + bias  # [b, kv, T * g, cap]
            out = (torch.softmax(scores, dim=-1) @ values).view(b, cfg.n_kv_heads, t, group, cfg.head_dim)
            out = out.transpose(1, 2).reshape(b, t, cfg.n_heads * cfg.head_dim)
            return attn.wo(out)

        def forward(self, tokens: Any, positions: Any) -> Any:
            llama = self.llama
            rope = rope_angles(positions, cfg.head_dim)
            # query at position p sees keys 0..p: an additive mask, once per forward, for every
            # layer (XNNPACK adds it; a masked_fill per layer would run in the portable kernels)
            allowed = self.slots[None, :] <= positions[:, None]
            bias = torch.zeros(allowed.shape).masked_fill(~allowed, float("-inf")).repeat_interleave(group, 0)
            x = llama.tok_embeddings(tokens)
            for i, block in enumerate(llama.layers):
                h = x + self.attention(i, block.attention, block.attention_norm(x), positions, rope, bias)
                x = h + block.feed_forward(block.ffn_norm(h))
            return llama.output(llama.norm(x[:, -1]))

    return KVProgram(model).eval()


def export_program(name: str, seed: int, batch: int, capacity: int, target: Path) -> dict[str, Any]:
    """Export zoo model `name` with its weights of `seed` for `batch` sequences of up to
    `capacity` positions to `target` (fp32, XNNPACK); returns the facts for the sidecar."""
    try:
        import torch
        from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner
        from executorch.exir import ExecutorchBackendConfig, to_edge_transform_and_lower
        from executorch.exir.passes.init_mutable_pass import InitializedMutableBufferPass

        from edgestats.collectors.adapters.executorch import _quiet_logging, _version
        from edgestats.collectors.zoo.llama import build_llama
    except ImportError as exc:
        raise FrameworkMissingError(
            f"exporting generation model {name!r} to ExecuTorch needs PyTorch and executorch ({exc}): "
            "pip install 'edgestats[executorch]' on this machine, or build a model pack where it is installed"
        ) from None
    import executorch

    from edgestats.collectors.adapters import common

    cfg = llama_config(name)
    module = program_module(build_llama(name, seed), batch, capacity)
    # traced at T = 2 (not 1, which torch.export would specialise); T ranges over 1 .. capacity
    new = torch.export.Dim("new", min=1, max=capacity)
    example = (torch.zeros((batch, 2), dtype=torch.int64), torch.arange(2))
    # torchao (imported by the XNNPACK backend) logs missing CUDA kernels and exir warns about
    # deprecated pytree classes: noise in the prepare log of a CPU export
    with (
        torch.no_grad(),
        warnings.catch_warnings(),
        contextlib.redirect_stderr(io.StringIO()),
        _quiet_logging(),
    ):
        warnings.simplefilter("ignore")
        exported = torch.export.export(module, example, dynamic_shapes=({1: new}, {0: new}), strict=False)
        lowered = to_edge_transform_and_lower(exported, partitioner=[XnnpackPartitioner()])
        program = lowered.to_executorch(
            ExecutorchBackendConfig(passes=[InitializedMutableBufferPass(list(CACHE_BUFFERS))])
        )
    with common.atomic_target(target) as tmp:
        tmp.write_bytes(program.buffer)
    return {
        "model": name,
        "seed": seed,
        "params": cfg.params,
        "batch_size": batch,
        "capacity": capacity,
        "exporter": f"torch.export (torch {torch.__version__}; dynamic T, static batch {batch} and "
        f"KV capacity {capacity}) + to_edge_transform_and_lower with XnnpackPartitioner "
        f"(executorch {_version(executorch)}), fp32",
        "kv_cache": "mutable buffers k_cache_i/v_cache_i [batch, n_kv_heads, capacity, head_dim], "
        "zero-initialised, written at `positions` by index_copy_, masked attention over all of it",
    }
