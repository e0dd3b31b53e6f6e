"""compare's statistics and matching (edgestats/analysis/compare/comparison.py), on hand-made per-run frames:
Welch's interval and p-value against scipy, the TOST p-value against statsmodels, the interval's
coverage of a known ratio by simulation, Holm against statsmodels' reference (of the difference
and of the equivalence tests), the verdict rule, the minimum detectable effect in the JSON, and
configuration matching. The power and the error rates by simulation: test_compare_stats.py."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from scipy import stats
from statsmodels.stats.weightstats import ttost_ind

from edgestats.analysis.compare.comparison import (
    TOO_FEW,
    RatioTest,
    Selection,
    compare_runs,
    holm_adjust,
    match_key,
    verdict,
    welch_log_ratio,
)
from edgestats.analysis.estimators import welch as cs

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


@pytest.mark.parametrize("threshold", [0.03, 0.05, 0.2])
def test_the_equivalence_p_value_is_statsmodels_tost_with_welch(threshold):
    """Schuirmann's two one-sided tests on the logs, bounds ±log(1+t), Welch's variance."""
    rng = np.random.default_rng(3)
    a, b = np.exp(rng.normal(0.0, 0.03, 5)), np.exp(rng.normal(0.01, 0.05, 7))
    test = welch_log_ratio(a, b, metric="latency_median_ms", threshold=threshold)
    band = math.log1p(threshold)
    reference, _, _ = ttost_ind(np.log(b), np.log(a), -band, band, usevar="unequal")
    assert test.p_equivalence == pytest.approx(reference, rel=1e-9)


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
        RatioTest("latency_median_ms", 1, 1, 3, 3, 1.0, 0.9, 1.1, 0.95, p, 4.0, p_equivalence=p)
        for p in (0.01, 0.04, 0.03, None)
    ]
    holm_adjust(tests)
    # Holm by hand: sorted 0.01, 0.03, 0.04 times 3, 2, 1, made monotone: 0.03, 0.06, 0.06.
    assert [t.p_holm for t in tests] == pytest.approx([0.03, 0.06, 0.06, None])
    assert [t.p_equivalence_holm for t in tests] == pytest.approx([0.03, 0.06, 0.06, None])


@pytest.mark.parametrize(
    ("p_holm", "p_equivalence_holm", "low", "high", "expected"),
    [
        (0.001, 0.9, 1.06, 1.14, "slower"),  # significant, whole interval above 1.05
        (0.001, 0.6, 1.03, 1.14, "inconclusive"),  # significant, but the interval reaches into the band
        (0.001, 0.9, 0.85, 0.94, "faster"),  # significant, whole interval below 1/1.05
        (0.30, 0.001, 0.97, 1.02, "same"),  # equivalent within 5 % after Holm (TOST p < 0.025)
        (0.001, 0.01, 1.01, 1.04, "same"),  # a real but negligible change is "same"
        (0.30, 0.04, 0.97, 1.02, "inconclusive"),  # inside the band, but not after Holm across configs
        (0.08, 0.9, 1.06, 1.14, "inconclusive"),  # not significant after Holm
        (None, None, None, None, "inconclusive"),  # no interval (too few runs)
    ],
)
def test_verdict_rule(p_holm, p_equivalence_holm, low, high, expected):
    for metric, words in (
        ("latency_median_ms", {}),
        ("rss_peak_bytes", {"slower": "higher", "faster": "lower"}),
    ):
        test = RatioTest(metric, 1, 1, 4, 4, 1.0, low, high, 0.95, p_holm, 6.0, p_holm=p_holm)
        test.p_equivalence_holm = p_equivalence_holm
        assert verdict(test, 0.05) == words.get(expected, expected)


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


def test_same_is_adjusted_for_multiplicity_across_configurations():
    """A configuration whose TOST p is 0.02 is `same` alone (its 95 % interval lies inside the
    band), but not among three such: Holm makes each 0.06, so adding configurations cannot make
    `same` verdicts appear by chance."""
    a_ms, b_ms = [1.00, 1.02, 0.98, 1.01, 0.99], [1.01, 1.0403, 0.9797, 1.01]
    one = [{"model": "m0"}]
    alone = compare_runs(A, B, runs_frame(one, [a_ms], rss=None), runs_frame(one, [b_ms], rss=None))
    [(_, [test])] = alone.matched
    assert 0.025 / 3 < test.p_equivalence < 0.025 and 1 / 1.05 < test.ci_low < test.ci_high < 1.05
    assert test.p_equivalence_holm == test.p_equivalence and test.verdict == "same"
    configs = [{"model": f"m{i}"} for i in range(3)]
    three = compare_runs(
        A, B, runs_frame(configs, [a_ms] * 3, rss=None), runs_frame(configs, [b_ms] * 3, rss=None)
    )
    for _, [t] in three.matched:
        assert t.p_equivalence_holm == pytest.approx(3 * test.p_equivalence) and t.verdict == "inconclusive"


def test_the_json_carries_the_min_detectable_effect_with_its_power_and_alpha():
    """Four configurations, three with an interval (the fourth has 1 run on side A): the MDE
    assumes the test at Holm's first step over those three, 0.05 / 3, and equals
    compare_stats' own computation from the runs' measured SDs (checked against statsmodels and by
    simulation in test_compare_stats.py); none where there is no interval."""
    configs = [{"model": f"m{i}"} for i in range(4)]
    a_ms = [[10.0, 10.2, 9.9], [20.0, 20.6, 19.5], [5.0, 5.1, 4.9, 5.05], [8.0]]
    b_ms = [[10.1, 10.0, 10.3], [21.0, 20.1, 20.4, 20.9], [5.3, 5.0, 5.2], [8.1, 8.2]]
    comparison = compare_runs(A, B, runs_frame(configs, a_ms), runs_frame(configs, b_ms), threshold=0.05)
    documents = [
        t.as_dict() for _, tests in comparison.matched for t in tests if t.metric == "latency_median_ms"
    ]
    for a, b, doc in zip(a_ms[:3], b_ms[:3], documents[:3]):
        assert doc["min_detectable_alpha"] == pytest.approx(0.05 / 3) and doc["min_detectable_power"] == 0.8
        x, y = np.log(a), np.log(b)
        design = cs.Design(np.std(x, ddof=1), len(x), np.std(y, ddof=1), len(y))
        expected = cs.measured_min_detectable_pct(design, threshold=0.05, level=0.95, alpha_test=0.05 / 3)
        assert (
            doc["min_detectable_pct"] == pytest.approx(expected, rel=1e-9) and doc["min_detectable_pct"] > 5
        )
    assert documents[3]["min_detectable_pct"] is None and documents[3]["min_detectable_power"] is None
    assert "p_equivalence_holm" in documents[0] and "design" not in documents[0]
