"""The next step beside a wide interval (edgestats.analysis.estimators.hierarchical.next_step, summary's
`next_step` on latency_median_ms): when the median's interval is wider than ±25 % ((high − low) / 2
/ median) or rests on fewer than 3 runs, how many runs would reach ±5 % at the measured
between-run spread, checked against an independent computation: with equal runs the ANOVA's
σ_b² + σ_w²/m is the sample variance of the runs' mean log latencies, and the run count is the
smallest n with exp(t_{n−1} · sqrt(var / n)) − 1 ≤ 5 %, found by counting up."""

from __future__ import annotations

import math

import numpy as np
import pytest
from analysis_builders import latencies_frame, runs_frame
from scipy import stats

from edgestats.analysis.estimators.intervals import BootstrapSettings
from edgestats.analysis.summary.analysis import summarise

SETTINGS = BootstrapSettings(n_resamples=999, bca_max_n=100, seed=3)
CONFIG = ["device", "framework", "model"]


def runs_needed(run_logs: list[np.ndarray], target: float = 0.05, level: float = 0.95) -> int:
    """Independent: the variance of the runs' mean logs (equal runs), then count n up from 2."""
    variance = float(np.var([logs.mean() for logs in run_logs], ddof=1))
    n = 2
    while math.expm1(stats.t.ppf(0.5 + level / 2, n - 1) * math.sqrt(variance / n)) > target:
        n += 1
    return max(n, 3)


def median_entry(per_run: list[np.ndarray]) -> dict:
    rows = [
        {"latency_median_ms": float(np.median(r)), "latency_mean_ms": float(r.mean()), "n_latencies": len(r)}
        for r in per_run
    ]
    latencies = latencies_frame({i: r.tolist() for i, r in enumerate(per_run)})
    (entry,) = summarise(runs_frame(rows), latencies, by=CONFIG, settings=SETTINGS).to_json()
    return next(m for m in entry["metrics"] if m["metric"] == "latency_median_ms")


def noisy_runs(n_runs: int, between_sd: float, seed: int, per_run: int = 50) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    centres = rng.normal(np.log(5.0), between_sd, n_runs)
    return [np.exp(rng.normal(c, 0.05, per_run)) for c in centres]


def test_a_wide_interval_says_how_many_runs_reach_5_percent():
    per_run = noisy_runs(3, 0.6, seed=1)
    median = median_entry(per_run)
    width = (median["ci_high"] - median["ci_low"]) / 2 / median["estimate"]
    step = median["next_step"]
    assert width > 0.25 and step["rel_half_width"] == pytest.approx(width)
    assert step["runs_needed"] == runs_needed([np.log(r) for r in per_run]) > 3
    assert step["more_runs"] == step["runs_needed"] - 3 and step["target_rel_half_width"] == 0.05
    assert f"about {step['runs_needed']:,} runs would reach ±5 %" in step["text"]
    assert "edgestats collect --until-precise" in step["text"] and step["n_runs"] == 3


def test_a_precise_median_of_enough_runs_gets_no_next_step():
    median = median_entry(noisy_runs(8, 0.01, seed=2))
    assert (median["ci_high"] - median["ci_low"]) / 2 / median["estimate"] < 0.05
    assert "next_step" not in median


def test_two_runs_get_a_next_step_even_when_their_interval_is_narrow():
    per_run = noisy_runs(2, 0.002, seed=3)
    median = median_entry(per_run)
    step = median["next_step"]
    assert (median["ci_high"] - median["ci_low"]) / 2 / median["estimate"] < 0.25
    assert step["runs_needed"] == runs_needed([np.log(r) for r in per_run]) == 3
    assert step["text"].startswith("2 runs (fewer than 3)")


def test_one_run_cannot_measure_the_between_run_spread():
    step = median_entry(noisy_runs(1, 0.1, seed=4))["next_step"]
    assert step["runs_needed"] is None and step["more_runs"] is None
    assert "one run cannot measure the between-run spread" in step["text"]


def test_imported_runs_take_the_spread_of_their_medians():
    medians = [4.0, 9.0, 2.5]
    rows = [{"latency_median_ms": v, "latency_mean_ms": v} for v in medians]
    (entry,) = summarise(runs_frame(rows), None, by=CONFIG, settings=SETTINGS).to_json()
    step = entry["metrics"][0]["next_step"]
    assert entry["metrics"][0]["metric"] == "latency_median_ms"
    assert step["runs_needed"] == runs_needed([np.log([v]) for v in medians])
