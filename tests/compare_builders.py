"""Results DBs for `edgestats compare`'s tests (tests/cli/test_compare*.py): real DBs written
through the Store, one device, each configuration's runs with a chosen median, run-to-run spread
and, where asked, the noise sentinel's flag and reasons as collect stores them."""

from __future__ import annotations

import uuid
from pathlib import Path

import numpy as np
import pyarrow as pa

from edgestats.store.results import Store


def write_runs(
    store: Store,
    device_id: uuid.UUID,
    *,
    framework: str,
    model: str,
    median_ms: float,
    run_spread: float,
    n_runs: int,
    seed: int,
    noise_reason: str | None = None,
) -> None:
    """n_runs runs of one configuration whose medians differ from run to run by `run_spread`
    (log-normal), each of 40 latencies with 2 % in-run jitter. With `noise_reason`, every run is
    flagged noisy with it (runs.noisy, runs.noise_reason); without, every run was judged quiet."""
    rng = np.random.default_rng(seed)
    for _ in range(n_runs):
        run_median_ns = median_ms * 1e6 * np.exp(rng.normal(0.0, run_spread))
        latency_ns = (run_median_ns * np.exp(rng.normal(0.0, 0.02, 40))).astype(np.int64)
        latencies = pa.table(
            {
                "iteration": pa.array(range(40), pa.int32()),
                "warmup": [False] * 40,
                "start_ns": np.arange(40, dtype=np.int64) * 10_000_000,
                "latency_ns": latency_ns,
            }
        )
        store.write_run(
            {
                "device_id": device_id,
                "kind": "inference",
                "status": "ok",
                "framework": framework,
                "model": model,
                "batch_size": 1,
                "threads": 2,
                "iterations": 40,
                "noisy": noise_reason is not None,
                "noise_reason": noise_reason,
            },
            latencies=latencies,
        )


def make_db(
    path: Path,
    medians_ms: dict[tuple[str, str], float],
    *,
    n_runs: int = 5,
    seed: int = 0,
    spreads: dict[str, float] | None = None,
    noise: dict[str, str] | None = None,
) -> Path:
    """A DB of each (framework, model)'s runs; run-to-run spread 1 % unless `spreads` names the
    model's; the runs of a model that `noise` names are flagged noisy with its reasons."""
    with Store.open(path) as store:
        device_id = store.register_device({"name": "pi5", "hostname": "pi5", "arch": "aarch64", "cores": 4})
        for i, ((framework, model), median) in enumerate(medians_ms.items()):
            write_runs(
                store,
                device_id,
                framework=framework,
                model=model,
                median_ms=median,
                run_spread=(spreads or {}).get(model, 0.01),
                n_runs=n_runs,
                seed=seed + i,
                noise_reason=(noise or {}).get(model),
            )
    return path
