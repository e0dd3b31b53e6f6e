"""Generation runs with a known truth, written through the real Store (importable from tests).

Each run is what `collect --kind generation` stores (contract: docs/generation.md): the phases
in order (prefill, first_token, decode ...), one latency per generated token (token 0, marked
warm-up, holds the time to first token; tokens 1.. the inter-token latencies), peak RSS as a
telemetry sample, the KV cache's size, and gross energy of prefill and decode on a RAPL source
with an idle baseline, so generation_summary derives every figure from raw rows.

Truth: a configuration's decode step takes `a_ms + b_ms_per_token * context_depth` ms times a
run effect (log-normal, sd `run_sd`) times per-token noise (log-normal, sd `token_sd`).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa

from edgestats.store.results import Store

IDLE_W = 2.0
PHASES = ("process_start", "import", "load_model", "kv_cache", "prefill", "first_token", "decode", "total")


@dataclass(frozen=True)
class GenConfig:
    framework: str = "pytorch"
    runtime: str = "torch-eager"
    prompt_tokens: int = 32
    new_tokens: int = 40
    context_depth: int = 0
    batch_size: int = 1
    a_ms: float = 10.0
    b_ms_per_token: float = 0.01
    prefill_ms_per_token: float = 0.5
    power_w: float = 6.0  # while generating (above IDLE_W: the energy above idle is known)


@dataclass
class GenRun:
    """What one written run holds, for the tests' independent computations."""

    config: GenConfig
    run_id: uuid.UUID
    ttft_ms: float
    prefill_s: float
    itl_ms: np.ndarray
    rss_bytes: float
    kv_cache_bytes: int
    prefill_gross_j: float
    decode_gross_j: float
    extra: dict = field(default_factory=dict)


def _phases(t0: int, prefill_ns: int, ttft_ns: int, decode_ns: int) -> pa.Table:
    """The phases of a generation run from t0 (ns): 5 ms each before prefill, then prefill and
    first_token from the same start, decode after the first token, total around everything."""
    start = {name: t0 + i * 5_000_000 for i, name in enumerate(PHASES[:4])}
    p0 = t0 + 20_000_000
    windows = [(start[n], start[n] + 4_000_000) for n in PHASES[:4]]
    windows += [(p0, p0 + prefill_ns), (p0, p0 + ttft_ns), (p0 + ttft_ns, p0 + ttft_ns + decode_ns)]
    windows.append((t0, p0 + ttft_ns + decode_ns + 1_000_000))
    return pa.table(
        {
            "seq": pa.array(range(len(PHASES)), pa.int32()),
            "phase": list(PHASES),
            "start_ns": [w[0] for w in windows],
            "end_ns": [w[1] for w in windows],
        }
    )


def write_generation_run(
    store: Store,
    device_id: uuid.UUID,
    config: GenConfig,
    rng: np.random.Generator,
    *,
    run_sd: float,
    token_sd: float,
) -> GenRun:
    """One generation run of `config` with random run and token effects (the module docstring)."""
    effect = float(np.exp(rng.normal(0, run_sd)))
    step_ms = (config.a_ms + config.b_ms_per_token * config.context_depth) * effect
    itl_ms = step_ms * np.exp(rng.normal(0, token_sd, config.new_tokens - 1))
    prefill_s = config.prefill_ms_per_token * config.prompt_tokens * effect / 1000
    ttft_ms = prefill_s * 1000 + step_ms
    itl_ns = np.round(itl_ms * 1e6).astype(np.int64)
    itl_ms = itl_ns / 1e6  # what the store keeps
    prefill_ns, ttft_ns = int(round(prefill_s * 1e9)), int(round(ttft_ms * 1e6))
    prefill_s, ttft_ms = prefill_ns / 1e9, ttft_ns / 1e6
    decode_s = float(itl_ns.sum()) / 1e9
    t0 = int(rng.integers(1, 10**6)) * 1_000_000_000
    kv = (
        2
        * 6
        * config.batch_size
        * (config.context_depth + config.prompt_tokens + config.new_tokens)
        * 4
        * 32
        * 4
    )
    run = GenRun(
        config,
        uuid.uuid4(),
        ttft_ms,
        prefill_s,
        itl_ms,
        float(rng.uniform(3e8, 4e8)),
        kv,
        config.power_w * prefill_s * float(rng.uniform(0.95, 1.05)),
        config.power_w * decode_s * float(rng.uniform(0.95, 1.05)),
    )
    _store(store, device_id, run, t0, itl_ns, prefill_ns, ttft_ns)
    return run


