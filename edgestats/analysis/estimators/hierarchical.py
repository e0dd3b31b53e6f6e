"""Per-configuration latency figures whose unit is the RUN (docs/methodology.md).

Latencies within one run share that process's state (memory layout, frequency, what else the
machine did), so they are not independent draws: two identical runs differ by 1-8 % while a
run's thousands of latencies pin its own median to a fraction of that. Pooling every latency of
a configuration and taking an interval over them counts only within-run noise and is far too
narrow (the simulation in tests/analysis/test_hierarchical.py: 95 % intervals that cover the
truth a fraction of the time).

Method (run-level statistics, as Kalibera & Jones 2013 recommend for the top level of
repetition): each run gives one figure, its own quantile q of its latencies (median, p90, p99);
the configuration's figure is the geometric mean of those per-run figures, with the t interval
of their logs mapped back by exp (`geometric_mean_t`). The interval is exact when the per-run
log figures are normal (latencies are multiplicative: a slower process is slower by a factor),
needs no resampling, stays > 0, and is honest with few runs, where a two-stage (cluster)
bootstrap of 3-5 runs is known to undercover (its percentile interval of 5 runs is at most as
wide as their range). The mean latency is the mean of the runs' means with its log-scale t
interval (`positive_mean`). With ONE run nothing measures run-to-run variance: the interval is
the within-run one (BCa over 10 to --bca-max-n latencies, order statistics over fewer or more)
and the note says so.

`variance_components` splits the log-latency variance into between-run and within-run parts
(one-way random-effects ANOVA, method of moments; Searle, Casella & McCulloch 1992, §3.6), and
`recommended_runs` turns them into how many runs (and iterations per run) a target precision
needs (Kalibera & Jones 2013; Cochran 1977, §10.6 for the cost-optimal split): ±2 % for summary's
`recommendation`, ±5 % for `next_step`, the advice beside a median whose interval is wider than
±25 % or that rests on fewer than 3 runs.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
from scipy import stats

from edgestats.analysis.estimators.bounded import geometric_mean_t, positive_mean
from edgestats.analysis.estimators.intervals import (
    DEFAULT_LEVEL,
    BootstrapSettings,
    Estimate,
    clean_values,
    finite_or_none,
    no_interval,
    order_statistic_ci,
    quantile_ci,
    sample_quantile,
    spread_problem,
    t_quantile,
)
from edgestats.analysis.estimators.ratios import MIN_RESAMPLED
from edgestats.formatting import counted, format_number

ONE_RUN_NOTE = "one run: the interval covers within-run variance only"
# t with 1 degree of freedom is 12.7 at 95 %: two runs bound the spread between processes only loosely
TWO_RUNS_NOTE = "two runs: the interval rests on one degree of freedom, so it is wide"
RUN_LEVEL_METHOD = "run-level t on the log scale (geometric mean of per-run {what})"
ANOVA_ESTIMATOR = "one-way random-effects ANOVA (method of moments) on log latency, truncated at 0"
DEFAULT_TARGET_REL_HALF_WIDTH = 0.02  # the median known to ±2 %
MAX_RECOMMENDED_RUNS = 10_000


def _usable_runs(latencies_by_run: Sequence[Any]) -> list[np.ndarray]:
    """Each run's finite, positive latencies (a latency cannot be 0; logs need > 0); runs left
    with none are dropped."""
    runs = [np.asarray(run, dtype=float).ravel() for run in latencies_by_run]
    if runs and all(len(run) for run in runs):
        pooled = np.concatenate(runs)
        if np.all(np.isfinite(pooled) & (pooled > 0)):  # the usual case, checked in one pass
            return runs
    runs = [clean_values(run) for run in runs]
    return [run[run > 0] for run in runs if np.any(run > 0)]


def usable_runs(latencies_by_run: Sequence[Any]) -> list[np.ndarray]:
    """Each run's finite, positive latencies as a float array; runs left with none are dropped."""
    return _usable_runs(latencies_by_run)


