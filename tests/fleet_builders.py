"""A results DB of a small fleet for the fleet tests, written through the real Store: class pi5 of 5
units (pi5-03 10 % slower than the others) and class orin of 3 identical units, one configuration,
a few runs a unit, every run's latencies log-normal about its own median (runs differ as real
processes do), deterministic per seed."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
import pyarrow as pa

from edgestats.analysis import AnalysisOptions, run_analyses
from edgestats.store.results import Store

# class -> (units, runs per unit, median ms, the slow unit or None)
FLEET = {"pi5": (5, 5, 12.0, "pi5-03"), "orin": (3, 4, 3.0, None)}
SLOWER_BY = 1.10


def make_fleet_db(
    path: Path, *, between_run_sd: float = 0.02, within_sd: float = 0.05, latencies: int = 40, seed: int = 0
) -> Path:
    rng = np.random.default_rng(seed)
    t0 = 10**12
    with Store.open(path) as store:
        for device_class, (units, runs, median_ms, slow) in FLEET.items():
            for u in range(1, units + 1):
                name = f"{device_class}-{u:02d}"
                device = store.register_device(
                    {"name": name, "hostname": name, "arch": "aarch64", "cores": 4}
                )
                unit_median = median_ms * (SLOWER_BY if name == slow else 1.0)
                for _ in range(runs):
                    values = unit_median * np.exp(
                        rng.normal(0, between_run_sd) + rng.normal(0, within_sd, latencies)
                    )
                    store.write_run(
                        {
                            "device_id": device,
                            "kind": "inference",
                            "status": "ok",
                            "framework": "onnxruntime",
                            "runtime": "onnxruntime",
                            "model": "cnn9",
                            "batch_size": 1,
                            "threads": 4,
                            "precision": "fp32",
                            "iterations": latencies,
                            "device_class": device_class,
                            "unit_id": f"SN{u:04d}",
                        },
                        latencies=pa.table(
                            {
                                "iteration": pa.array(range(latencies), pa.int32()),
                                "warmup": [False] * latencies,
                                "start_ns": t0 + np.arange(latencies, dtype=np.int64) * 10_000_000,
                                "latency_ns": np.maximum(1, np.round(values * 1e6)).astype(np.int64),
                            }
                        ),
                    )
                    t0 += 10**12
    return path


def fleet_frames(folder: Path) -> dict[str, pl.DataFrame]:
    """fleet's frames on a fleet DB made in `folder`, keyed "fleet.KEY" as the chart goldens' inputs
    are: the report DB's configurations each ran on one device, so it has no class of several units."""
    result = run_analyses(make_fleet_db(folder / "fleet.duckdb"), AnalysisOptions(only="fleet"))["fleet"]
    return {f"fleet.{key}": frame for key, frame in result.frames.items()}
