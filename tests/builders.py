"""Builders of small real result DBs, through the real Store API (importable from tests)."""

from __future__ import annotations

import uuid
from pathlib import Path

import numpy as np
import pyarrow as pa

from edgestats.store.results import Store

INFERENCE_PHASES = [
    "import",
    "load_model",
    "load_first_input",
    "first_inference",
    "load_second_input",
    "second_inference",
    "steady",
    "total",
]


def _inference_phases(t0: int) -> pa.Table:
    """The inference phases in order, 10 ms apart from t0, each 9 ms long."""
    starts = t0 + np.arange(len(INFERENCE_PHASES), dtype=np.int64) * 10_000_000
    return pa.table(
        {
            "seq": pa.array(range(len(INFERENCE_PHASES)), pa.int32()),
            "phase": INFERENCE_PHASES,
            "start_ns": starts,
            "end_ns": starts + 9_000_000,
        }
    )


def _inference_samples(rng: np.random.Generator, t0: int, n_samples: int) -> pa.Table:
    """Telemetry samples: RSS and total CPU in pairs, one pair every 100 ms from t0."""
    return pa.table(
        {
            "t_ns": np.repeat(t0 + np.arange(n_samples // 2, dtype=np.int64) * 100_000_000, 2),
            "metric": ["rss_bytes", "cpu_total_pct"] * (n_samples // 2),
            "value": rng.uniform(1e6, 2e8, n_samples),
        }
    )


def write_inference_run(
    store: Store,
    device_id: uuid.UUID,
    *,
    seed: int,
    framework: str = "pytorch",
    model: str = "squeezenet",
    n_latencies: int = 50,
    n_samples: int = 40,
    run_id: uuid.UUID | None = None,
) -> uuid.UUID:
    """One inference run with phases, latencies and telemetry samples, deterministic per seed."""
    rng = np.random.default_rng(seed)
    t0 = 1_000_000_000 * (seed + 1)
    latencies = pa.table(
        {
            "iteration": pa.array(range(n_latencies), pa.int32()),
            "warmup": [i < 5 for i in range(n_latencies)],
            "start_ns": t0 + np.arange(n_latencies, dtype=np.int64) * 2_000_000,
            "latency_ns": rng.integers(1_000_000, 2_000_000, n_latencies),
        }
    )
    samples = _inference_samples(rng, t0, n_samples)  # after the latencies: the same draws per seed
    return store.write_run(
        {
            "run_id": run_id,
            "device_id": device_id,
            "kind": "inference",
            "status": "ok",
            "framework": framework,
            "model": model,
            "batch_size": 1,
            "threads": 2,
            "iterations": n_latencies,
            "config": {"seed": seed},
        },
        phases=_inference_phases(t0),
        latencies=latencies,
        samples=samples,
    )


def write_training_run(store: Store, device_id: uuid.UUID, *, seed: int) -> uuid.UUID:
    rng = np.random.default_rng(seed)
    epochs = pa.table(
        {
            "epoch": pa.array([0, 1], pa.int32()),
            "train_start_ns": [0, 2_000_000_000],
            "train_end_ns": [1_500_000_000, 3_400_000_000],
            "test_start_ns": [1_500_000_000, 3_400_000_000],
            "test_end_ns": [1_600_000_000, 3_500_000_000],
            "train_loss": [1.2, 0.7],
            "test_accuracy_pct": [71.0, 88.5],
        }
    )
    batches = pa.table(
        {
            "epoch": pa.array([0] * 4 + [1] * 4, pa.int32()),
            "batch": pa.array(list(range(4)) * 2, pa.int32()),
            "fetch_ns": rng.integers(1000, 5000, 8),
            "stall_ns": rng.integers(0, 1000, 8),
            "compute_ns": rng.integers(5000, 9000, 8),
        }
    )
    return store.write_run(
        {
            "device_id": device_id,
            "kind": "training",
            "status": "ok",
            "framework": "tensorflow",
            "model": "mnist_cnn",
            "dataset": "MNIST",
            "batch_size": 64,
            "learning_rate": 0.01,
            "optimizer": "sgd",
        },
        epochs=epochs,
        batches=batches,
    )


def make_results_db(path: Path, *, device_name: str = "jetson-nano", n_runs: int = 3, seed0: int = 0) -> Path:
    """A results DB holding one device, n inference runs and one training run."""
    with Store.open(path) as store:
        device_id = store.register_device(
            {"name": device_name, "hostname": device_name, "arch": "aarch64", "cores": 4}
        )
        for i in range(n_runs):
            write_inference_run(store, device_id, seed=seed0 + i, framework=["pytorch", "onnxruntime"][i % 2])
        write_training_run(store, device_id, seed=seed0)
    return path
