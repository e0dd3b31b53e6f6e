"""Intervals of ratios: a paired ratio of means (the same runs on both sides) and a ratio of the
medians of two independent samples, each bootstrapped (BCa on small samples, percentile on big).

Apart from edgestats.analysis.intervals, which holds the Estimate, the bootstrap and the one-sample
intervals they build on, because a ratio has its own questions (pairs with a missing side, a
denominator at 0, a degenerate side) and only breakdown and pipeline ask for one.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from edgestats.analysis.intervals import (
    DEFAULT_LEVEL,
    BootstrapSettings,
    Estimate,
    bootstrap,
    clean_values,
    no_interval,
    spread_problem,
)


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
    resampling units as pairs. Pairs with a missing side are left out."""
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
        return no_interval(estimate, n, n_unit, level, "bootstrap-bca", problem)
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
    workers over stall at 1 worker), each resampled on its own."""
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
