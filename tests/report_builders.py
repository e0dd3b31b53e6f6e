"""Results DBs for the report tests and bench/report.py: many runs, written in bulk through the
Store (one Arrow insert per table), with the data every chart needs: several devices and
frameworks, phases, latencies, memory, energy and a power trace with a baseline, training runs
over batch size x iterations, and fetch stalls over workers x storage."""

from __future__ import annotations

import datetime as dt
import uuid
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from edgestats.store.results import Store

EVIL_DEVICE = "<script>alert(1)</script>"
PHASES = ("import", "load_model", "load_first_input", "first_inference", "steady", "total")
FRAMEWORKS = ("pytorch", "onnxruntime", "tflite")
MODELS = ("squeezenet", "cnn9")


def _uuids(n: int, rng: np.random.Generator) -> list[str]:
    return [str(uuid.UUID(bytes=rng.bytes(16), version=4)) for _ in range(n)]


def _inference_runs(
    run_ids: list[str],
    device_ids: list[str],
    framework: list[str],
    model: list[str],
    latencies_per_run: int,
    t0: dt.datetime,
) -> pa.Table:
    """The runs table: devices in turn, one run a minute from t0."""
    n = len(run_ids)
    return pa.table(
        {
            "run_id": run_ids,
            "device_id": [device_ids[i % len(device_ids)] for i in range(n)],
            "kind": ["inference"] * n,
            "status": ["ok"] * n,
            "framework": framework,
            "runtime": framework,
            "model": model,
            "batch_size": pa.array([1] * n, pa.int32()),
            "threads": pa.array([2] * n, pa.int32()),
            "iterations": pa.array([latencies_per_run] * n, pa.int32()),
            "started_at": [t0 + dt.timedelta(minutes=i) for i in range(n)],
            "edgestats_version": ["test"] * n,
            "source": ["collect"] * n,
        }
    )


def _phase_durations_s(speed: np.ndarray, rng: np.random.Generator, latencies_per_run: int) -> np.ndarray:
    """One row per run, one column per phase before total, scaled by the run's speed."""
    n = len(speed)
    return np.column_stack(
        [
            rng.uniform(0.5, 2.0, n),
            speed * rng.uniform(0.01, 0.03, n),
            rng.uniform(0.001, 0.01, n),
            speed / 100 * rng.uniform(1, 3, n),
            speed * latencies_per_run / 1000,
        ]
    )


def _inference_phases(run_ids: list[str], durations_s: np.ndarray) -> pa.Table:
    """The phases back to back from 0, then total spanning them all."""
    n = len(run_ids)
    starts = np.cumsum(np.column_stack([np.zeros(n), durations_s[:, :-1]]), axis=1)
    phase_rows = {"run_id": [], "seq": [], "phase": [], "start_ns": [], "end_ns": []}
    for j, phase in enumerate(PHASES[:-1]):
        phase_rows["run_id"] += run_ids
        phase_rows["seq"] += [j] * n
        phase_rows["phase"] += [phase] * n
        phase_rows["start_ns"] += list((starts[:, j] * 1e9).astype(np.int64))
        phase_rows["end_ns"] += list(((starts[:, j] + durations_s[:, j]) * 1e9).astype(np.int64))
    phase_rows["run_id"] += run_ids
    phase_rows["seq"] += [len(PHASES) - 1] * n
    phase_rows["phase"] += ["total"] * n
    phase_rows["start_ns"] += [0] * n
    phase_rows["end_ns"] += list((durations_s.sum(axis=1) * 1e9).astype(np.int64))
    return pa.table({**phase_rows, "seq": pa.array(phase_rows["seq"], pa.int32())})


