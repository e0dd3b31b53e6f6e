"""A generation run in the measured worker (kind "generation"): one prompt per sequence,
`new_tokens` greedy tokens each. Exactly `new_tokens` (no early stop); the framework's engine
(generation/engines.py) is imported only after the import phase (docs/generation.md).

Phases (time.monotonic_ns(), shared with the sampler):
  import, load_model, compile (runtimes that compile on first call, torch.compile: one untimed
  generation of the run's shapes), warmup (the configured warm-up generations, same shapes, not measured per
  token), kv_cache (a fresh KV cache for context + prompt + new tokens), context (context_depth
  seeded tokens put in the cache before the measured prompt; only when context_depth > 0),
  prefill (the prompt's forward pass, its logits ready), first_token (from the prefill's start
  until the first generated token's id is on the host: the time to first token), decode (the
  other new_tokens - 1 tokens, one forward step each), total.
Every generated token's latency goes to the spool as a "lat" record: token 0 (w = true) has the
time to first token; token i >= 1 (w = false) the decode step that produced it, which is the
inter-token latency (time.perf_counter_ns around the step, id on the host).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from edgestats.collectors.core.runconfig import RunConfig
from edgestats.collectors.core.spool import SpoolWriter
from edgestats.collectors.generation.engines import engine_class
from edgestats.collectors.zoo.llama_arch import seeded_tokens


def generation_shape(config: RunConfig) -> tuple[int, int, int]:
    """(context_depth, prompt_tokens, new_tokens) of a generation configuration."""
    return config.context_depth or 0, int(config.prompt_tokens or 0), int(config.new_tokens or 0)


def warm_up(engine: Any, config: RunConfig, context: list, prompt: list) -> None:
    """One whole generation of the run's shapes, untimed: kernels chosen, memory touched."""
    depth, _, new = generation_shape(config)
    engine.start(config.batch_size, depth + len(prompt[0]) + new)
    if context:
        engine.forward(context)
    ids = engine.pick(engine.forward(prompt))
    for _ in range(new - 1):
        ids = engine.pick(engine.forward([[t] for t in ids]))


def first_token(engine: Any, prompt: list, spool: SpoolWriter, clock: Any) -> list[int]:
    """The prefill phase inside the first_token phase; token 0's latency is the time to first token."""
    spool.write("begin", phase="first_token")
    started, t0 = time.monotonic_ns(), time.perf_counter_ns()
    logits = clock.run("prefill", lambda: engine.forward(prompt))
    ids = engine.pick(logits)
    elapsed, ended = time.perf_counter_ns() - t0, time.monotonic_ns()
    spool.write("phase", phase="first_token", seq=clock.seq, start_ns=started, end_ns=ended)
    clock.seq += 1
    spool.write("lat", i=0, w=True, s=started, ns=elapsed)
    return ids


def decode(engine: Any, ids: list[int], new_tokens: int, spool: SpoolWriter) -> list[int]:
    """Tokens 1 .. new_tokens - 1, one timed step each; returns sequence 0's tokens."""
    monotonic, perf, write = time.monotonic_ns, time.perf_counter_ns, spool.write
    generated = [ids[0]]
    for i in range(1, new_tokens):
        started = monotonic()
        t0 = perf()
        ids = engine.pick(engine.forward([[t] for t in ids]))
        elapsed = perf() - t0
        write("lat", i=i, w=False, s=started, ns=elapsed)  # after the timed region
        generated.append(ids[0])
    return generated


def run_generation(config: RunConfig, spool: SpoolWriter, clock: Any, artifact: Path | None) -> None:
    """Walk the generation phases; `clock` is the worker's PhaseClock."""
    total_start = time.monotonic_ns()
    engine = engine_class(config.framework)(config, artifact)
    spool.write("adapter", runtime=engine.runtime)
    spool.write("versions", **clock.run("import", engine.import_framework))
    spool.write("model", **{k: v for k, v in clock.run("load_model", engine.load_model).items() if v})
    depth, prompt_n, new = generation_shape(config)
    context = seeded_tokens(config.seed, config.batch_size, depth, "context") if depth else []
    prompt = seeded_tokens(config.seed, config.batch_size, prompt_n, "prompt")
    if engine.compiles:
        clock.run("compile", lambda: warm_up(engine, config, context, prompt))
    if isinstance(config.warmup, int) and config.warmup > 0:
        clock.run("warmup", lambda: [warm_up(engine, config, context, prompt) for _ in range(config.warmup)])
    clock.run("kv_cache", lambda: engine.start(config.batch_size, depth + prompt_n + new))
    shape = {
        "prompt_tokens": prompt_n,
        "new_tokens": new,
        "context_depth": depth,
        "batch_size": config.batch_size,
        "kv_cache_bytes": engine.kv_cache_bytes(),
        "prompt": prompt[0],
    }
    spool.write("env", generation=shape)  # now: a run that dies in prefill or decode keeps it
    if context:
        clock.run("context", lambda: engine.forward(context))
    ids = first_token(engine, prompt, spool, clock)
    tokens = clock.run("decode", lambda: decode(engine, ids, new, spool))
    spool.write("phase", phase="total", seq=clock.seq, start_ns=total_start, end_ns=time.monotonic_ns())
    # sequence 0's generated ids (greedy), for correctness checks against other runtimes
    spool.write("env", **engine.environment(), generation={**shape, "tokens": tokens})
