"""The median's interval after `collect --until-precise` (edgestats/analysis/summary/until_precise.py):
Stein's interval against a hand computation, read from the stop records runs carry in a real DB
(the records written by the rule the collector runs), the usual interval where the runs do not
fit, and the coverage of the summary-side function by simulation beside the usual interval's.

The simulation runs the collector's rule (`stein_decisions`, vectorised over configurations, as
tests/analysis/test_stopping.py does) to find where each configuration stops and the record it
stores, then gives each configuration's runs and records to `median_after_stopping`, the function
summary calls."""

from __future__ import annotations

import json
import math
import statistics
from pathlib import Path

import numpy as np
import polars as pl
import pyarrow as pa
import pytest
from scipy import stats

from edgestats.analysis import AnalysisOptions, run_analyses
from edgestats.analysis.estimators.bounded import geometric_mean_t
from edgestats.analysis.estimators.stopping import stein_decisions, stein_rule
from edgestats.analysis.summary.until_precise import RECORD_COLUMN, median_after_stopping, stein_median
from edgestats.store.results import Store

LEVEL = 0.95
PILOT_RUNS = 5
TRUE_MEDIAN_MS = 20.0


def test_stein_median_by_hand():
    medians = [20.1, 19.4, 20.9, 20.3, 19.8, 20.6, 21.0]
    estimate = stein_median(medians, PILOT_RUNS, LEVEL)
    logs = np.log(medians)
    s0 = statistics.stdev(logs[:PILOT_RUNS])
    half = stats.t.ppf(0.975, PILOT_RUNS - 1) * s0 / math.sqrt(len(medians))
    centre = float(np.mean(logs))
    assert (estimate.estimate, estimate.ci_low, estimate.ci_high) == pytest.approx(
        (math.exp(centre), math.exp(centre - half), math.exp(centre + half)), rel=1e-12
    )
    assert estimate.n == 7 and estimate.n_unit == "runs" and "4 degrees of freedom" in estimate.method
    flat = stein_median([20.0] * 5 + [21.0], PILOT_RUNS, LEVEL)
    assert flat.ci_low is None and "all equal" in flat.note


def records_of(medians: np.ndarray, pilot_log_sd: float, decision: str) -> list[str]:
    """The stop records one configuration's runs carry, in repeat order, as load_data reads them:
    `continue` until the last, whose record has the rule's decision and the pilot's spread."""
    records = [{"decision": "continue", "pilot_runs": PILOT_RUNS, "pilot_log_sd": None} for _ in medians[:-1]]
    records.append({"decision": decision, "pilot_runs": PILOT_RUNS, "pilot_log_sd": pilot_log_sd})
    return [json.dumps(r) for r in records]


def simulate(target: float, between_run_sd: float, max_repeat: int, configs: int, seed: int):
    """Coverage of the true median by the summary-side interval and by the usual one, after the
    collector's Stein rule stopped each configuration."""
    rng = np.random.default_rng(seed)
    medians = TRUE_MEDIAN_MS * np.exp(rng.normal(0.0, between_run_sd, (configs, max_repeat)))
    stop_n, stop_sd, stop_decision = np.zeros(configs, int), np.zeros(configs), np.empty(configs, object)
    for n in range(1, max_repeat + 1):
        found = stein_decisions(
            medians[:, :n], target, level=LEVEL, pilot_runs=PILOT_RUNS, max_repeat=max_repeat
        )
        stops = (stop_n == 0) & (found.decision != "continue")
        stop_n[stops], stop_sd[stops], stop_decision[stops] = (
            n,
            found.pilot_log_sd[stops],
            found.decision[stops],
        )
    new, usual = [], []
    for i in range(configs):
        runs_medians = medians[i, : stop_n[i]]
        runs = pl.DataFrame(
            {
                "repeat_index": list(range(stop_n[i])),
                RECORD_COLUMN: records_of(runs_medians, stop_sd[i], stop_decision[i]),
            }
        )
        plain = geometric_mean_t(runs_medians, LEVEL)
        usual.append(plain.ci_low <= TRUE_MEDIAN_MS <= plain.ci_high)
        stein = median_after_stopping(runs, runs_medians, geometric_mean_t(runs_medians, LEVEL), LEVEL)
        assert stein.method.startswith("Stein two-stage")
        new.append(stein.ci_low <= TRUE_MEDIAN_MS <= stein.ci_high)
    return float(np.mean(new)), float(np.mean(usual)), float(stop_n.mean())


