"""Intervals of ratios: a paired ratio of means (the same runs on both sides) and a ratio of the
medians of two independent samples.

A bootstrap resamples only where there are many values (at least MIN_RESAMPLED a side): a
percentile or BCa interval of a few values cannot be wider than their range (with 3 values it is
[min, max], 75 % coverage at most; docs/methodology.md §4), and breakdown's runs and pipeline's
imported runs are often 2-5. Below that, the ratio gets a t interval on the log scale, which is
honest with 2 values (t with its few degrees of freedom) and stays above 0:

- paired ratio of means: the delta method on log(mean(x) / mean(y)), whose linearised per-unit
  value is x/x̄ - y/ȳ (the ratio estimator's variance, Cochran 1977 §6.4), with t_{n-1};
- ratio of medians: the ratio of the two sides' geometric means (the median of a log-normal) with
  Welch's t on the logs (Welch 1947; the same arithmetic as compare's run-level ratios).

Apart from edgestats.analysis.estimators.intervals, which holds the Estimate, the bootstrap and the one-sample
intervals they build on, because a ratio has its own questions (pairs with a missing side, a
denominator at 0, a degenerate side) and only breakdown and pipeline ask for one.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from edgestats.analysis.estimators.intervals import (
    DEFAULT_LEVEL,
    BootstrapSettings,
    Estimate,
    bootstrap,
    clean_values,
    no_interval,
    spread_problem,
    t_quantile,
)
from edgestats.analysis.estimators.welch import ratio_interval, welch_log

# The fewest values (a side) a bootstrap interval resamples (the module docstring).
MIN_RESAMPLED = 10
# Values whose logs span more than this (e^50: 21 orders of magnitude) are not a spread of one
# quantity but a stray value (a denormal 1e-313 s beside 10 s): a log-scale interval of them
# would overflow, so they get none.
MAX_LOG_SPAN = 50.0
PAIRED_LOG_METHOD = "t on the log scale (delta method, paired)"
WELCH_LOG_METHOD = "welch t on the log scale (ratio of geometric means)"


def _ratio_of_means(numerator: np.ndarray, denominator: np.ndarray, axis: int = -1) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.mean(numerator, axis=axis) / np.mean(denominator, axis=axis)


def _ratio_of_medians(numerator: np.ndarray, denominator: np.ndarray, axis: int = -1) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.median(numerator, axis=axis) / np.median(denominator, axis=axis)


def paired_ratio_of_means(
    numerator: Any,
    denominator: Any,
    *,
    level: float = DEFAULT_LEVEL,
    settings: BootstrapSettings | None = None,
    n_unit: str = "runs",
    label: str = "",
) -> Estimate:
    """mean(numerator) / mean(denominator) over the same units (e.g. load_model / steady per run),
    resampling units as pairs, or with fewer than MIN_RESAMPLED pairs the paired delta-method t
    interval on the log scale. Pairs with a missing side are left out."""
    settings = settings or BootstrapSettings()
    num, den = np.asarray(numerator, dtype=float), np.asarray(denominator, dtype=float)
    keep = np.isfinite(num) & np.isfinite(den)
    num, den = num[keep], den[keep]
    n = len(num)
    if n == 0:
        return no_interval(
            None, 0, n_unit, level, "bootstrap-bca", f"not enough data: no {n_unit} with both values"
        )
    if np.mean(den) <= 0:
        return no_interval(
            None, n, n_unit, level, "bootstrap-bca", "the denominator's mean is 0: the ratio is unbounded"
        )
    estimate = float(np.mean(num) / np.mean(den))
    with np.errstate(divide="ignore", invalid="ignore"):
        ratios = num / den
    problem = spread_problem(ratios, n_unit)  # all-equal per-unit ratios: nothing to resample
    if problem:
        return no_interval(
            estimate, n, n_unit, level, "bootstrap-bca" if n >= MIN_RESAMPLED else PAIRED_LOG_METHOD, problem
        )
    if n < MIN_RESAMPLED:
        return paired_log_ratio(num, den, level=level, n_unit=n_unit)
    method = "BCa" if n <= settings.bca_max_n else "percentile"
    order = np.lexsort((den, num))
    interval = bootstrap(
        [num[order], den[order]],
        _ratio_of_means,
        level=level,
        settings=settings,
        label=f"ratio:{label}",
        paired=True,
        method=method,
    )
    name = f"bootstrap-{method.lower()}"
    if interval is None:
        return no_interval(estimate, n, n_unit, level, name, "the bootstrap was degenerate for this sample")
    return Estimate(estimate, interval[0], interval[1], level, n, n_unit, name)


def paired_log_ratio(num: np.ndarray, den: np.ndarray, *, level: float, n_unit: str) -> Estimate:
    """mean(num) / mean(den) with the delta-method t interval of its log: se² = var(num/x̄ -
    den/ȳ) / n, exp(±t_{n-1}·se) around the ratio (the module docstring). Needs both means > 0."""
    n, x_bar, y_bar = len(num), float(np.mean(num)), float(np.mean(den))
    if not x_bar > 0:
        return no_interval(
            x_bar / y_bar,
            n,
            n_unit,
            level,
            PAIRED_LOG_METHOD,
            "the numerator's mean is not above 0: no log-scale interval",
        )
    linearised = num / x_bar - den / y_bar
    se = float(np.std(linearised, ddof=1)) / math.sqrt(n)
    ratio = x_bar / y_bar
    half = t_quantile(level, n - 1) * se
    return Estimate(
        ratio, ratio * math.exp(-half), ratio * math.exp(half), level, n, n_unit, PAIRED_LOG_METHOD
    )


def welch_log_ratio(num: np.ndarray, den: np.ndarray, *, level: float, n_unit: str) -> Estimate:
    """The ratio of the two sides' geometric means with Welch's t interval of the difference of their
    mean logs, mapped back by exp (the module docstring). Needs positive values and 2 a side."""
    n = len(num) + len(den)
    with np.errstate(divide="ignore", invalid="ignore"):
        log_num, log_den = np.log(num), np.log(den)
    why = (
        "a value of 0 or less"
        if np.any(num <= 0) or np.any(den <= 0)
        else "values or sides orders of magnitude apart"
        if max(np.ptp(log_num), np.ptp(log_den), abs(np.mean(log_num) - np.mean(log_den))) >= MAX_LOG_SPAN
        else None
    )
    if why:
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            medians = float(np.median(num) / np.median(den))
        note = f"{why}: no interval on the log scale (the estimate is the ratio of the medians)"
        return no_interval(medians, n, n_unit, level, WELCH_LOG_METHOD, note)
    estimate = math.exp(float(np.mean(log_num) - np.mean(log_den)))
    short = next((side for side in (log_num, log_den) if len(side) < 2), None)
    if short is not None or (np.ptp(log_num) == 0 and np.ptp(log_den) == 0):
        why = spread_problem(short if short is not None else log_num, n_unit)
        where = "one side" if short is not None else "both sides"
        return no_interval(estimate, n, n_unit, level, WELCH_LOG_METHOD, f"{why} (on {where} of the ratio)")
    low, high = ratio_interval(welch_log(log_den, log_num), level)
    return Estimate(estimate, float(low), float(high), level, n, n_unit, WELCH_LOG_METHOD)


def ratio_of_medians(
    numerator: Any,
    denominator: Any,
    *,
    level: float = DEFAULT_LEVEL,
    settings: BootstrapSettings | None = None,
    n_unit: str = "epochs",
    label: str = "",
) -> Estimate:
    """median(numerator) / median(denominator) of two independent samples (e.g. fetch stall at 0
    workers over stall at 1 worker), each resampled on its own; with fewer than MIN_RESAMPLED
    values on a side, the ratio of geometric means with Welch's log-t interval."""
    settings = settings or BootstrapSettings()
    num, den = clean_values(numerator), clean_values(denominator)
    n = len(num) + len(den)
    if len(num) == 0 or len(den) == 0:
        return no_interval(
            None, n, n_unit, level, "bootstrap-bca", f"not enough data: one side has no {n_unit}"
        )
    if np.median(den) <= 0:
        return no_interval(
            None,
            n,
            n_unit,
            level,
            "bootstrap-bca",
            f"the denominator's median is {np.median(den):g}: the ratio is unbounded",
        )
    if min(len(num), len(den)) < MIN_RESAMPLED:
        return welch_log_ratio(num, den, level=level, n_unit=n_unit)
    estimate = float(np.median(num) / np.median(den))
    for side in (num, den):
        problem = spread_problem(side, n_unit)
        if problem:
            return no_interval(
                estimate, n, n_unit, level, "bootstrap-bca", problem + " (on one side of the ratio)"
            )
    method = "BCa" if max(len(num), len(den)) <= settings.bca_max_n else "percentile"
    interval = bootstrap(
        [np.sort(num), np.sort(den)],
        _ratio_of_medians,
        level=level,
        settings=settings,
        label=f"mratio:{label}",
        method=method,
    )
    name = f"bootstrap-{method.lower()}"
    if interval is None:
        return no_interval(estimate, n, n_unit, level, name, "the bootstrap was degenerate for this sample")
    return Estimate(estimate, interval[0], interval[1], level, n, n_unit, name)
