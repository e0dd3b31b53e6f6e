"""The bounded intervals of edgestats.analysis.estimators.bounded one by one: Wilson against statsmodels, the
log- and logit-scale intervals by hand and by simulation (coverage), the quantity kinds, energy
cut at 0. Separate from test_bounded_intervals.py, which runs every analysis on random DBs."""

from __future__ import annotations

import math

import numpy as np
import pytest
from analysis_builders import runs_frame
from scipy import stats
from scipy.special import expit, logit

from edgestats.analysis.estimators.bounded import (
    bounded_mean,
    clip_at_zero,
    geometric_mean_t,
    positive_mean,
    proportion_mean,
    quantity_kind,
    wilson_interval,
)
from edgestats.analysis.estimators.intervals import Estimate
from edgestats.analysis.summary.analysis import energy_estimate


@pytest.mark.parametrize("level", [0.9, 0.95, 0.99])
@pytest.mark.parametrize("successes,n", [(0, 10), (1, 10), (7, 10), (10, 10), (488, 500), (9_760, 10_000)])
def test_wilson_matches_statsmodels(successes, n, level):
    from statsmodels.stats.proportion import proportion_confint

    expected = proportion_confint(successes, n, alpha=1 - level, method="wilson")
    assert wilson_interval(successes, n, level) == pytest.approx(expected, abs=1e-12)


def test_one_run_with_a_known_test_set_gets_wilson_and_says_what_it_covers():
    estimate = proportion_mean([97.6], n_test=500)
    low, high = wilson_interval(488, 500)
    assert (estimate.estimate, estimate.ci_low, estimate.ci_high) == pytest.approx(
        (97.6, 100 * low, 100 * high)
    )
    assert estimate.method == "wilson" and "500 samples" in estimate.note
    unknown = proportion_mean([97.6])
    assert unknown.ci_low is None and "Wilson" in unknown.note


def test_logit_interval_by_hand_and_the_issue_s_example_stays_in_range():
    values = np.array([95.2, 100.0])  # a plain t interval: 97.6 ± 12.7 × 2.4 = [67, 128] %
    estimate = proportion_mean(values)
    p, se = values.mean() / 100, stats.sem(values / 100)
    half = stats.t.ppf(0.975, 1) * se / (p * (1 - p))
    assert estimate.estimate == pytest.approx(97.6)
    assert (estimate.ci_low, estimate.ci_high) == pytest.approx(
        (100 * expit(logit(p) - half), 100 * expit(logit(p) + half))
    )
    assert 0 < estimate.ci_low < 97.6 < estimate.ci_high < 100


def test_log_interval_by_hand_and_training_times_stay_positive():
    times = np.array([10.0, 900.0, 120.0])
    estimate = positive_mean(times)
    half = stats.t.ppf(0.975, 2) * stats.sem(times) / times.mean()
    assert (estimate.ci_low, estimate.ci_high) == pytest.approx(
        (times.mean() * math.exp(-half), times.mean() * math.exp(half))
    )
    assert estimate.estimate == pytest.approx(times.mean())
    assert 0 < estimate.ci_low < estimate.estimate < estimate.ci_high  # a plain t: 343 ± 1,205 s, below 0
    geometric = geometric_mean_t(times)
    low, high = stats.t.interval(0.95, 2, loc=np.log(times).mean(), scale=stats.sem(np.log(times)))
    assert (geometric.estimate, geometric.ci_low, geometric.ci_high) == pytest.approx(
        (math.exp(np.log(times).mean()), math.exp(low), math.exp(high))
    )


def test_a_difference_below_zero_keeps_the_plain_t_and_says_why():
    estimate = positive_mean([-0.2, 0.5, 0.9])
    low, high = stats.t.interval(0.95, 2, loc=0.4, scale=stats.sem([-0.2, 0.5, 0.9]))
    assert (estimate.ci_low, estimate.ci_high) == pytest.approx((low, high)) and "below 0" in estimate.note


def test_positive_mean_covers_the_log_normal_mean():
    rng = np.random.default_rng(21)
    sigma = 0.3
    samples = rng.lognormal(0.0, sigma, (2000, 5))
    truth = math.exp(sigma**2 / 2)
    cover = np.mean([(e := positive_mean(x)).ci_low <= truth <= e.ci_high for x in samples])
    assert 0.93 <= cover <= 0.97, cover


def test_logit_interval_covers_the_mean_accuracy_across_runs():
    """Runs' accuracies vary on the logit scale (seed to seed); the truth is their mean."""
    rng = np.random.default_rng(22)
    centre, spread = logit(0.9), 0.3
    truth = 100 * float(expit(centre + rng.normal(0, spread, 1_000_000)).mean())
    samples = 100 * expit(centre + rng.normal(0, spread, (2000, 5)))
    cover = np.mean([(e := proportion_mean(x)).ci_low <= truth <= e.ci_high for x in samples])
    assert 0.93 <= cover <= 0.97, cover


def test_quantity_kinds_follow_the_names_units():
    assert [
        quantity_kind(n)
        for n in (
            "accuracy_pct",
            "training_time_s",
            "rss_peak_bytes",
            "throughput_per_s",
            "energy_j",
            "log10(batch_size)",
        )
    ] == ["proportion", "positive", "positive", "positive", "positive", "real"]
    assert bounded_mean([80.0, 100.0], "accuracy_pct").ci_high < 100
    assert bounded_mean([-1.0, 2.0, 4.0], "slope").method == "t"


def test_one_run_s_energy_interval_is_cut_at_zero_not_below():
    runs = runs_frame(
        [
            {
                "latency_median_ms": 5.0,
                "energy_per_inference_j": 0.002,
                "energy_per_inference_ci_low_j": -0.001,
                "energy_per_inference_ci_high_j": 0.005,
            }
        ]
    )
    estimate = energy_estimate(runs, 0.95)
    assert (estimate.estimate, estimate.ci_low, estimate.ci_high) == (0.002, 0.0, 0.005)
    assert "cut at 0" in estimate.note and "idle baseline" in estimate.note
    below = clip_at_zero(Estimate(-0.001, -0.004, 0.002, 0.95, 1, "runs", "idle-baseline interval"))
    assert below.ci_low == -0.004  # an estimate below 0 (below idle) is a difference: left as it is


def test_a_geometric_mean_of_values_orders_of_magnitude_apart_has_no_interval_rather_than_an_overflow():
    """Two imported runs of 1e-300 and 1e300 ms: the log-t bounds lie past the largest float."""
    estimate = geometric_mean_t([1e-300, 1e300])
    assert estimate.estimate == 1.0 and estimate.ci_low is None and estimate.ci_high is None
    assert "orders of magnitude" in estimate.note
