"""Small frames and DBs for the analysis tests: run frames shaped like `load_data()`'s, built by
hand so every expected value can be computed next to them."""

from __future__ import annotations

from pathlib import Path

import polars as pl

from edgestats.analysis.load.frames import _derive
from edgestats.imports.importer import import_results

SAMPLE_DATA = Path(__file__).parents[1] / "sample_data"

RUN_DEFAULTS = {
    "run_id": None,
    "device": "dev",
    "kind": "inference",
    "status": "ok",
    "framework": "pytorch",
    "runtime": None,
    "model": "squeezenet",
    "dataset": None,
    "batch_size": 1,
    "threads": 2,
    "precision": None,
    "iterations": None,
    "epochs": None,
    "learning_rate": None,
    "optimizer": None,
    "num_workers": None,
    "storage": None,
    "n_latencies": 0,
    "latency_median_ms": None,
    "latency_p90_ms": None,
    "latency_p99_ms": None,
    "latency_mean_ms": None,
    "rss_peak_bytes": None,
    "rss_mean_bytes": None,
    "energy_j": None,
    "energy_per_inference_j": None,
    "energy_per_inference_ci_low_j": None,
    "energy_per_inference_ci_high_j": None,
    "energy_unavailable_reason": None,
    "cpu_total_mean_pct": None,
    "cpu_user_mean_pct": None,
    "cpu_system_mean_pct": None,
    "cpu_iowait_mean_pct": None,
    "n_epochs": None,
    "training_time_s": None,
    "testing_time_s": None,
    "accuracy_pct": None,
    "load_time_s": None,
    "total_time_s": None,
    "fetch_stall_s": None,
    "compute_s": None,
    "e2e_s": None,
}
FLOAT_COLUMNS = {
    "latency_median_ms",
    "latency_p90_ms",
    "latency_p99_ms",
    "latency_mean_ms",
    "rss_peak_bytes",
    "rss_mean_bytes",
    "energy_j",
    "energy_per_inference_j",
    "energy_per_inference_ci_low_j",
    "energy_per_inference_ci_high_j",
    "cpu_total_mean_pct",
    "cpu_user_mean_pct",
    "cpu_system_mean_pct",
    "cpu_iowait_mean_pct",
    "training_time_s",
    "testing_time_s",
    "accuracy_pct",
    "load_time_s",
    "total_time_s",
    "fetch_stall_s",
    "compute_s",
    "e2e_s",
    "learning_rate",
}
INT_COLUMNS = {"batch_size", "threads", "iterations", "epochs", "num_workers", "n_latencies", "n_epochs"}


def runs_frame(rows: list[dict]) -> pl.DataFrame:
    """Runs as load_data() returns them: every column present, run_idx 0..n-1, derived columns."""
    full = [
        {**RUN_DEFAULTS, **row, "run_idx": i, "run_id": row.get("run_id") or f"run-{i}"}
        for i, row in enumerate(rows)
    ]
    schema = {
        c: (pl.Float64 if c in FLOAT_COLUMNS else pl.Int64 if c in INT_COLUMNS else pl.String)
        for c in RUN_DEFAULTS
    }
    schema["run_idx"] = pl.Int32
    return _derive(pl.DataFrame(full, schema=schema))


def latencies_frame(per_run: dict[int, list[float]]) -> pl.DataFrame:
    return pl.DataFrame(
        {
            "run_idx": [i for i, values in per_run.items() for _ in values],
            "latency_ms": [v for values in per_run.values() for v in values],
        },
        schema={"run_idx": pl.Int32, "latency_ms": pl.Float64},
    )


def import_sample(db: Path, name: str, kind: str) -> Path:
    """Import one of sample_data's published tables with the real importer."""
    import_results(db, SAMPLE_DATA / name, kind=kind)
    return db
