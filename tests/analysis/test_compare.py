"""compare's statistics and matching (edgestats/analysis/compare.py), on hand-made per-run frames:
Welch's interval and p-value against scipy, the interval's coverage of a known ratio by
simulation, Holm against statsmodels' reference, the verdict rule, and configuration matching."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from scipy import stats

from edgestats.analysis.compare import (
    TOO_FEW,
    RatioTest,
    Selection,
    compare_runs,
    holm_adjust,
    match_key,
    verdict,
    welch_log_ratio,
)

A, B = Selection(Path("a.duckdb")), Selection(Path("b.duckdb"))


def runs_frame(configs: list[dict], medians_ms: list[list[float]], rss: float | None = 5e7) -> pl.DataFrame:
    """Per-run rows as load_data gives them: each config repeated once per median."""
    rows = [
        {
            **c,
            "run_id": f"{i}-{j}",
            "run_idx": 0,
            "latency_median_ms": m,
            "rss_peak_bytes": rss,
            "energy_per_inference_j": None,
        }
        for i, (c, ms) in enumerate(zip(configs, medians_ms))
        for j, m in enumerate(ms)
    ]
    return pl.DataFrame(
        rows, schema_overrides={"energy_per_inference_j": pl.Float64, "rss_peak_bytes": pl.Float64}
    )


def test_welch_interval_and_p_value_match_scipy():
    rng = np.random.default_rng(1)
    a = np.exp(rng.normal(math.log(2.0), 0.04, 6))
    b = np.exp(rng.normal(math.log(2.2), 0.09, 4))  # unequal variances and sizes: Welch's case
    test = welch_log_ratio(a, b, metric="latency_median_ms", level=0.9)
    reference = stats.ttest_ind(np.log(b), np.log(a), equal_var=False)
    low, high = reference.confidence_interval(0.9)
    assert test.p_value == pytest.approx(reference.pvalue, rel=1e-9)
    assert test.df == pytest.approx(reference.df, rel=1e-9)
    assert (test.ci_low, test.ci_high) == pytest.approx((math.exp(low), math.exp(high)), rel=1e-9)
    assert test.estimate == pytest.approx(math.exp(np.mean(np.log(b)) - np.mean(np.log(a))), rel=1e-12)
    assert test.a_estimate == pytest.approx(stats.gmean(a)) and test.b_estimate == pytest.approx(
        stats.gmean(b)
    )


def test_the_ratio_interval_covers_a_known_ratio_about_95_percent_of_the_time():
    """400 comparisons of 5 vs 4 runs, true ratio 1.1, run-to-run SD 3 % on A and 8 % on B (log
    scale): the 95 % interval covers 1.1 in 93-97 % of them, and is positive every time."""
    rng = np.random.default_rng(2026)
    covered, lows = 0, []
    for _ in range(400):
        a = np.exp(rng.normal(0.0, 0.03, 5))
        b = np.exp(rng.normal(math.log(1.1), 0.08, 4))
        test = welch_log_ratio(a, b, metric="latency_median_ms")
        covered += test.ci_low <= 1.1 <= test.ci_high
        lows.append(test.ci_low)
    coverage = covered / 400
    print(f"coverage of the Welch log-ratio interval: {coverage:.1%}")
    assert 0.93 <= coverage <= 0.97
    assert min(lows) > 0


def test_holm_matches_statsmodels_reference_values():
    tests = [
        RatioTest("latency_median_ms", 1, 1, 3, 3, 1.0, 0.9, 1.1, 0.95, p, 4.0)
        for p in (0.01, 0.04, 0.03, None)
    ]
    holm_adjust(tests)
    # Holm by hand: sorted 0.01, 0.03, 0.04 times 3, 2, 1, made monotone: 0.03, 0.06, 0.06.
    assert [t.p_holm for t in tests] == pytest.approx([0.03, 0.06, 0.06, None])


@pytest.mark.parametrize(
    ("p_holm", "low", "high", "expected"),
    [
        (0.001, 1.06, 1.14, "slower"),  # significant, whole interval above 1.05
        (0.001, 1.03, 1.14, "inconclusive"),  # significant, but the interval reaches into the band
        (0.001, 0.85, 0.94, "faster"),  # significant, whole interval below 1/1.05
        (0.30, 0.97, 1.02, "same"),  # inside [0.952, 1.05]: the same within 5 %
        (0.001, 1.01, 1.04, "same"),  # a real but negligible change is "same"
        (0.08, 1.06, 1.14, "inconclusive"),  # not significant after Holm
        (None, None, None, "inconclusive"),  # no interval (too few runs)
    ],
)
def test_verdict_rule(p_holm, low, high, expected):
    test = RatioTest("latency_median_ms", 1, 1, 4, 4, 1.0, low, high, 0.95, p_holm, 6.0, p_holm=p_holm)
    assert verdict(test, 0.05) == expected
    memory = RatioTest("rss_peak_bytes", 1, 1, 4, 4, 1.0, low, high, 0.95, p_holm, 6.0, p_holm=p_holm)
    assert verdict(memory, 0.05) == {"slower": "higher", "faster": "lower"}.get(expected, expected)


def test_one_run_a_side_gives_the_ratio_without_interval_or_test():
    test = welch_log_ratio([2.0], [2.2, 2.3], metric="latency_median_ms")
    assert test.estimate == pytest.approx(math.sqrt(2.2 * 2.3) / 2.0)
    assert test.ci_low is None and test.p_value is None and TOO_FEW in test.note
    assert verdict(test, 0.05) == "inconclusive"


def test_non_positive_values_get_no_log_ratio():
    test = welch_log_ratio([0.1, -0.01], [0.2, 0.3], metric="energy_per_inference_j")
    assert test.estimate is None and "<= 0" in test.note


def test_the_compared_column_leaves_the_key_and_unmatched_configurations_are_listed():
    pt = [{"framework": "pytorch", "model": m, "threads": 2} for m in ("squeezenet", "resnet18")]
    ort = [{"framework": "onnxruntime", "model": m, "threads": 2} for m in ("squeezenet", "mobilenet_v2")]
    runs_a = runs_frame(pt, [[1.0, 1.02, 0.99], [3.0, 3.1]])
    runs_b = runs_frame(ort, [[0.8, 0.81, 0.79], [2.0, 2.1]])
    key, differing = match_key(runs_a, runs_b)
    assert key == ["model", "threads"] and differing == {"framework": ("pytorch", "onnxruntime")}
    comparison = compare_runs(A, B, runs_a, runs_b)
    [(config, tests)] = comparison.matched
    assert config == {"model": "squeezenet", "threads": 2}
    latency = next(t for t in tests if t.metric == "latency_median_ms")
    assert latency.verdict == "faster" and (latency.n_a, latency.n_b) == (3, 2 + 1)
    assert sorted((u["side"], u["config"]["model"], u["n_runs"]) for u in comparison.unmatched) == [
        ("a", "resnet18", 2),
        ("b", "mobilenet_v2", 2),
    ]
    assert comparison.regressions == []
    assert any("energy per inference: not measured" in n for n in comparison.notes)


def test_an_explicit_match_key_keeps_the_compared_column():
    runs_a = runs_frame([{"framework": "pytorch", "model": "cnn9"}], [[1.0, 1.1]])
    runs_b = runs_frame([{"framework": "onnxruntime", "model": "cnn9"}], [[1.0, 1.1]])
    comparison = compare_runs(A, B, runs_a, runs_b, match=["framework", "model"])
    assert comparison.matched == [] and len(comparison.unmatched) == 2


def test_holm_is_applied_across_configurations_and_a_regression_is_reported():
    configs = [{"model": f"m{i}"} for i in range(3)]
    runs_a = runs_frame(configs, [[1.0, 1.01, 0.99, 1.0]] * 3)
    runs_b = runs_frame(configs, [[1.2, 1.21, 1.19, 1.2], [1.0, 1.01, 0.99, 1.0], [1.02, 1.0, 1.03, 1.01]])
    comparison = compare_runs(A, B, runs_a, runs_b, threshold=0.05)
    latency = [next(t for t in tests if t.metric == "latency_median_ms") for _, tests in comparison.matched]
    raw = [t.p_value for t in latency]
    order = np.argsort(raw)
    assert latency[order[0]].p_holm == pytest.approx(3 * raw[order[0]])
    assert [t.verdict for t in latency] == ["slower", "same", "same"]
    assert comparison.regressions == [{"model": "m0"}]
    assert comparison.to_json()["regression"] is True
