"""A results DB for the answers tests, written through the real Store: devices × models ×
frameworks, a few runs each, every run's latencies log-normal around a configuration's median
times a run effect (so runs differ as real processes do), deterministic per seed."""

from __future__ import annotations

import math
from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa
import pytest
from scipy import stats
from statsmodels.stats.multitest import multipletests

from edgestats.store.results import Store

# (device, model, framework) -> median latency in ms: on pi5 onnxruntime is clearly faster;
# on vm the two frameworks tie on cnn9; vm is faster than pi5 throughout.
MEDIANS_MS = {
    ("pi5", "cnn9", "onnxruntime"): 0.30,
    ("pi5", "cnn9", "tflite"): 0.54,
    ("pi5", "squeezenet", "onnxruntime"): 4.0,
    ("pi5", "squeezenet", "tflite"): 6.0,
    ("vm", "cnn9", "onnxruntime"): 0.120,
    ("vm", "cnn9", "tflite"): 0.120,
    ("vm", "squeezenet", "onnxruntime"): 1.5,
    ("vm", "squeezenet", "tflite"): 2.4,
}


def write_run(
    store: Store, device_id, *, framework: str, model: str, latencies_ms: np.ndarray, t0: int
) -> None:
    n = len(latencies_ms)
    store.write_run(
        {
            "device_id": device_id,
            "kind": "inference",
            "status": "ok",
            "framework": framework,
            "runtime": framework,
            "model": model,
            "batch_size": 1,
            "threads": 4,
            "precision": "fp32",
            "iterations": n,
        },
        latencies=pa.table(
            {
                "iteration": pa.array(range(n), pa.int32()),
                "warmup": [False] * n,
                "start_ns": t0 + np.arange(n, dtype=np.int64) * 10_000_000,
                "latency_ns": np.maximum(1, np.round(latencies_ms * 1e6)).astype(np.int64),
            }
        ),
    )


def make_answers_db(
    path: Path,
    *,
    runs: int = 4,
    between_sd: float = 0.02,
    within_sd: float = 0.05,
    latencies: int = 40,
    seed: int = 0,
    medians_ms: dict | None = None,
) -> Path:
    """The configurations of `medians_ms` (default MEDIANS_MS), `runs` runs each."""
    rng = np.random.default_rng(seed)
    with Store.open(path) as store:
        devices = {}
        for k, ((device, model, framework), median) in enumerate((medians_ms or MEDIANS_MS).items()):
            if device not in devices:
                devices[device] = store.register_device(
                    {"name": device, "hostname": device, "arch": "aarch64", "cores": 4}
                )
            for r in range(runs):
                run_median = median * np.exp(rng.normal(0.0, between_sd))
                values = run_median * np.exp(rng.normal(0.0, within_sd, latencies))
                write_run(
                    store,
                    devices[device],
                    framework=framework,
                    model=model,
                    latencies_ms=values,
                    t0=(k * runs + r + 1) * 10**12,
                )
    return path


# -- the independent computation the tests hold answers to ---------------------------------------


def db_run_medians(db: Path) -> dict[tuple[str, str, str], np.ndarray]:
    """(device, model, framework) -> each run's median steady latency in ms, straight from the DB."""
    con = duckdb.connect(str(db), read_only=True)
    try:
        rows = con.execute(
            "SELECT d.name, r.model, r.framework, r.run_id, l.latency_ns / 1e6 FROM latencies l "
            "JOIN runs r USING (run_id) JOIN devices d USING (device_id) WHERE NOT l.warmup"
        ).fetchall()
    finally:
        con.close()
    per_run: dict[tuple, dict[str, list[float]]] = {}
    for device, model, framework, run_id, latency in rows:
        per_run.setdefault((device, model, framework), {}).setdefault(str(run_id), []).append(latency)
    return {key: np.array([np.median(v) for v in runs.values()]) for key, runs in per_run.items()}


def welch_by_hand(fastest: np.ndarray, other: np.ndarray, level: float) -> tuple[float, float, float, float]:
    """Welch's t on the logs, written out: the ratio of geometric means, its interval, its p."""
    x, y = np.log(fastest), np.log(other)
    va, vb = x.var(ddof=1) / len(x), y.var(ddof=1) / len(y)
    df = (va + vb) ** 2 / (va**2 / (len(x) - 1) + vb**2 / (len(y) - 1))
    d, se = y.mean() - x.mean(), math.sqrt(va + vb)
    half = stats.t.ppf(0.5 + level / 2, df) * se
    p = stats.ttest_ind(y, x, equal_var=False).pvalue
    return math.exp(d), math.exp(d - half), math.exp(d + half), float(p)


def _sides(entry: dict, medians: dict) -> dict[str, np.ndarray]:
    """Each candidate's run medians (a device's, across devices)."""
    group = entry["group"]
    if entry.get("kind") == "across_devices":
        return {
            c["candidate"]: medians[(c["candidate"], group["model"], group["candidate"])]
            for c in entry["candidates"]
        }
    return {
        c["candidate"]: medians[(group["device"], group["model"], c["candidate"])]
        for c in entry["candidates"]
    }


def check_against_runs(document: list[dict], medians: dict, *, runs: int, level: float = 0.95) -> int:
    """Asserts every entry of answers' JSON against the run medians: the fastest, each candidate's
    geometric mean, each ratio's estimate, interval, p and Holm's p (statsmodels, over every pair of
    the group's candidates); returns the number of ratios checked."""
    checked = 0
    for entry in document:
        side = _sides(entry, medians)
        geometric = {name: math.exp(np.log(v).mean()) for name, v in side.items()}
        assert entry["fastest"] == min(geometric, key=geometric.get)
        for candidate in entry["candidates"]:
            assert candidate["estimate"] == pytest.approx(geometric[candidate["candidate"]], rel=1e-9)
            assert candidate["n_runs"] == len(side[candidate["candidate"]]) == runs
        expected = [
            welch_by_hand(side[entry["fastest"]], side[r["candidate"]], level) for r in entry["ratios"]
        ]
        # Holm over every pair of the group's candidates (the fastest is chosen from these runs)
        names = list(side)
        pairs = [(x, y) for i, x in enumerate(names) for y in names[i + 1 :]]
        p_pairs = [welch_by_hand(side[x], side[y], level)[3] for x, y in pairs]
        adjusted = dict(zip(map(frozenset, pairs), multipletests(p_pairs, method="holm")[1])) if pairs else {}
        holm = [adjusted[frozenset((entry["fastest"], r["candidate"]))] for r in entry["ratios"]]
        for ratio, (estimate, low, high, p), p_holm in zip(entry["ratios"], expected, holm):
            assert (ratio["estimate"], ratio["ci_low"], ratio["ci_high"]) == pytest.approx(
                (estimate, low, high), rel=1e-9
            )
            assert ratio["p_value"] == pytest.approx(p, rel=1e-9)
            assert ratio["p_holm"] == pytest.approx(p_holm, rel=1e-9)
            assert ratio["estimate"] >= 1 and ratio["vs"] == entry["fastest"]
            assert ratio["n_runs"] == {"candidate": runs, "fastest": runs}
            checked += 1
    return checked