def _store(
    store: Store,
    device_id: uuid.UUID,
    run: GenRun,
    t0: int,
    itl_ns: np.ndarray,
    prefill_ns: int,
    ttft_ns: int,
) -> None:
    """Write `run`'s rows: the run, its phases, every token's latency, peak RSS and phase energy."""
    config, kv = run.config, run.kv_cache_bytes
    starts = t0 + 20_000_000 + ttft_ns + np.concatenate([[0], np.cumsum(itl_ns)[:-1]])
    store.write_run(
        {
            "run_id": run.run_id,
            "device_id": device_id,
            "kind": "generation",
            "status": "ok",
            "framework": config.framework,
            "runtime": config.runtime,
            "model": "llama15m",
            "batch_size": config.batch_size,
            "threads": 2,
            "precision": "fp32",
            "warmup": 1,
            "prompt_tokens": config.prompt_tokens,
            "new_tokens": config.new_tokens,
            "context_depth": config.context_depth,
            "kv_cache_bytes": kv,
            "power_source": "rapl",
        },
        phases=_phases(t0, prefill_ns, ttft_ns, int(itl_ns.sum())),
        latencies=pa.table(
            {
                "iteration": pa.array(range(config.new_tokens), pa.int32()),
                "warmup": [True] + [False] * (config.new_tokens - 1),
                "start_ns": np.concatenate([[t0 + 20_000_000], starts]),
                "latency_ns": np.concatenate([[ttft_ns], itl_ns]),
            }
        ),
        samples=pa.table({"t_ns": [t0], "metric": ["rss_bytes"], "value": [run.rss_bytes]}),
        phase_energies=pa.table(
            {
                "seq": pa.array([4, 6], pa.int32()),
                "phase": ["prefill", "decode"],
                "energy_gross_j": [run.prefill_gross_j, run.decode_gross_j],
            }
        ),
    )


def make_generation_db(
    path: Path,
    configs: list[GenConfig],
    *,
    runs_per_config: int = 4,
    seed: int = 0,
    run_sd: float = 0.08,
    token_sd: float = 0.05,
    baseline: bool = True,
) -> list[GenRun]:
    """A DB of `runs_per_config` runs of each configuration on one device ("pi5"), a RAPL idle
    baseline of IDLE_W (unless `baseline` is False); returns what each run holds."""
    rng = np.random.default_rng(seed)
    runs = []
    with Store.open(path) as store:
        device = store.register_device({"name": "pi5", "hostname": "pi5", "arch": "aarch64", "cores": 4})
        for config in configs:
            for _ in range(runs_per_config):
                runs.append(
                    write_generation_run(store, device, config, rng, run_sd=run_sd, token_sd=token_sd)
                )
        if baseline:
            store.write_baseline(
                {
                    "device_id": device,
                    "seconds": 30.0,
                    "source": "rapl",
                    "mean_power_w": IDLE_W,
                    "std_power_w": 0.05,
                    "n": 300,
                }
            )
    return runs


def depth_sweep(
    depths=(0, 256, 512), runtimes=(("pytorch", "torch-eager"), ("llamacpp", "cpu"))
) -> list[GenConfig]:
    """Two runtimes at a few context depths; llama.cpp's steps are faster and grow more slowly."""
    return [
        GenConfig(
            framework=f,
            runtime=r,
            context_depth=d,
            a_ms=10.0 if f == "pytorch" else 6.0,
            b_ms_per_token=0.02 if f == "pytorch" else 0.008,
        )
        for f, r in runtimes
        for d in depths
    ]