def per_run_quantiles(runs: list[np.ndarray], q: float) -> np.ndarray:
    """np.quantile(run, q) of each run, in order, with one vectorised call per distinct run length
    (the runs of a configuration usually share their iteration count): a fleet's analysis asks
    for hundreds of thousands of them."""
    out = np.empty(len(runs))
    lengths = np.array([len(run) for run in runs])
    for length in np.unique(lengths):
        at = np.flatnonzero(lengths == length)
        out[at] = np.quantile(np.stack([runs[i] for i in at]), q, axis=1)
    return out


def _with_note(estimate: Estimate, note: str) -> Estimate:
    estimate.note = f"{note}; {estimate.note}" if estimate.note else note
    return estimate


def _within_run(
    latencies: np.ndarray, q: float, *, level: float, settings: BootstrapSettings | None, label: str
) -> Estimate:
    """Quantile q of one run's latencies: BCa from MIN_RESAMPLED latencies (order statistics above
    --bca-max-n), the distribution-free order-statistic interval below it (a bootstrap of a few
    values is their range)."""
    if len(latencies) >= MIN_RESAMPLED:
        return quantile_ci(latencies, q, level=level, settings=settings, n_unit="latencies", label=label)
    problem = spread_problem(latencies, "latencies")
    if problem:
        return no_interval(
            sample_quantile(latencies, q), len(latencies), "latencies", level, "order-statistic", problem
        )
    return order_statistic_ci(latencies, q, level, "latencies")


def quantile_over_runs(
    latencies_by_run: Sequence[Any],
    q: float,
    *,
    level: float = DEFAULT_LEVEL,
    settings: BootstrapSettings | None = None,
    label: str = "",
) -> Estimate:
    """Quantile q of a configuration's latency, the run as unit (see the module docstring)."""
    runs = _usable_runs(latencies_by_run)
    if len(runs) == 0:
        return Estimate(
            None,
            None,
            None,
            level,
            0,
            "runs",
            RUN_LEVEL_METHOD.format(what=f"q{q:g}"),
            "not enough data: no run has a latency",
        )
    if len(runs) == 1:
        return _with_note(_within_run(runs[0], q, level=level, settings=settings, label=label), ONE_RUN_NOTE)
    per_run = per_run_quantiles(runs, q)
    estimate = geometric_mean_t(per_run, level, n_unit="runs")
    estimate.method = RUN_LEVEL_METHOD.format(what="medians" if q == 0.5 else f"{q:.0%} quantiles")
    return _with_note(estimate, TWO_RUNS_NOTE) if len(runs) == 2 and estimate.has_interval else estimate


def median_over_runs(
    latencies_by_run: Sequence[Any],
    *,
    level: float = DEFAULT_LEVEL,
    settings: BootstrapSettings | None = None,
    label: str = "",
) -> Estimate:
    """The configuration's median latency, the run as unit: the geometric mean of the runs'
    medians with its log-scale t interval; one run: the within-run interval, said in the note."""
    return quantile_over_runs(latencies_by_run, 0.5, level=level, settings=settings, label=label)


def mean_over_runs(latencies_by_run: Sequence[Any], *, level: float = DEFAULT_LEVEL) -> Estimate:
    """The configuration's mean latency: the mean of the runs' means with its log-scale t
    interval; one run: the t interval over its latencies, said in the note."""
    runs = _usable_runs(latencies_by_run)
    if len(runs) == 1:
        return _with_note(positive_mean(runs[0], level, n_unit="latencies"), ONE_RUN_NOTE)
    return positive_mean([run.mean() for run in runs], level, n_unit="runs")


def relative_half_width(level: float = DEFAULT_LEVEL) -> Callable[[Sequence[Sequence[float]]], float | None]:
    """For `collect --precision`: latencies of each run (any unit) -> half-width of the median's
    run-level interval as a fraction of the median; None when no interval can be made."""

    def half_width(latencies_by_run: Sequence[Sequence[float]]) -> float | None:
        estimate = median_over_runs([np.asarray(run, dtype=float) for run in latencies_by_run], level=level)
        if not estimate.has_interval or not estimate.estimate:
            return None
        return (estimate.ci_high - estimate.ci_low) / 2 / estimate.estimate

    return half_width


# -- variance components ------------------------------------------------------------------------


