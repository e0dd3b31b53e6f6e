"""A generation run's runs columns: the prompt, generation and context lengths and the KV cache's
size. They come from its configuration and spool (the worker's "generation" environment entry).
Every token's latency goes to the latencies table and every phase to phases, as for inference
(runrows.py); the per-run figures are the generation_summary view's (schema/views.sql)."""

from __future__ import annotations

from typing import Any

from edgestats.collectors.core.runconfig import RunConfig
from edgestats.collectors.core.spool import SpoolContents


def with_generation(run: dict[str, Any], config: RunConfig, spool: SpoolContents) -> dict[str, Any]:
    """The runs row with the generation columns; the worker's record of the generation moves from
    the adapter's environment to environment.generation."""
    generated = spool.environment.get("generation") or {}
    environment = dict(run.get("environment") or {})
    detail = {k: v for k, v in (environment.get("runtime_detail") or {}).items() if k != "generation"}
    environment.update(runtime_detail=detail, generation=generated or None)
    return {
        **run,
        "kind": "generation",
        "iterations": None,  # generation runs exactly new_tokens tokens; warmup: warm-up generations
        "prompt_tokens": config.prompt_tokens,
        "new_tokens": config.new_tokens,
        "context_depth": config.context_depth,
        "kv_cache_bytes": generated.get("kv_cache_bytes"),
        # a change point in token latencies is not a warm-up: the KV cache grows each step
        "steady_from": None,
        "no_steady_state": None,
        "environment": environment,
    }