@pytest.mark.parametrize("target", [0.02, 0.03])
def test_the_summary_interval_after_until_precise_covers(target):
    """Run medians log-normal around 20 ms, between-run SD 5 % (high beside a ±2-3 % target),
    pilot 5, --max-repeat 20 (collect's default), 95 % intervals, 2,000 configurations (binomial SE
    0.5 points), seed 27: the configurations of tests/analysis/test_stopping.py's table, so the
    summary's interval reproduces the rule's own coverage there. The usual run-level t interval
    over all runs, which summary gave before, covers less."""
    new, usual, mean_runs = simulate(target, 0.05, 20, 2000, seed=27)
    print(
        f"\n--until-precise ±{target:.0%}, runs 5 % apart: summary (Stein) {new:.1%}, "
        f"the usual interval {usual:.1%}, {mean_runs:.1f} runs on average"
    )
    assert 0.93 <= new <= 0.97
    assert usual < new


def write_loop(db: Path, medians_ms: list[float], target: float = 0.03, max_repeat: int = 12) -> int:
    """One configuration collected as `collect --until-precise` would: each run's 100 latencies
    around its median, and the stop record the collector's rule gives after it (Stein's rule on
    the latencies so far, in ns). Stops when the rule does; returns the number of runs."""
    rule = stein_rule(target, level=LEVEL, pilot_runs=PILOT_RUNS, max_repeat=max_repeat)
    spread = np.exp(np.linspace(-0.02, 0.02, 100))
    so_far: list[list[int]] = []
    with Store.open(db) as store:
        device = store.register_device({"name": "jetson"})
        for k, median in enumerate(medians_ms):
            latencies = (median * 1e6 * spread).astype(np.int64)
            so_far.append(latencies.tolist())
            record = rule(so_far)
            store.write_run(
                {
                    "device_id": device,
                    "kind": "inference",
                    "status": "ok",
                    "framework": "onnxruntime",
                    "model": "cnn",
                    "batch_size": 1,
                    "repeat_index": k,
                    "source": "collect",
                    "environment": {
                        "precision": {**record, "n_runs": k + 1, "target_rel_half_width": target}
                    },
                },
                latencies=pa.table(
                    {
                        "iteration": pa.array(range(100), pa.int32()),
                        "warmup": [False] * 100,
                        "start_ns": np.arange(100, dtype=np.int64),
                        "latency_ns": latencies,
                    }
                ),
            )
            if record["decision"] != "continue":
                return k + 1
    return len(medians_ms)


def median_entry(db: Path, where: str | None = None) -> dict:
    results = run_analyses(db, AnalysisOptions(only="summary", where=where))
    (entry,) = results["summary"].to_json()
    return next(m for m in entry["metrics"] if m["metric"] == "latency_median_ms")


MEDIANS_MS = [20.0, 21.3, 19.1, 20.6, 22.0, 19.5, 20.9, 21.5, 19.9, 20.2, 21.1, 20.4]


def test_a_db_collected_until_precise_gets_steins_interval(tmp_path):
    db = tmp_path / "precise.duckdb"
    n = write_loop(db, MEDIANS_MS, target=0.06)
    # the pilot's spread (5.5 %) plans (2.776 · 5.5 % / asinh(6 %))² = 6.4: 7 runs, stopped precise
    assert n == 7
    median = median_entry(db)
    stored = np.log(
        [
            np.median((m * 1e6 * np.exp(np.linspace(-0.02, 0.02, 100))).astype(np.int64)) / 1e6
            for m in MEDIANS_MS[:n]
        ]
    )
    s0 = statistics.stdev(stored[:PILOT_RUNS])
    half = stats.t.ppf(0.975, PILOT_RUNS - 1) * s0 / math.sqrt(n)
    expected = (math.exp(stored.mean()), math.exp(stored.mean() - half), math.exp(stored.mean() + half))
    assert (median["estimate"], median["ci_low"], median["ci_high"]) == pytest.approx(expected, rel=1e-9)
    assert median["method"].startswith("Stein two-stage") and median["n"] == n
    assert "--until-precise stopped by Stein's rule" in median["note"]
    # a --where that leaves out a run of the loop: its runs are no longer repeats 0..n-1
    partial = median_entry(db, where="repeat_index <> 2")
    assert partial["method"].startswith("run-level t") and "not repeats 0 to" in partial["note"]


def test_a_record_that_does_not_match_its_runs_gets_the_usual_interval(tmp_path):
    db = tmp_path / "tampered.duckdb"
    n = write_loop(db, MEDIANS_MS)
    with Store.open(db) as store:
        store.con.execute(
            "UPDATE runs SET environment = json_merge_patch(environment, "
            '\'{"precision": {"pilot_log_sd": 0.5}}\') WHERE repeat_index = ?',
            [n - 1],
        )
    median = median_entry(db)
    assert median["method"].startswith("run-level t") and "is not the one the" in median["note"]