@dataclass(frozen=True)
class VarianceComponents:
    """Between-run and within-run variance of log latency (so sqrt(var) ≈ a relative SD)."""

    n_runs: int
    n_latencies: int
    between_run_var: float | None
    within_run_var: float | None
    ratio: float | None  # between / within
    estimator: str = ANOVA_ESTIMATOR
    note: str | None = None

    @property
    def mean_latencies_per_run(self) -> float:
        return self.n_latencies / self.n_runs if self.n_runs else 0.0

    def as_dict(self) -> dict[str, Any]:
        return {k: (finite_or_none(v) if isinstance(v, float) else v) for k, v in asdict(self).items()}


def variance_components(latencies_by_run: Sequence[Any]) -> VarianceComponents:
    """One-way random-effects ANOVA on log latency (unbalanced runs allowed): within = MSW,
    between = (MSB - MSW) / n0 with n0 = (N - Σnᵢ²/N) / (k - 1), truncated at 0."""
    logs = [np.log(run) for run in _usable_runs(latencies_by_run)]
    k, sizes = len(logs), np.array([len(run) for run in logs], dtype=float)
    total = int(sizes.sum())
    if k == 0:
        return VarianceComponents(0, 0, None, None, None, note="not enough data: no run has a latency")
    means = np.array([run.mean() for run in logs])
    ss_within = float(sum(((run - m) ** 2).sum() for run, m in zip(logs, means)))
    within = ss_within / (total - k) if total > k else None
    if k < 2:
        return VarianceComponents(
            1, total, None, within, None, note="one run: the between-run variance cannot be estimated"
        )
    grand = float((sizes * means).sum() / total)
    ms_between = float((sizes * (means - grand) ** 2).sum() / (k - 1))
    n0 = (total - float((sizes**2).sum()) / total) / (k - 1)
    if within is None:  # one latency per run: the runs' spread is all there is
        return VarianceComponents(
            k,
            total,
            ms_between,
            None,
            None,
            note="one latency per run: the within-run variance cannot be estimated",
        )
    between = max((ms_between - within) / n0, 0.0)
    ratio = between / within if within > 0 else None
    note = "between-run variance estimated below 0, reported as 0" if ms_between < within else None
    return VarianceComponents(k, total, between, within, ratio, note=note)


# -- how many runs ------------------------------------------------------------------------------


@dataclass(frozen=True)
class RunRecommendation:
    """Runs (and iterations per run) that make the median's interval half-width ≤ the target."""

    runs: int | None
    iterations_per_run: int | None
    predicted_rel_half_width: float | None
    target_rel_half_width: float
    level: float
    method: str = "Kalibera & Jones (2013): run-level variance σ_b² + σ_w²/m over n runs"
    note: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def predicted_rel_half_width(
    components: VarianceComponents, runs: int, iterations_per_run: float, level: float = DEFAULT_LEVEL
) -> float:
    """exp(t·sqrt((σ_b² + σ_w²/m) / n)) - 1: the relative half-width n runs of m iterations give."""
    variance = (components.between_run_var or 0.0) + (components.within_run_var or 0.0) / iterations_per_run
    return math.expm1(t_quantile(level, runs - 1) * math.sqrt(variance / runs))


def optimal_iterations(
    components: VarianceComponents, run_cost_s: float, iteration_cost_s: float
) -> int | None:
    """Cost-optimal iterations per run, sqrt((c_run / c_iteration) · σ_w² / σ_b²) (Kalibera &
    Jones 2013, after Cochran §10.6); None when the between-run variance is 0 (then only the
    total count of iterations matters)."""
    between, within = components.between_run_var, components.within_run_var
    if not between or within is None or run_cost_s <= 0 or iteration_cost_s <= 0:
        return None
    return max(1, round(math.sqrt(run_cost_s / iteration_cost_s * within / between)))


