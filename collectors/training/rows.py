"""A training run's rows, from its spool: the runs columns only training has, the epochs and
batches tables, and the per-run totals in run_results. Used by the orchestrator at ingest."""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from edgestats.collectors.core.runconfig import RunConfig
from edgestats.collectors.core.spool import SpoolContents

EPOCH_COLUMNS = {
    "epoch": pa.int32(),
    "train_start_ns": pa.int64(),
    "train_end_ns": pa.int64(),
    "test_start_ns": pa.int64(),
    "test_end_ns": pa.int64(),
    "train_loss": pa.float64(),
    "test_loss": pa.float64(),
    "train_accuracy_pct": pa.float64(),
    "test_accuracy_pct": pa.float64(),
    "n_batches": pa.int32(),
    "cache_resident_pct": pa.float64(),
    "cache_evicted": pa.bool_(),
}
# spool key -> batches column
BATCH_KEYS = {
    "e": ("epoch", pa.int32()),
    "b": ("batch", pa.int32()),
    "s": ("start_ns", pa.int64()),
    "f": ("fetch_ns", pa.int64()),
    "st": ("stall_ns", pa.int64()),
    "c": ("compute_ns", pa.int64()),
    "e2e": ("e2e_ns", pa.int64()),
    "n": ("n_samples", pa.int32()),
    "l": ("loss", pa.float64()),
}


def training_outcome(spool: SpoolContents) -> tuple[int, float | None]:
    """(batches stored, last test accuracy) for the progress line of a finished run."""
    tested = [
        e["test_accuracy_pct"]
        for e in sorted(spool.epochs, key=lambda r: r["epoch"])
        if e.get("test_accuracy_pct") is not None
    ]
    return len(spool.batches), (tested[-1] if tested else None)


def diverged_text(diverged: dict[str, Any]) -> str:
    return (
        f"diverged: the training loss became {diverged.get('loss')} at epoch {diverged.get('epoch')}, "
        f"batch {diverged.get('batch')}; training stopped there (try a smaller learning rate)"
    )


def dataset_columns(described: dict[str, Any]) -> dict[str, Any]:
    """The dataset's name, path and size columns (0006) from the worker's Dataset.describe():
    the path has its own column so that runs of one dataset read from two places group together."""
    image_hw = described.get("image_hw") or (None, None)
    return {
        "dataset": described.get("name"),
        "dataset_path": described.get("root"),
        "dataset_samples": described.get("n_train"),
        "dataset_test_samples": described.get("n_test"),
        "dataset_bytes": described.get("bytes"),
        "dataset_image_h": image_hw[0],
        "dataset_image_w": image_hw[1],
        "dataset_image_c": described.get("channels"),
    }


def training_columns(config: RunConfig, spool: SpoolContents) -> dict[str, Any]:
    """The runs columns of a training run (on top of run_row's)."""
    storage = spool.dataset.get("storage") or {}
    return {
        "kind": "training",
        **dataset_columns(spool.dataset),
        "storage": storage.get("storage"),
        "epochs": config.epochs,
        "iterations": config.iterations or None,
        "warmup": None,
        "learning_rate": config.learning_rate,
        "optimizer": config.optimizer,
        "num_workers": config.num_workers,
        "hyperparameters": spool.hyper or None,
    }


def epoch_rows(spool: SpoolContents) -> pa.Table:
    rows = sorted(spool.epochs, key=lambda r: r["epoch"])
    return pa.table(
        {name: pa.array([r.get(name) for r in rows], kind) for name, kind in EPOCH_COLUMNS.items()}
    )


def batch_rows(spool: SpoolContents) -> pa.Table:
    return pa.table(
        {
            column: pa.array([r.get(key) for r in spool.batches], kind)
            for key, (column, kind) in BATCH_KEYS.items()
        }
    )


def training_results(spool: SpoolContents) -> dict[str, Any] | None:
    """Per-run totals (run_results): the raw rows stay the source of truth; these are their sums,
    so an analysis that reads one row per run (and imported runs) finds the same columns."""
    if not spool.epochs and not spool.batches:
        return None
    epochs = sorted(spool.epochs, key=lambda r: r["epoch"])
    tested = [e for e in epochs if e.get("test_accuracy_pct") is not None]

    def window_s(start: str, end: str) -> float | None:
        spans = [e[end] - e[start] for e in epochs if e.get(start) is not None and e.get(end) is not None]
        return sum(spans) / 1e9 if spans else None

    def batch_sum_s(key: str) -> float | None:
        values = [b[key] for b in spool.batches if b.get(key) is not None]
        return sum(values) / 1e9 if values else None

    return {
        "training_time_s": window_s("train_start_ns", "train_end_ns"),
        "testing_time_s": window_s("test_start_ns", "test_end_ns"),
        "accuracy_pct": tested[-1]["test_accuracy_pct"] if tested and not spool.diverged else None,
        "fetch_stall_s": batch_sum_s("st"),
        "compute_s": batch_sum_s("c"),
        "e2e_s": batch_sum_s("e2e"),
    }


def with_training(
    run: dict[str, Any], config: RunConfig, spool: SpoolContents
) -> tuple[dict[str, Any], dict[str, Any]]:
    """(the runs row with the training columns and the dataset in its environment, the child
    rows and run_results for Store.write_run)."""
    run = {**run, **training_columns(config, spool)}
    run["environment"] = {**(run.get("environment") or {}), "dataset": spool.dataset or None}
    return run, {
        "epochs": epoch_rows(spool),
        "batches": batch_rows(spool),
        "results": training_results(spool),
    }
