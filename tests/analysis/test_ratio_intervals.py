"""Ratios of a few runs (edgestats/analysis/estimators/ratios.py): below 10 values a side nothing is
resampled. The paired ratio of means gets the delta-method t interval on the log scale and the
ratio of two independent samples' medians the ratio of geometric means with Welch's t interval,
each against a hand or scipy computation and by simulated coverage, the old bootstrap beside."""

from __future__ import annotations

import math
import statistics

import numpy as np
import pytest
from scipy import stats

from edgestats.analysis.estimators.intervals import BootstrapSettings, bootstrap
from edgestats.analysis.estimators.ratios import (
    MIN_RESAMPLED,
    PAIRED_LOG_METHOD,
    WELCH_LOG_METHOD,
    _ratio_of_means,
    _ratio_of_medians,
    paired_ratio_of_means,
    ratio_of_medians,
)

LEVEL = 0.95
OLD = BootstrapSettings(n_resamples=999, seed=3)  # what the ratios resampled before, with fewer resamples


def test_paired_ratio_of_few_runs_by_hand():
    load = np.array([9.1, 9.6, 9.4, 10.2, 9.0])
    steady = np.array([1.31, 1.36, 1.33, 1.42, 1.30])
    estimate = paired_ratio_of_means(load, steady, level=LEVEL)
    ratio = load.mean() / steady.mean()
    linearised = load / load.mean() - steady / steady.mean()
    half = stats.t.ppf(0.975, 4) * statistics.stdev(linearised) / math.sqrt(5)
    assert estimate.method == PAIRED_LOG_METHOD and estimate.n == 5
    assert (estimate.estimate, estimate.ci_low, estimate.ci_high) == pytest.approx(
        (ratio, ratio * math.exp(-half), ratio * math.exp(half)), rel=1e-12
    )
    equal = paired_ratio_of_means([2.0, 4.0], [1.0, 2.0])  # the same ratio in every run
    assert equal.estimate == pytest.approx(2.0) and equal.ci_low is None and "equal" in equal.note


def test_ratio_of_few_medians_is_welch_on_the_logs():
    a, b = np.array([40.0, 46.0, 43.0, 41.5]), np.array([4.1, 4.6, 4.4])
    estimate = ratio_of_medians(a, b, level=LEVEL)
    welch = stats.ttest_ind(np.log(a), np.log(b), equal_var=False).confidence_interval(LEVEL)
    geometric = math.exp(np.log(a).mean() - np.log(b).mean())
    assert estimate.method == WELCH_LOG_METHOD and estimate.n == 7
    assert (estimate.estimate, estimate.ci_low, estimate.ci_high) == pytest.approx(
        (geometric, math.exp(welch.low), math.exp(welch.high)), rel=1e-10
    )
    one = ratio_of_medians([40.0], [4.0, 4.4])
    assert one.ci_low is None and "(on one side of the ratio)" in one.note
    zero = ratio_of_medians([40.0, 0.0, 30.0], [4.0, 4.4])
    assert zero.estimate == pytest.approx(30.0 / 4.2) and zero.ci_low is None and "0 or less" in zero.note


def old_coverage(samples: list[tuple[np.ndarray, np.ndarray]], truth: float, paired: bool) -> float:
    """How often the bootstrap interval the ratio had before (BCa, scipy via the project's seeded
    helper, 999 resamples) covered the truth; a degenerate bootstrap counts as a miss."""
    statistic = _ratio_of_means if paired else _ratio_of_medians
    hits = []
    for i, (x, y) in enumerate(samples):
        order = np.lexsort((y, x)) if paired else slice(None)
        sides = [x[order], y[order]] if paired else [np.sort(x), np.sort(y)]
        interval = bootstrap(sides, statistic, level=LEVEL, settings=OLD, label=str(i), paired=paired)
        hits.append(interval is not None and interval[0] <= truth <= interval[1])
    return float(np.mean(hits))


@pytest.mark.parametrize("n_runs", [3, 5, 8])
def test_paired_ratio_of_few_runs_covers(n_runs):
    """Load and steady times of n runs, log-normal with SDs 8 % and 5 % and correlation 0.5 (a
    slow process is slow in both), 2,000 configurations; the truth is the ratio of the two
    means. Old: the paired BCa bootstrap, the first 300 configurations."""
    rng = np.random.default_rng(700 + n_runs)
    sd_load, sd_steady, rho = 0.08, 0.05, 0.5
    cov = [[sd_load**2, rho * sd_load * sd_steady], [rho * sd_load * sd_steady, sd_steady**2]]
    noise = rng.multivariate_normal([0.0, 0.0], cov, (2000, n_runs))
    load, steady = 9.5 * np.exp(noise[..., 0]), 1.35 * np.exp(noise[..., 1])
    truth = 9.5 * math.exp(sd_load**2 / 2) / (1.35 * math.exp(sd_steady**2 / 2))
    found = [paired_ratio_of_means(x, y, level=LEVEL) for x, y in zip(load, steady)]
    assert all(e.method == PAIRED_LOG_METHOD for e in found)
    new = np.mean([e.ci_low <= truth <= e.ci_high for e in found])
    old = old_coverage(list(zip(load[:300], steady[:300])), truth, paired=True)
    print(f"\npaired ratio of means, {n_runs} runs: old (paired BCa, first 300) {old:.1%}, new {new:.1%}")
    assert 0.93 <= new <= 0.97


@pytest.mark.slow
@pytest.mark.parametrize("n_side", [2, 3, 5])
def test_ratio_of_few_medians_covers(n_side):
    """Two independent samples of n_side values each, log-normal with SD 10 % around medians 40 and
    4 (a true ratio of medians of 10), 2,000 configurations. Old: the BCa bootstrap of the ratio
    of the sample medians, the first 300."""
    rng = np.random.default_rng(900 + n_side)
    a = 40.0 * np.exp(rng.normal(0, 0.1, (2000, n_side)))
    b = 4.0 * np.exp(rng.normal(0, 0.1, (2000, n_side)))
    found = [ratio_of_medians(x, y, level=LEVEL) for x, y in zip(a, b)]
    assert n_side < MIN_RESAMPLED and all(e.method == WELCH_LOG_METHOD for e in found)
    new = np.mean([e.ci_low <= 10.0 <= e.ci_high for e in found])
    old = old_coverage(list(zip(a[:300], b[:300])), 10.0, paired=False)
    print(f"\nratio of medians, {n_side} a side: old (BCa, first 300) {old:.1%}, new (Welch log-t) {new:.1%}")
    # With 2 values a side Welch's t has 1-2 degrees of freedom and errs wide (97.3 % here): the
    # price of not assuming the two sides equally spread, as a pooled t (exact only then) would
    assert 0.93 <= new <= (0.98 if n_side == 2 else 0.97)
