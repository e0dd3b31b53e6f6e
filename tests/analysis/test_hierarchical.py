"""Run-level (hierarchical) latency intervals: coverage by simulation against today's pooled
method, variance components against statsmodels, and the Kalibera–Jones run count."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from edgestats.analysis.estimators.hierarchical import (
    ONE_RUN_NOTE,
    VarianceComponents,
    _usable_runs,
    mean_over_runs,
    median_over_runs,
    optimal_iterations,
    per_run_quantiles,
    predicted_rel_half_width,
    quantile_over_runs,
    recommended_runs,
    relative_half_width,
    variance_components,
)
from edgestats.analysis.estimators.intervals import BootstrapSettings, quantile_ci

TRUE_MEDIAN_MS = 20.0
BETWEEN_SD, WITHIN_SD = 0.05, 0.01  # on the log scale: 5 % between runs, 1 % within
RUNS, LATENCIES, CONFIGURATIONS = 5, 200, 400


def simulated_configurations(
    seed: int,
    configurations: int = CONFIGURATIONS,
    runs: int = RUNS,
    latencies: int = LATENCIES,
    between_sd: float = BETWEEN_SD,
    within_sd: float = WITHIN_SD,
) -> np.ndarray:
    """(configurations, runs, latencies) log-normal latencies: log L = log(20) + b_run + e, with
    b ~ N(0, between_sd²) per run and e ~ N(0, within_sd²) per latency, so every configuration's
    true median is 20 ms (the median of the run medians' distribution and of the marginal)."""
    rng = np.random.default_rng(seed)
    between = rng.normal(0.0, between_sd, (configurations, runs, 1))
    within = rng.normal(0.0, within_sd, (configurations, runs, latencies))
    return TRUE_MEDIAN_MS * np.exp(between + within)


def coverage(intervals: list) -> float:
    return float(np.mean([e.ci_low <= TRUE_MEDIAN_MS <= e.ci_high for e in intervals]))


def test_run_level_median_interval_covers_the_truth_at_its_level_and_pooled_does_not():
    """The issue's Done-when: 400 configurations of 5 runs × 200 latencies, 95 % intervals."""
    configs = simulated_configurations(seed=2026)
    settings = BootstrapSettings(seed=1)
    run_level = [
        median_over_runs(list(runs), level=0.95, settings=settings, label=str(i))
        for i, runs in enumerate(configs)
    ]
    pooled = [
        quantile_ci(runs.ravel(), 0.5, level=0.95, settings=settings, label=str(i))
        for i, runs in enumerate(configs)
    ]
    assert all(e.n == RUNS and e.n_unit == "runs" and e.ci_low > 0 for e in run_level)
    run_cover, pooled_cover = coverage(run_level), coverage(pooled)
    message = (
        f"95 % intervals for the median over {CONFIGURATIONS} configurations: run-level {run_cover:.1%}, "
        f"pooled latencies (the old method) {pooled_cover:.1%}"
    )
    print(message)
    assert 0.93 <= run_cover <= 0.97, message
    assert pooled_cover < 0.5, message  # it counts within-run noise only


def test_p90_and_mean_over_runs_cover_their_truths():
    """The same run-level logic for the 90 % quantile and the mean (known in closed form)."""
    configs = simulated_configurations(seed=7, configurations=300)
    true_p90 = TRUE_MEDIAN_MS * math.exp(stats.norm.ppf(0.9) * WITHIN_SD)  # a run's p90, at the median run
    true_mean = TRUE_MEDIAN_MS * math.exp((BETWEEN_SD**2 + WITHIN_SD**2) / 2)  # the log-normal mean
    p90 = [quantile_over_runs(list(runs), 0.9) for runs in configs]
    means = [mean_over_runs(list(runs)) for runs in configs]
    p90_cover = np.mean([e.ci_low <= true_p90 <= e.ci_high for e in p90])
    mean_cover = np.mean([e.ci_low <= true_mean <= e.ci_high for e in means])
    assert 0.92 <= p90_cover <= 0.98 and 0.92 <= mean_cover <= 0.98, (p90_cover, mean_cover)


def test_median_over_runs_by_hand():
    runs = [
        np.array([10.0, 11.0, 12.0, 13.0]),
        np.array([12.0, 12.5, 13.5]),
        np.array([9.0, 9.5, 10.5, 11.0, 30.0]),
    ]
    estimate = median_over_runs(runs, level=0.9)
    logs = np.log([11.5, 12.5, 10.5])
    low, high = stats.t.interval(0.9, 2, loc=logs.mean(), scale=stats.sem(logs))
    assert estimate.estimate == pytest.approx(math.exp(logs.mean()))
    assert (estimate.ci_low, estimate.ci_high) == pytest.approx((math.exp(low), math.exp(high)))
    assert (estimate.n, estimate.n_unit, estimate.level) == (3, "runs", 0.9)


def test_one_run_gives_the_within_run_interval_and_says_so():
    rng = np.random.default_rng(3)
    run = rng.lognormal(2.0, 0.1, 300)
    estimate = median_over_runs([run], settings=BootstrapSettings(seed=4), label="x")
    within = quantile_ci(run, 0.5, settings=BootstrapSettings(seed=4), n_unit="latencies", label="x")
    assert (estimate.estimate, estimate.ci_low, estimate.ci_high) == (
        within.estimate,
        within.ci_low,
        within.ci_high,
    )
    assert estimate.n_unit == "latencies" and estimate.note.startswith(ONE_RUN_NOTE)
    assert mean_over_runs([run]).note.startswith(ONE_RUN_NOTE)


def test_degenerate_runs_give_no_interval_and_say_why():
    assert median_over_runs([]).estimate is None and "no run" in median_over_runs([]).note
    equal = median_over_runs([np.full(10, 5.0), np.full(7, 5.0)])
    assert equal.estimate == pytest.approx(5.0) and equal.ci_low is None and "equal" in equal.note
    # a run without a usable latency (NaN, 0) does not count as a run
    assert median_over_runs([np.array([np.nan, 0.0]), np.array([4.0, 5.0, 6.0])]).n_unit == "latencies"


def test_relative_half_width_is_the_median_interval_s():
    runs = [[1_000_000, 1_100_000, 1_050_000], [1_200_000, 1_150_000], [990_000, 1_010_000, 1_000_000]]
    estimate = median_over_runs([np.asarray(r, float) for r in runs])
    assert relative_half_width(0.95)(runs) == pytest.approx(
        (estimate.ci_high - estimate.ci_low) / 2 / estimate.estimate
    )
    one = [float(v) for v in np.linspace(1.0, 2.0, 101)]  # one run: its within-run interval
    within = median_over_runs([np.asarray(one)])
    assert relative_half_width(0.95)([one]) == pytest.approx(
        (within.ci_high - within.ci_low) / 2 / within.estimate
    )
    assert relative_half_width(0.95)([[5.0, 5.0], [5.0]]) is None


# -- variance components ------------------------------------------------------------------------


def test_variance_components_match_statsmodels_mixedlm_on_balanced_runs():
    """REML on balanced one-way data equals the ANOVA estimator (when the latter is > 0)."""
    import statsmodels.formula.api as smf

    rng = np.random.default_rng(5)
    runs = list(TRUE_MEDIAN_MS * np.exp(rng.normal(0, 0.05, (6, 1)) + rng.normal(0, 0.02, (6, 40))))
    components = variance_components(runs)
    frame = pd.DataFrame({"y": np.log(np.concatenate(runs)), "run": np.repeat(np.arange(6), 40)})
    with warnings.catch_warnings():  # statsmodels' "may be on the boundary" heuristic: small variances
        warnings.simplefilter("ignore")
        fit = smf.mixedlm("y ~ 1", frame, groups=frame["run"]).fit(reml=True, method="bfgs", gtol=1e-10)
    assert components.between_run_var == pytest.approx(float(fit.cov_re.iloc[0, 0]), rel=1e-6)
    assert components.within_run_var == pytest.approx(float(fit.scale), rel=1e-6)
    assert components.ratio == pytest.approx(components.between_run_var / components.within_run_var)
    assert (components.n_runs, components.n_latencies) == (6, 240)


def test_variance_components_of_unbalanced_runs_match_an_anova_table():
    """Unbalanced runs: MSB and MSW from statsmodels' ANOVA table, n0 by Searle's formula."""
    import statsmodels.api as sm
    import statsmodels.formula.api as smf

    rng = np.random.default_rng(8)
    sizes = [12, 30, 7, 21]
    runs = [np.exp(rng.normal(b, 0.03, n)) for b, n in zip(rng.normal(0, 0.1, 4), sizes)]
    frame = pd.DataFrame(
        {"y": np.log(np.concatenate(runs)), "run": np.repeat(np.arange(4), sizes).astype(str)}
    )
    table = sm.stats.anova_lm(smf.ols("y ~ C(run)", frame).fit())
    msb, msw = table["sum_sq"].iloc[0] / table["df"].iloc[0], table["sum_sq"].iloc[1] / table["df"].iloc[1]
    total = sum(sizes)
    n0 = (total - sum(n * n for n in sizes) / total) / 3
    components = variance_components(runs)
    assert components.within_run_var == pytest.approx(msw)
    assert components.between_run_var == pytest.approx(max((msb - msw) / n0, 0.0))


def test_variance_components_truncate_at_zero_and_handle_one_run():
    rng = np.random.default_rng(9)
    same = [np.exp(rng.normal(0, 0.05, 50)) for _ in range(4)]  # no between-run effect at all
    components = variance_components(same)
    assert components.between_run_var >= 0.0
    one = variance_components([np.array([1.0, 2.0, 3.0])])
    assert one.between_run_var is None and one.within_run_var > 0 and "one run" in one.note


# -- Kalibera–Jones recommendation --------------------------------------------------------------


def test_recommended_runs_is_the_fewest_that_reach_the_target():
    components = VarianceComponents(5, 1000, between_run_var=0.05**2, within_run_var=0.01**2, ratio=25.0)
    advice = recommended_runs(components, target_rel_half_width=0.02, level=0.95)
    assert advice.iterations_per_run == 200
    assert advice.predicted_rel_half_width <= 0.02
    assert predicted_rel_half_width(components, advice.runs - 1, 200, 0.95) > 0.02
    # (1.96 × 0.05 / log 1.02)² ≈ 24.6 by the normal approximation; t makes it a few more
    assert 25 <= advice.runs <= 30 and "more runs" in advice.note


def test_recommended_runs_reach_the_target_in_simulation():
    """Collect the recommended number of runs: the median's half-width is then near the target."""
    components = VarianceComponents(
        5, 1000, between_run_var=BETWEEN_SD**2, within_run_var=WITHIN_SD**2, ratio=25.0
    )
    advice = recommended_runs(components, target_rel_half_width=0.03)
    configs = simulated_configurations(seed=11, configurations=200, runs=advice.runs)
    widths = [relative_half_width()(list(runs)) for runs in configs]
    assert 0.025 <= float(np.median(widths)) <= 0.035, (advice, float(np.median(widths)))


def test_cost_optimal_iterations_follow_kalibera_jones():
    components = VarianceComponents(4, 400, between_run_var=1e-4, within_run_var=4e-2, ratio=2.5e-3)
    # sqrt(c_run / c_iteration × σ_w² / σ_b²) = sqrt(2 s / 0.01 s × 400) ≈ 283
    assert optimal_iterations(components, 2.0, 0.01) == round(math.sqrt(200 * 400))
    advice = recommended_runs(components, run_cost_s=2.0, iteration_cost_s=0.01)
    assert advice.iterations_per_run == 283 and advice.runs >= 2
    none = recommended_runs(VarianceComponents(1, 50, None, 0.01, None))
    assert none.runs is None and "at least 2 runs" in none.note


def test_per_run_quantiles_match_numpy_run_by_run_whatever_the_run_lengths():
    """The vectorised per-run quantiles (one call per run length) against np.quantile of each run."""
    rng = np.random.default_rng(7)
    runs = [rng.lognormal(0, 0.3, n) for n in (100, 100, 37, 1, 100, 2, 37)]
    for q in (0.0, 0.5, 0.9, 0.99, 1.0):
        assert np.array_equal(per_run_quantiles(runs, q), [np.quantile(run, q) for run in runs])


def test_runs_with_a_bad_latency_lose_only_that_latency():
    runs = [np.array([1.0, 2.0, np.nan, 0.0, 3.0]), np.array([np.inf, -1.0]), np.array([4.0, 5.0])]
    assert [r.tolist() for r in _usable_runs(runs)] == [[1.0, 2.0, 3.0], [4.0, 5.0]]
    assert [r.tolist() for r in _usable_runs([[1, 2], [3]])] == [[1.0, 2.0], [3.0]]
