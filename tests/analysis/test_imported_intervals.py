"""Imported one-row-per-run results (edgestats/analysis/summary/imported.py): the median's interval
across runs is the same log-scale t as collected runs get, against scipy; the notes for one and two
runs; the issue's three-row table; and its coverage by simulation beside the old BCa's."""

from __future__ import annotations

import math

import numpy as np
import pytest
from analysis_builders import runs_frame
from scipy import stats

from edgestats.analysis.estimators.intervals import BootstrapSettings, quantile_ci
from edgestats.analysis.summary.analysis import summarise
from edgestats.analysis.summary.imported import IMPORTED_ONE_RUN_NOTE, median_across_runs

CONFIG = ["device", "framework", "model"]


def log_t(values: list[float], level: float = 0.95) -> tuple[float, float, float]:
    logs = np.log(values)
    low, high = stats.t.interval(level, len(logs) - 1, loc=logs.mean(), scale=stats.sem(logs))
    return math.exp(logs.mean()), math.exp(low), math.exp(high)


def test_the_issues_three_rows_get_the_run_level_interval():
    """pi,pytorch,cnn with latency_p50_ms 8.0, 8.1, 8.3: was 8.1 [8.0, 8.3] (BCa, the runs' range)."""
    runs = runs_frame(
        [
            {
                "device": "pi",
                "framework": "pytorch",
                "model": "cnn",
                "latency_median_ms": v,
                "latency_mean_ms": v,
            }
            for v in (8.0, 8.1, 8.3)
        ]
    )
    (entry,) = summarise(runs, None, by=CONFIG).to_json()
    median = next(m for m in entry["metrics"] if m["metric"] == "latency_median_ms")
    estimate, low, high = log_t([8.0, 8.1, 8.3])
    assert (median["estimate"], median["ci_low"], median["ci_high"]) == pytest.approx((estimate, low, high))
    assert low < 8.0 and high > 8.3  # wider than the runs' range, as three runs warrant
    assert median["method"].startswith("run-level t on the log scale") and median["n_unit"] == "runs"
    assert median["note"] is None


def test_two_runs_are_wide_and_say_so_one_run_has_no_interval():
    two = median_across_runs([8.0, 8.4], 0.95)
    estimate, low, high = log_t([8.0, 8.4])
    assert (two.estimate, two.ci_low, two.ci_high) == pytest.approx((estimate, low, high))
    assert "two runs" in two.note and high / low > 1.5
    one = median_across_runs([8.0], 0.95)
    assert one.estimate == 8.0 and one.ci_low is None and one.note == IMPORTED_ONE_RUN_NOTE
    equal = median_across_runs([8.0, 8.0, 8.0], 0.95)
    assert equal.estimate == pytest.approx(8.0) and equal.ci_low is None and "equal" in equal.note


@pytest.mark.parametrize("n_runs", [2, 3, 5])
def test_imported_median_covers(n_runs):
    """Run medians log-normal around a true 8 ms, between-run SD 4 %. New: the log-t interval
    across runs, 2,000 configurations; old: BCa over the runs' medians (999 resamples), the first
    300 of them (BCa costs ~2 ms a configuration)."""
    rng = np.random.default_rng(2027 + n_runs)
    truth_ms, between = 8.0, 0.04
    medians = truth_ms * np.exp(rng.normal(0, between, (2000, n_runs)))
    intervals = [median_across_runs(row, 0.95) for row in medians]
    new = np.mean([e.ci_low <= truth_ms <= e.ci_high for e in intervals])
    settings = BootstrapSettings(n_resamples=999, seed=1)
    old_intervals = [
        quantile_ci(row, 0.5, settings=settings, n_unit="runs", label=str(i))
        for i, row in enumerate(medians[:300])
    ]
    old = np.mean([e.has_interval and e.ci_low <= truth_ms <= e.ci_high for e in old_intervals])
    print(f"\nimported median, {n_runs} runs: old (BCa, first 300) {old:.1%}, new (log-t, 2000) {new:.1%}")
    assert 0.93 <= new <= 0.97
    if n_runs <= 3:  # the issue's audit: 54 % with 2 runs, 77 % with 3 ([min, max])
        assert old < 0.8