def _inference_tables(
    run_ids: list[str],
    device_ids: list[str],
    rng: np.random.Generator,
    latencies_per_run: int,
    t0: dt.datetime,
) -> dict[str, pa.Table]:
    n = len(run_ids)
    framework = [FRAMEWORKS[i % len(FRAMEWORKS)] for i in range(n)]
    model = [MODELS[(i // len(FRAMEWORKS)) % len(MODELS)] for i in range(n)]
    speed = np.array(
        [
            {"pytorch": 1.0, "onnxruntime": 0.7, "tflite": 0.85}[f] * {"squeezenet": 8.0, "cnn9": 1.5}[m]
            for f, m in zip(framework, model)
        ]
    )
    runs = _inference_runs(run_ids, device_ids, framework, model, latencies_per_run, t0)
    # The draws keep their order (latencies, phase durations, memory, energy): the same data per seed.
    latency_ms = rng.lognormal(np.log(np.repeat(speed, latencies_per_run)), 0.1)
    latencies = pa.table(
        {
            "run_id": np.repeat(run_ids, latencies_per_run),
            "iteration": pa.array(np.tile(np.arange(latencies_per_run), n), pa.int32()),
            "warmup": np.zeros(n * latencies_per_run, dtype=bool),
            "latency_ns": (latency_ms * 1e6).astype(np.int64),
        }
    )
    phases = _inference_phases(run_ids, _phase_durations_s(speed, rng, latencies_per_run))
    samples = pa.table(
        {
            "run_id": run_ids,
            "t_ns": np.zeros(n, dtype=np.int64),
            "metric": ["rss_bytes"] * n,
            "value": speed * 2e7 * rng.uniform(0.9, 1.1, n),
        }
    )
    energy = speed * 0.004 * rng.uniform(0.9, 1.1, n)
    results = pa.table({"run_id": run_ids, "energy_j": energy * latencies_per_run})
    return {
        "runs": runs,
        "latencies": latencies,
        "phases": phases,
        "samples": samples,
        "run_results": results,
    }


def _power_trace(run_id: str, phases: pa.Table, rng: np.random.Generator, hz: float = 50.0) -> pa.Table:
    """RAPL-like counters for one run: 3 W idle + load during each phase, two rails."""
    mine = phases.filter(pa.compute.equal(phases["run_id"], run_id))
    end_s = max(mine["end_ns"].to_pylist()) / 1e9
    t_s = np.arange(0, end_s + 0.5, 1 / hz)
    watts = 3.0 + 9.0 * (t_s > 0.3) + rng.normal(0, 0.3, len(t_s))
    joules = np.cumsum(watts / hz)
    return pa.table(
        {
            "run_id": [run_id] * (2 * len(t_s)),
            "t_ns": np.tile((t_s * 1e9).astype(np.int64), 2),
            "metric": ["energy_j:package-0"] * len(t_s) + ["energy_j:dram"] * len(t_s),
            "value": np.concatenate([joules * 0.8, joules * 0.2]),
        }
    )


def _training_tables(device_id: str, rng: np.random.Generator, t0: dt.datetime) -> dict[str, pa.Table]:
    """DLaaS-style runs over batch size x iterations (with repeats) and Jetson-style fetch
    stalls over num_workers x storage."""
    rows = [(b, it, k) for b in (50, 500) for it in (1000, 4000, 16000) for k in range(3)]
    n = len(rows)
    run_ids = _uuids(n, rng)
    runs = pa.table(
        {
            "run_id": run_ids,
            "device_id": [device_id] * n,
            "kind": ["training"] * n,
            "status": ["ok"] * n,
            "framework": ["tensorflow"] * n,
            "model": ["mnist_cnn"] * n,
            "dataset": ["MNIST"] * n,
            "batch_size": pa.array([r[0] for r in rows], pa.int32()),
            "iterations": pa.array([r[1] for r in rows], pa.int32()),
            "num_workers": pa.array([[0, 1, 2][r[2]] for r in rows], pa.int32()),
            "storage": [["sd", "ssd"][i % 2] for i in range(n)],
            "started_at": [t0 + dt.timedelta(hours=1, minutes=i) for i in range(n)],
            "edgestats_version": ["test"] * n,
            "source": ["collect"] * n,
        }
    )
    time_s = np.array([r[0] * r[1] * 0.0011 for r in rows]) * rng.uniform(0.95, 1.05, n)
    accuracy = np.array([99.4 - 30 / np.sqrt(r[1]) * (1 + r[0] / 500) for r in rows]) + rng.normal(0, 0.05, n)
    stall = (
        np.array([[4.0, 1.0, 0.4][r[2]] for r in rows])
        * np.array([[2.0, 1.0][i % 2] for i in range(n)])
        * rng.uniform(0.9, 1.1, n)
    )
    results = pa.table(
        {
            "run_id": run_ids,
            "training_time_s": time_s,
            "accuracy_pct": accuracy,
            "fetch_stall_s": stall,
            "e2e_s": time_s + stall,
            "cpu_total_pct": np.array([r[0] / 10 for r in rows]) + rng.uniform(0, 5, n),
            "mem_max_mb": np.array([200 + r[0] for r in rows], dtype=float),
        }
    )
    return {"runs": runs, "run_results": results}


def make_report_db(
    path: Path,
    *,
    n_inference_runs: int = 24,
    latencies_per_run: int = 30,
    seed: int = 0,
    device_names: tuple[str, ...] = ("jetson-nano", EVIL_DEVICE),
    with_power: bool = True,
) -> Path:
    rng = np.random.default_rng(seed)
    t0 = dt.datetime(2026, 11, 1, 9, 0, tzinfo=dt.UTC)
    with Store.open(path) as store:
        device_ids = [
            str(store.register_device({"name": name, "hostname": f"host-{i}", "arch": "aarch64", "cores": 4}))
            for i, name in enumerate(device_names)
        ]
        run_ids = _uuids(n_inference_runs, rng)
        tables = _inference_tables(run_ids, device_ids, rng, latencies_per_run, t0)
        training = _training_tables(device_ids[0], rng, t0)
        with store.transaction():
            for table in ("runs", "run_results", "phases", "latencies", "samples"):
                store.insert_rows(table, tables[table])
            store.insert_rows("runs", training["runs"])
            store.insert_rows("run_results", training["run_results"])
            if with_power:
                store.insert_rows("samples", _power_trace(run_ids[0], tables["phases"], rng))
                store.con.execute("UPDATE runs SET power_source = 'rapl' WHERE run_id = ?", [run_ids[0]])
        if with_power:
            store.write_baseline(
                {
                    "device_id": device_ids[0],
                    "seconds": 30.0,
                    "source": "rapl",
                    "mean_power_w": 3.0,
                    "std_power_w": 0.3,
                    "n": 300,
                    "measured_at": t0,
                }
            )
    return path


def write_db_report(db: Path, out_dir: Path, results: dict[str, Any], **options: Any):
    """write_report of `db`'s results, its overview and power trace loaded first, as the CLI does."""
    from edgestats.analysis.load.overview import load_overview
    from edgestats.analysis.load.power_trace import load_power_trace
    from edgestats.reports import write_report

    return write_report(out_dir, results, load_overview(db), load_power_trace(db), **options)
