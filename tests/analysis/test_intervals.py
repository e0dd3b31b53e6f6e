"""The interval helpers against scipy / statsmodels and hand-computed values, degenerate input included."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from scipy import stats

from edgestats.analysis.core.result import json_safe
from edgestats.analysis.estimators.correlations import correlation, fisher_z_interval
from edgestats.analysis.estimators.intervals import (
    BootstrapSettings,
    mean_t,
    mean_t_from_moments,
    order_statistic_ranks,
    quantile_ci,
)
from edgestats.analysis.estimators.ratios import paired_ratio_of_means, ratio_of_medians

SETTINGS = BootstrapSettings(n_resamples=999, bca_max_n=200, seed=7)


def test_order_statistic_ranks_match_the_textbook_table():
    # n = 100, median, 95 %: the classic (X_(40), X_(61)).
    assert order_statistic_ranks(100, 0.5, 0.95) == (40, 61)
    r, s = order_statistic_ranks(1000, 0.99, 0.95)
    coverage = stats.binom.cdf(s - 1, 1000, 0.99) - stats.binom.cdf(r - 1, 1000, 0.99)
    assert coverage >= 0.95
    assert order_statistic_ranks(20, 0.99, 0.95) is None  # 20 values cannot bound a p99


def test_big_samples_use_order_statistics_in_linear_time():
    x = np.random.default_rng(1).lognormal(size=1001)
    estimate = quantile_ci(x, 0.5, settings=SETTINGS)
    assert estimate.method == "order-statistic"
    ordered = np.sort(x)
    r, s = order_statistic_ranks(1001, 0.5, 0.95)
    assert (estimate.ci_low, estimate.ci_high) == (ordered[r - 1], ordered[s - 1])
    assert estimate.estimate == pytest.approx(np.median(x))
    assert estimate.n == 1001 and estimate.n_unit == "latencies"


def test_small_samples_use_scipy_bca_with_the_seeded_generator():
    x = np.random.default_rng(2).exponential(size=60)
    estimate = quantile_ci(x, 0.9, settings=SETTINGS, label="a")
    reference = stats.bootstrap(
        (np.sort(x),),
        lambda s, axis=-1: np.quantile(s, 0.9, axis=axis),
        n_resamples=999,
        vectorized=True,
        method="BCa",
        rng=SETTINGS.rng("q0.9:a"),
    )
    assert estimate.method == "bootstrap-bca"
    assert (estimate.ci_low, estimate.ci_high) == pytest.approx(tuple(reference.confidence_interval))
    again = quantile_ci(x[::-1], 0.9, settings=SETTINGS, label="a")
    assert (again.ci_low, again.ci_high) == (
        estimate.ci_low,
        estimate.ci_high,
    )  # reproducible, whatever the row order


@pytest.mark.parametrize(
    "values, why", [([], "no latencies"), ([3.0], "1 latency (an interval"), ([2.0] * 9, "are equal")]
)
def test_degenerate_samples_give_a_reason_not_a_nan(values, why):
    estimate = quantile_ci(values, 0.5, settings=SETTINGS)
    assert estimate.ci_low is None and estimate.ci_high is None
    assert "not enough data" in estimate.note and why in estimate.note
    json.dumps(estimate.as_dict(), allow_nan=False)


def test_mean_t_matches_scipy_and_the_moments_form():
    x = np.array([4.0, 5.5, 6.1, 7.3, 3.2])
    estimate = mean_t(x, 0.9)
    low, high = stats.t.interval(0.9, 4, loc=x.mean(), scale=stats.sem(x))
    assert (estimate.ci_low, estimate.ci_high) == pytest.approx((low, high))
    moments = mean_t_from_moments(len(x), x.sum(), (x * x).sum(), 0.9)
    assert (moments.ci_low, moments.ci_high) == pytest.approx((low, high))
    assert mean_t([1.0, math.nan, 3.0]).n == 2  # NaN is left out, not averaged
    assert mean_t([5.0, 5.0]).ci_low is None


def test_paired_ratio_of_means_matches_scipy_paired_bootstrap():
    """From 10 runs the pairs are resampled (fewer: tests/analysis/test_ratio_intervals.py)."""
    load = np.array([8.7, 8.8, 8.9, 9.1, 9.3, 9.5, 9.6, 9.8, 10.0, 10.2, 10.4, 10.5])  # sorted, as resampled
    steady = np.array([1.27, 1.31, 1.29, 1.30, 1.36, 1.35, 1.33, 1.38, 1.37, 1.41, 1.40, 1.44])
    estimate = paired_ratio_of_means(load, steady, settings=SETTINGS, label="x")
    assert estimate.estimate == pytest.approx(load.mean() / steady.mean())
    reference = stats.bootstrap(
        (load, steady),
        lambda a, b, axis=-1: a.mean(axis=axis) / b.mean(axis=axis),
        paired=True,
        vectorized=True,
        n_resamples=999,
        method="BCa",
        rng=SETTINGS.rng("ratio:x"),
    )
    assert (estimate.ci_low, estimate.ci_high) == pytest.approx(tuple(reference.confidence_interval))
    one = paired_ratio_of_means([9.5], [1.35])
    assert (
        one.estimate == pytest.approx(9.5 / 1.35) and one.ci_low is None and "1 run (an interval" in one.note
    )


def test_ratio_of_medians_refuses_a_zero_denominator():
    estimate = ratio_of_medians([5.0, 6.0, 7.0], [0.0, 0.0, 1.0])
    assert estimate.estimate is None and "unbounded" in estimate.note
    numerator = np.linspace(690.0, 720.0, 10)
    denominator = np.linspace(168.0, 181.0, 12)
    ok = ratio_of_medians(numerator, denominator, settings=SETTINGS)  # 10 a side: BCa
    assert ok.estimate == pytest.approx(np.median(numerator) / np.median(denominator))
    assert ok.method == "bootstrap-bca" and ok.ci_low < ok.estimate < ok.ci_high


def test_correlations_match_scipy_and_fisher_z_by_hand():
    x = np.array([1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0])
    y = np.array([2.1, 1.9, 3.5, 3.9, 5.2, 4.8, 7.1, 8.4, 8.0, 9.9])
    pearson = correlation(x, y, "pearson")
    reference = stats.pearsonr(x, y)
    assert pearson.estimate.estimate == pytest.approx(reference.statistic)
    assert (pearson.estimate.ci_low, pearson.estimate.ci_high) == pytest.approx(
        tuple(reference.confidence_interval(0.95))
    )
    assert pearson.p_value == pytest.approx(reference.pvalue)
    spearman = correlation(x, y, "spearman")
    rho = stats.spearmanr(x, y).statistic
    half = 1.959964 * math.sqrt(1 + rho**2 / 2) / math.sqrt(10 - 3)
    assert (spearman.estimate.ci_low, spearman.estimate.ci_high) == pytest.approx(
        (math.tanh(math.atanh(rho) - half), math.tanh(math.atanh(rho) + half)), rel=1e-5
    )
    assert fisher_z_interval(0.5, 3, 0.95) is None


def test_degenerate_correlations():
    assert correlation([1, 2], [3, 4], "pearson").estimate.estimate is None
    constant = correlation([1, 2, 3, 4], [5, 5, 5, 5], "spearman")
    assert constant.estimate.estimate is None and "every y value is 5" in constant.estimate.note
    perfect = correlation([1, 2, 3, 4], [10, 20, 30, 40], "spearman")
    assert perfect.estimate.estimate == 1.0 and perfect.estimate.ci_low is None
    assert perfect.p_value == pytest.approx(2 / 24)  # exact: 2 of the 4! pairings reach |rho| = 1


def test_json_safe_never_lets_nan_through():
    assert json_safe({"a": float("nan"), "b": [np.float64("inf"), np.int64(3)], "c": True}) == {
        "a": None,
        "b": [None, 3],
        "c": True,
    }
