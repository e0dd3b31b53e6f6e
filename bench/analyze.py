#!/usr/bin/env python
"""bench/analyze: the full `edgestats analyze` over a synthetic DB, and over one twice as big.

A benchmark, not a timed test. It writes a results DB of --runs runs and --samples telemetry
samples (default 10,000 and 10,000,000) with the Store's Arrow bulk inserts, then times
`run_analyses()` with every analysis plus the JSON the CLI prints (`edgestats analyze DB --json`
in-process, so interpreter start-up is not counted). Then it does the same with twice the runs
and samples over the same configurations, and reports the ratio of the two times.

Target: time(2× data) / time(1× data) ≤ 2.2 (growth no worse than linear). Exit status 0 when
met, 1 when not.

What the DB holds (deterministic for --seed), per 1× size:
- 4 devices, each with a RAPL baseline; 90 % inference runs over 4 frameworks × 5 models ×
  3 batch sizes × 2 thread counts per device (480 configurations), each with pCAMP's phases,
  per-phase gross energy, 100 steady + 5 warm-up latencies (each with its energy) and
  --samples / --runs telemetry samples (rss, uss, cpu_total, cpu_user: one per metric per tick);
- 10 % training runs (2 frameworks × batch size × learning rate × num_workers × storage), each
  with 3 epochs of 20 batches (fetch, stall, compute, E2E) and the same telemetry.

    python bench/analyze.py                          # 10,000 runs, 10,000,000 samples, then 2×
    python bench/analyze.py --runs 1000 --samples 1000000   # quick check
    python bench/analyze.py --keep /tmp/bench.duckdb  # keep the 1× DB for other experiments

Fleet scale (issue 17): the configurations grow with the runs, as a fleet adds devices. With
--grow-configs, each size has --devices × scale devices (120 inference configurations each), so
every doubling doubles the configurations, not the runs per configuration:

    python bench/analyze.py --runs 100000 --samples 100000000 --devices 8 --grow-configs --scales 1,2,4

Each analysis runs in a child process of its own, which reports its peak resident memory
(VmHWM: the Python heap, Arrow buffers and DuckDB's buffer pool together).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import numpy as np
import pyarrow as pa

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import edgestats  # noqa: E402
from edgestats.analysis import AnalysisOptions, dumps, run_analyses  # noqa: E402
from edgestats.store.results import Store  # noqa: E402

DEVICES = ("jetson-nano", "raspberry-pi-4", "xavier-nx", "laptop")


def device_names(n: int) -> tuple[str, ...]:
    """The four named boards, then board-004, board-005, ... for a fleet."""
    return DEVICES[:n] + tuple(f"board-{i:03d}" for i in range(len(DEVICES), n))


FRAMEWORKS = ("pytorch", "tensorflow", "tflite", "onnxruntime")
MODELS = ("alexnet", "squeezenet", "mobilenet_v2", "resnet18", "cnn9")
BATCH_SIZES = (1, 4, 16)
THREADS = (1, 4)
PHASES = (
    "process_start",
    "import",
    "load_model",
    "load_first_input",
    "first_inference",
    "load_second_input",
    "second_inference",
    "warmup",
    "steady",
    "total",
)
METRICS = ("rss_bytes", "uss_bytes", "cpu_total_pct", "cpu_user_pct")
STEADY, WARMUP = 100, 5
EPOCHS, BATCHES = 3, 20


def uuids(rng: np.random.Generator, n: int) -> list[str]:
    return [
        str(uuid.UUID(bytes=b.tobytes(), version=4)) for b in rng.integers(0, 256, (n, 16), dtype=np.uint8)
    ]


def build_db(
    path: Path, n_runs: int, n_samples: int, seed: int, n_devices: int = len(DEVICES), first_device: int = 0
) -> dict:
    """Write the synthetic DB (devices `first_device` .. + n_devices of `device_names`); returns its
    row counts and how long writing took."""
    rng = np.random.default_rng(seed)
    devices = device_names(first_device + n_devices)[first_device:]
    started = time.perf_counter()
    n_inference = int(n_runs * 0.9)
    n_training = n_runs - n_inference
    run_ids = uuids(rng, n_runs)
    kind = np.array(["inference"] * n_inference + ["training"] * n_training)
    idx = np.arange(n_runs)
    device = np.array(devices)[idx % len(devices)]
    combos = [(f, m, b, t) for f in FRAMEWORKS for m in MODELS for b in BATCH_SIZES for t in THREADS]
    combo = [combos[(i // len(devices)) % len(combos)] for i in range(n_runs)]
    training_framework = np.array(["pytorch", "tensorflow"])[idx % 2]
    framework = np.where(kind == "inference", [c[0] for c in combo], training_framework)
    model = np.where(kind == "inference", [c[1] for c in combo], "mobilenet_v3")
    batch = np.where(kind == "inference", [c[2] for c in combo], np.array([16, 32, 64])[(idx // 2) % 3])
    threads = np.where(kind == "inference", [c[3] for c in combo], 4)
    workers = np.where(kind == "training", (idx // 6) % 3, -1)
    storage = np.where(kind == "training", np.array(["HDD", "SD", "SSD"])[(idx // 18) % 3], None)
    learning_rate = np.where(kind == "training", np.array([1e-4, 1e-3, 1e-2])[(idx // 54) % 3], np.nan)
    # a latency per configuration that depends on its axes, so the statistics have structure
    base_ms = (
        (1 + np.array([FRAMEWORKS.index(f) if f in FRAMEWORKS else 0 for f in framework]) * 0.3)
        * (1 + np.array([MODELS.index(m) if m in MODELS else 0 for m in model]))
        * np.sqrt(batch)
        * (1 + (idx % len(devices)) % 8)
    )
    with Store.open(path) as store:
        device_ids = {d: store.register_device({"name": d, "cores": 4}) for d in devices}
        started_at = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
        for device_id in device_ids.values():
            store.write_baseline(
                {
                    "device_id": device_id,
                    "seconds": 60.0,
                    "source": "rapl",
                    "mean_power_w": 3.0,
                    "std_power_w": 0.2,
                    "n": 600,
                    "measured_at": started_at,
                }
            )
        runs = pa.table(
            {
                "run_id": run_ids,
                "device_id": [str(device_ids[d]) for d in device],
                "kind": kind.tolist(),
                "status": ["ok"] * n_runs,
                "framework": framework.tolist(),
                "model": model.tolist(),
                "runtime": [f"{f}-default" for f in framework],
                "batch_size": pa.array(batch.astype(np.int32)),
                "threads": pa.array(threads.astype(np.int32)),
                "iterations": pa.array(np.where(kind == "inference", STEADY, 1000).astype(np.int32)),
                "num_workers": pa.array(np.where(workers >= 0, workers, None).tolist(), pa.int32()),
                "storage": storage.tolist(),
                "dataset": np.where(kind == "training", "imagenet-subset", None).tolist(),
                "learning_rate": pa.array(
                    np.where(np.isnan(learning_rate), None, learning_rate).tolist(), pa.float64()
                ),
                "precision": ["fp32"] * n_runs,
                "power_source": ["rapl"] * n_runs,
                "edgestats_version": [edgestats.__version__] * n_runs,
                "source": ["collect"] * n_runs,
                "started_at": pa.array([started_at] * n_runs, pa.timestamp("us", tz="UTC")),
            }
        )
        with store.transaction():
            store.insert_rows("runs", runs)
            inference = np.flatnonzero(kind == "inference")
            _phases(store, rng, [run_ids[i] for i in inference], base_ms[inference])
            _latencies(store, rng, [run_ids[i] for i in inference], base_ms[inference])
            training = np.flatnonzero(kind == "training")
            _training(store, rng, [run_ids[i] for i in training], workers[training], batch[training])
        # telemetry chunk by chunk, each its own commit: DuckDB keeps a transaction's rows in memory
        # until it commits, and 400 M samples in one transaction exhausted this machine's 24 GiB
        _samples(store, rng, run_ids, n_samples)
        counts = store.counts()
    return {"rows": counts, "write_s": time.perf_counter() - started}


def _repeat_ids(run_ids: list[str], each: int) -> pa.Array:
    return pa.array(np.repeat(np.array(run_ids), each))


def _phases(store: Store, rng, run_ids: list[str], base_ms: np.ndarray) -> None:
    n = len(run_ids)
    seconds = np.column_stack(
        [
            np.full(n, 0.05),
            rng.normal(0.8, 0.05, n),
            rng.normal(4.0, 0.4, n) * (1 + base_ms / 50),
            np.full(n, 0.1),
            base_ms * 3 / 1000,
            np.full(n, 0.07),
            base_ms / 1000,
            base_ms * WARMUP / 1000,
            base_ms * STEADY / 1000,
            np.zeros(n),
        ]
    )
    seconds = np.abs(seconds)
    starts = np.zeros_like(seconds)
    starts[:, 1:-1] = np.cumsum(seconds[:, :-2], axis=1)
    seconds[:, -1] = seconds[:, :-1].sum(axis=1)
    start_ns = (starts * 1e9).astype(np.int64).ravel()
    end_ns = start_ns + (seconds * 1e9).astype(np.int64).ravel()
    ids = _repeat_ids(run_ids, len(PHASES))
    seq = pa.array(np.tile(np.arange(len(PHASES), dtype=np.int32), n))
    store.insert_rows(
        "phases",
        pa.table(
            {
                "run_id": ids,
                "seq": seq,
                "phase": pa.array(np.tile(PHASES, n)),
                "start_ns": start_ns,
                "end_ns": end_ns,
            }
        ),
    )
    watts = np.tile([3.0, 6.0, 5.0, 6.0, 9.0, 6.0, 9.0, 9.0, 9.5, 7.0], n) * rng.normal(
        1, 0.03, n * len(PHASES)
    )
    store.insert_rows(
        "phase_energies",
        pa.table(
            {
                "run_id": ids,
                "seq": seq,
                "phase": pa.array(np.tile(PHASES, n)),
                "energy_gross_j": watts * seconds.ravel(),
            }
        ),
    )


def _latencies(store: Store, rng, run_ids: list[str], base_ms: np.ndarray) -> None:
    per_run = STEADY + WARMUP
    latency_ns = (np.repeat(base_ms, per_run) * rng.lognormal(0, 0.08, len(run_ids) * per_run) * 1e6).astype(
        np.int64
    )
    iteration = np.tile(np.arange(per_run, dtype=np.int32), len(run_ids))
    store.insert_rows(
        "latencies",
        pa.table(
            {
                "run_id": _repeat_ids(run_ids, per_run),
                "iteration": iteration,
                "warmup": iteration < WARMUP,
                "start_ns": np.cumsum(latency_ns),
                "latency_ns": latency_ns,
                "energy_gross_j": latency_ns / 1e9 * 9.0 * rng.normal(1, 0.05, len(latency_ns)),
            }
        ),
    )


def _samples(store: Store, rng, run_ids: list[str], n_samples: int) -> None:
    """n_samples rows over all runs, one per metric per tick, inserted in chunks to bound memory."""
    ticks = max(n_samples // (len(run_ids) * len(METRICS)), 1)
    chunk = max(1, 2_000_000 // (ticks * len(METRICS)))
    metric_index = np.tile(np.arange(len(METRICS), dtype=np.int32), ticks)
    for first in range(0, len(run_ids), chunk):
        ids = run_ids[first : first + chunk]
        rows = len(ids) * ticks * len(METRICS)
        indices = pa.array(np.tile(metric_index, len(ids)))
        values = np.where(
            np.tile(metric_index, len(ids)) < 2, rng.uniform(1e8, 5e8, rows), rng.uniform(0, 100, rows)
        )
        store.insert_rows(
            "samples",
            pa.table(
                {
                    "run_id": _repeat_ids(ids, ticks * len(METRICS)),
                    "t_ns": np.tile(
                        np.repeat(np.arange(ticks, dtype=np.int64) * 100_000_000, len(METRICS)), len(ids)
                    ),
                    "metric": pa.DictionaryArray.from_arrays(indices, pa.array(METRICS)).cast(pa.string()),
                    "value": values,
                }
            ),
        )


def _training(store: Store, rng, run_ids: list[str], workers: np.ndarray, batch: np.ndarray) -> None:
    n = len(run_ids)
    per_run = EPOCHS * BATCHES
    fetch = rng.lognormal(np.log(40e6), 0.3, n * per_run)
    compute = rng.lognormal(np.log(25e6), 0.1, n * per_run) * np.repeat(batch / 32, per_run)
    parallel = np.repeat(np.maximum(workers, 0), per_run)
    stall = np.where(parallel == 0, fetch, np.maximum(fetch / np.maximum(parallel, 1) - compute, 0))
    store.insert_rows(
        "batches",
        pa.table(
            {
                "run_id": _repeat_ids(run_ids, per_run),
                "epoch": pa.array(np.tile(np.repeat(np.arange(EPOCHS, dtype=np.int32), BATCHES), n)),
                "batch": pa.array(np.tile(np.arange(BATCHES, dtype=np.int32), n * EPOCHS)),
                "fetch_ns": fetch.astype(np.int64),
                "stall_ns": stall.astype(np.int64),
                "compute_ns": compute.astype(np.int64),
                "e2e_ns": (stall + compute).astype(np.int64),
            }
        ),
    )
    epoch_s = (stall + compute).reshape(n, EPOCHS, BATCHES).sum(axis=2) / 1e9
    starts = np.concatenate([np.zeros((n, 1)), np.cumsum(epoch_s + 1.0, axis=1)[:, :-1]], axis=1)
    accuracy = np.clip(
        60 + 10 * np.arange(1, EPOCHS + 1) + rng.normal(0, 1, (n, EPOCHS)) - np.log2(batch)[:, None], 0, 100
    )
    store.insert_rows(
        "epochs",
        pa.table(
            {
                "run_id": _repeat_ids(run_ids, EPOCHS),
                "epoch": pa.array(np.tile(np.arange(EPOCHS, dtype=np.int32), n)),
                "train_start_ns": (starts * 1e9).astype(np.int64).ravel(),
                "train_end_ns": ((starts + epoch_s) * 1e9).astype(np.int64).ravel(),
                "test_start_ns": ((starts + epoch_s) * 1e9).astype(np.int64).ravel(),
                "test_end_ns": ((starts + epoch_s + 0.5) * 1e9).astype(np.int64).ravel(),
                "test_accuracy_pct": accuracy.ravel(),
            }
        ),
    )


def time_analyze(path: Path, options: AnalysisOptions) -> tuple[float, dict]:
    """Seconds for every analysis plus the --json text; and how many entries each gave."""
    started = time.perf_counter()
    results = run_analyses(path, options)
    text = dumps(results)
    seconds = time.perf_counter() - started
    return seconds, {
        "json_bytes": len(text),
        **{name: len(r.entries) for name, r in results.items()},
        "available": [name for name, r in results.items() if r.available],
    }


def peak_rss_bytes() -> int | None:
    """This process's peak resident set (VmHWM), or None where /proc has no such line."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def analyze_in_child(path: Path) -> dict:
    """One timed analysis in a fresh interpreter, so its peak memory is the analysis' alone."""
    out = subprocess.run(
        [sys.executable, __file__, "--analyze-only", str(path)], check=True, capture_output=True, text=True
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def load_average() -> list[float] | None:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return None


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=10_000)
    parser.add_argument("--samples", type=int, default=10_000_000)
    parser.add_argument(
        "--devices", type=int, default=len(DEVICES), help="devices at 1× (120 inference configurations each)"
    )
    parser.add_argument(
        "--grow-configs",
        action="store_true",
        help="devices grow with the scale (a fleet), not runs per configuration",
    )
    parser.add_argument("--scales", default="1,2", help="comma-separated sizes, the first is the reference")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--repeats", type=int, default=1, help="timed analyses per size (the minimum counts)")
    parser.add_argument(
        "--target", type=float, default=2.2, help="most time may grow per doubling of the data"
    )
    parser.add_argument(
        "--dir", type=Path, default=None, help="where to write the DB files (default: a temp folder)"
    )
    parser.add_argument("--keep", type=Path, default=None, help="copy the 1× DB here")
    parser.add_argument("--out", type=Path, default=None, help="write the figures as JSON here")
    parser.add_argument("--analyze-only", type=Path, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.analyze_only:
        seconds, counts = time_analyze(args.analyze_only, AnalysisOptions())
        print(json.dumps({"seconds": seconds, "entries": counts, "peak_rss_bytes": peak_rss_bytes()}))
        return 0

    scales = [int(x) for x in args.scales.split(",")]
    print(
        f"edgestats {edgestats.__version__}, Python {platform.python_version()}, {platform.machine()}, "
        f"{os.cpu_count()} CPUs, load {load_average()}",
        flush=True,
    )
    figures = {"runs": args.runs, "samples": args.samples, "grow_configs": args.grow_configs, "sizes": []}
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        for scale in scales:
            path = Path(tmp) / f"bench-{scale}x.duckdb"
            devices = args.devices * scale if args.grow_configs else args.devices
            built = build_db(path, args.runs * scale, args.samples * scale, args.seed, devices)
            times, peaks, counts = [], [], {}
            for _ in range(args.repeats):
                child = analyze_in_child(path)
                times.append(child["seconds"])
                peaks.append(child["peak_rss_bytes"])
                counts = child["entries"]
            size = {
                "scale": scale,
                "devices": devices,
                "rows": built["rows"],
                "write_s": round(built["write_s"], 2),
                "analyze_s": [round(t, 2) for t in times],
                "best_s": round(min(times), 2),
                "entries": counts,
                "peak_rss_bytes": max(p or 0 for p in peaks),
                "db_bytes": path.stat().st_size,
                "load": load_average(),
            }
            figures["sizes"].append(size)
            rows = built["rows"]
            print(
                f"{scale}×: {devices} devices, {rows['runs']:,} runs, {rows['samples']:,} samples, "
                f"{rows['latencies']:,} latencies, {rows['phases']:,} phases, {rows['batches']:,} batches; "
                f"DB {size['db_bytes'] / 2**20:,.0f} MiB written in {built['write_s']:.1f} s",
                flush=True,
            )
            print(
                f"    analyze (every analysis + JSON): {', '.join(f'{t:.2f}' for t in times)} s, "
                f"peak RSS {size['peak_rss_bytes'] / 2**30:.2f} GiB; entries {counts}; load {load_average()}",
                flush=True,
            )
            if scale == scales[0] and args.keep:
                subprocess.run(["cp", str(path), str(args.keep)], check=True)
            path.unlink()
    met = True
    for before, after in zip(figures["sizes"], figures["sizes"][1:]):
        doublings = np.log2(after["scale"] / before["scale"])
        ratio = after["best_s"] / before["best_s"]
        per_doubling = ratio ** (1 / doublings)
        met &= per_doubling <= args.target
        print(
            f"time({after['scale']}×) / time({before['scale']}×) = {ratio:.2f}, "
            f"{per_doubling:.2f} per doubling "
            f"(target ≤ {args.target}): {'met' if per_doubling <= args.target else 'NOT met'}"
        )
    figures["met"] = bool(met)
    if args.out:
        args.out.write_text(json.dumps(figures, indent=2, default=str))
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