def recommended_runs(
    components: VarianceComponents,
    *,
    target_rel_half_width: float = DEFAULT_TARGET_REL_HALF_WIDTH,
    level: float = DEFAULT_LEVEL,
    iterations_per_run: float | None = None,
    run_cost_s: float | None = None,
    iteration_cost_s: float | None = None,
) -> RunRecommendation:
    """The fewest runs (≥ 2) whose predicted half-width is within the target, keeping the
    current iterations per run unless both costs are given (then the cost-optimal number)."""
    if components.between_run_var is None or components.n_runs < 2:
        return RunRecommendation(
            None,
            None,
            None,
            target_rel_half_width,
            level,
            note="needs at least 2 runs: with one, the between-run variance is unknown",
        )
    m = iterations_per_run or components.mean_latencies_per_run or 1.0
    optimal = (
        optimal_iterations(components, run_cost_s, iteration_cost_s)
        if run_cost_s and iteration_cost_s
        else None
    )
    m = float(optimal or m)
    variance = components.between_run_var + (components.within_run_var or 0.0) / m
    target_log = math.log1p(target_rel_half_width)
    z = float(stats.norm.ppf(0.5 + level / 2))
    runs = max(2, math.ceil((z / target_log) ** 2 * variance))  # the normal approximation, then t
    while (
        runs <= MAX_RECOMMENDED_RUNS
        and predicted_rel_half_width(components, runs, m, level) > target_rel_half_width
    ):
        runs += 1
    if runs > MAX_RECOMMENDED_RUNS:
        return RunRecommendation(
            None,
            round(m),
            None,
            target_rel_half_width,
            level,
            note=f"more than {MAX_RECOMMENDED_RUNS} runs: relax the target",
        )
    share = (components.within_run_var or 0.0) / m / variance if variance > 0 else 0.0
    note = f"within-run noise is {share:.0%} of a run's variance: " + (
        "more iterations per run would help"
        if share > 0.5
        else "more runs, not longer ones, narrow the interval"
    )
    return RunRecommendation(
        runs,
        round(m),
        predicted_rel_half_width(components, runs, m, level),
        target_rel_half_width,
        level,
        note=note,
    )


# -- the next step beside a wide interval -------------------------------------------------------

WIDE_REL_HALF_WIDTH = 0.25  # an interval wider than ±25 % of the median gets a next step
NEXT_STEP_TARGET = 0.05  # ... saying how many runs would reach ±5 %
MIN_ADVISED_RUNS = 3  # below 3 runs the between-run spread rests on at most one degree of freedom
NEXT_STEP_COMMAND = "edgestats collect --until-precise 5%"


def interval_rel_half_width(estimate: Estimate) -> float | None:
    """(high − low) / 2 / estimate: the measure `collect --until-precise` stops on; None without
    an interval."""
    if not estimate.has_interval or not estimate.estimate:
        return None
    return (estimate.ci_high - estimate.ci_low) / 2 / estimate.estimate


def next_step(median: Estimate, components: VarianceComponents, n_runs: int) -> dict[str, Any] | None:
    """What to do about a median whose interval is wider than ±25 % (interval_rel_half_width) or that
    rests on fewer than 3 runs: how many runs (at least 3) would make it ±5 % at the measured
    between-run spread (`recommended_runs` of these components, at the current iterations per
    run), and the command; None when the median is precise enough and has 3 runs or more."""
    width = interval_rel_half_width(median)
    wide = width is None or width > WIDE_REL_HALF_WIDTH
    if not wide and n_runs >= MIN_ADVISED_RUNS:
        return None
    advice = recommended_runs(components, target_rel_half_width=NEXT_STEP_TARGET, level=median.level)
    runs = max(advice.runs, MIN_ADVISED_RUNS) if advice.runs is not None else None
    if width is None:
        why = "no interval"
    elif wide:
        why = f"the interval is ±{format_number(100 * width)} %"
    else:
        why = f"{counted(n_runs, 'runs')} (fewer than {MIN_ADVISED_RUNS})"
    if runs is not None:
        target = f"±{NEXT_STEP_TARGET * 100:g} %"
        text = f"{why}: about {runs:,} runs would reach {target} at the measured between-run spread"
    elif n_runs < 2:
        text = f"{why}: one run cannot measure the between-run spread; collect at least {MIN_ADVISED_RUNS}"
    else:
        text = f"{why}: {advice.note}"
    return {
        "rel_half_width": width,
        "target_rel_half_width": NEXT_STEP_TARGET,
        "n_runs": n_runs,
        "runs_needed": runs,
        "more_runs": None if runs is None else max(runs - n_runs, 0),
        "command": NEXT_STEP_COMMAND,
        "text": f"{text} ({NEXT_STEP_COMMAND})",
    }
