"""What a generation sweep (kind "generation") is checked for before any run (docs/cli/collect.md,
"Generation"). The checks: keys of the other kinds, the frameworks that generate, generation models,
warm-up counts, context + prompt + new tokens within the model's context length, and the KV cache of
the largest batch within the memory available."""

from __future__ import annotations

from typing import Any

from edgestats.collectors.core.sweep_limits import SweepError
from edgestats.collectors.generation.engines import generation_frameworks
from edgestats.collectors.zoo.llama_arch import LLAMA_ZOO

KV_BYTES_PER_ELEMENT = 4  # fp32, as the ONNX, ExecuTorch and PyTorch engines keep it (llama.cpp: f16)

# keys a generation sweep refuses, with why
NOT_FOR_GENERATION = {
    "iterations": "generation runs exactly --new-tokens tokens per sequence; give --new-tokens",
    "input": "generation's prompts are seeded token sequences; give --prompt-tokens",
    **{
        k: "only for training"
        for k in ("data", "epochs", "learning_rate", "optimizer", "num_workers", "evict_cache")
    },
}


def check_generation(sweep: Any, where: str) -> None:
    """Refuse, in one line, what a generation sweep cannot run; `sweep` is sweep.Sweep."""
    axes = sweep.axes
    given = [k for k in NOT_FOR_GENERATION if k in axes]
    if given:
        raise SweepError(f"{where}{given[0]}: {NOT_FOR_GENERATION[given[0]]} (kind generation)")
    wrong = [f for f in axes["framework"] if f not in generation_frameworks()]
    if wrong:
        raise SweepError(
            f"{where}framework: {', '.join(wrong)} does not run generation here; use one of "
            f"{', '.join(generation_frameworks())}"
        )
    models = [m for m in axes["model"] if m not in LLAMA_ZOO]
    if models:
        raise SweepError(
            f"{where}model: generation builds a generation zoo model from code; {', '.join(models)} "
            f"is not one (generation models: {', '.join(LLAMA_ZOO)})"
        )
    auto = [w for w in axes.get("warmup", []) if isinstance(w, str)]
    if auto:
        raise SweepError(
            f"{where}warmup: {auto[0]!r}: a generation run's warm-up is a count of whole warm-up "
            "generations (default 1); give a number"
        )
    longest = sum(
        max(axes.get(k, [default]))
        for k, default in (("context_depth", 0), ("prompt_tokens", 128), ("new_tokens", 64))
    )
    for model in axes["model"]:
        limit = LLAMA_ZOO[model].max_seq_len
        if longest > limit:
            raise SweepError(
                f"{where}context_depth + prompt_tokens + new_tokens: {longest:,} tokens, more than "
                f"{model}'s context of {limit:,}; lower one of them"
            )
    check_kv_cache(axes, longest, where)


def check_kv_cache(axes: dict, tokens: int, where: str, available: int | None = None) -> None:
    """Refuse a batch whose KV cache (K and V of every layer, `tokens` positions per sequence, fp32)
    would not fit in the memory available now: it would be allocated at the run's start, or grow
    until the kernel killed the worker."""
    if available is None:
        from edgestats.store.database import available_memory_bytes  # psutil, only for generation

        available = available_memory_bytes()
    batch = max(axes.get("batch_size", [1]))
    for model in axes["model"]:
        need = LLAMA_ZOO[model].kv_cache_bytes(batch, tokens, KV_BYTES_PER_ELEMENT)
        if need > available:
            raise SweepError(
                f"{where}batch_size: {batch:,} sequences of {tokens:,} tokens of {model} need a KV cache "
                f"of {need / 2**30:,.1f} GiB, more than the {available / 2**30:,.1f} GiB of memory "
                "available here; lower batch_size (or the tokens)"
            )
