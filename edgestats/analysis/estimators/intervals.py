"""Confidence intervals, each returned as an `Estimate` that says how it was made and on what.

Which interval for which statistic (docs/architecture.md §6):

- medians, percentiles and ratios: bootstrap BCa (scipy.stats.bootstrap) on small samples;
  for a quantile of a big sample the distribution-free order-statistic interval (below), because
  BCa's jackknife costs O(n²) and a 100k-latency run would dominate the whole analysis, while
  the order-statistic interval is exact for any continuous distribution and costs one O(n)
  selection (np.partition). Ratios of big samples use the percentile bootstrap (O(n) per
  resample) for the same reason.
- means: Student t.
- correlations: Fisher z (Pearson), Fisher z with the Bonett–Wright variance (Spearman).

Where an interval cannot be made (n < 2, all values equal, too few values for the level), the
estimate is still given but ci_low/ci_high are None and `note` says why: a NaN is never
presented as a result. Every bootstrap takes an explicit seed, so results are reproducible.

This module holds the Estimate, the bootstrap and the intervals of one sample (means,
quantiles); ratios are in edgestats.analysis.estimators.ratios and correlations in
edgestats.analysis.estimators.correlations, built on these.
"""

from __future__ import annotations

import functools
import math
import warnings
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import stats

from edgestats.formatting import counted

DEFAULT_LEVEL = 0.95
DEFAULT_RESAMPLES = 2000
# Above this many values a quantile's interval comes from order statistics and a ratio's from the
# percentile bootstrap: BCa's jackknife is quadratic in n (see the module docstring).
DEFAULT_BCA_MAX_N = 500


@dataclass
class Estimate:
    """A point estimate with its interval, the sample it came from and the method used."""

    estimate: float | None
    ci_low: float | None
    ci_high: float | None
    level: float
    n: int
    n_unit: str
    method: str
    note: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            "estimate": finite_or_none(self.estimate),
            "ci_low": finite_or_none(self.ci_low),
            "ci_high": finite_or_none(self.ci_high),
            "level": self.level,
            "n": self.n,
            "n_unit": self.n_unit,
            "method": self.method,
            "note": self.note,
        }

    @property
    def has_interval(self) -> bool:
        return self.ci_low is not None and self.ci_high is not None


@dataclass(frozen=True)
class BootstrapSettings:
    """How much bootstrap work one interval may cost, and the seed all of them derive from."""

    n_resamples: int = DEFAULT_RESAMPLES
    bca_max_n: int = DEFAULT_BCA_MAX_N
    seed: int = 0

    def rng(self, label: str) -> np.random.Generator:
        """A generator per labelled estimate: the same estimate gets the same resamples whatever
        else is analysed in the same call (a filter that removes another group changes nothing)."""
        return np.random.default_rng([self.seed, zlib.crc32(label.encode())])


def finite_or_none(value: Any) -> float | None:
    """A float for JSON: NaN and ±inf become None (the caller's note says why)."""
    if value is None:
        return None
    value = float(value)
    return value if math.isfinite(value) else None


def clean_values(values: Any) -> np.ndarray:
    """A float array without NULL/NaN/inf (they are counted out by the caller, never guessed)."""
    array = np.asarray(values, dtype=float).ravel()
    return array[np.isfinite(array)]


def no_interval(
    estimate: float | None, n: int, n_unit: str, level: float, method: str, note: str
) -> Estimate:
    return Estimate(finite_or_none(estimate), None, None, level, n, n_unit, method, note)


def spread_problem(values: np.ndarray, n_unit: str, minimum: int = 2) -> str | None:
    """Why no interval can be made from these values, or None when one can."""
    if len(values) == 0:
        return f"not enough data: no {n_unit}"
    if len(values) < minimum:
        return f"not enough data: {counted(len(values), n_unit)} (an interval needs at least {minimum})"
    if np.all(values == values[0]):
        return (
            f"not enough data: all {len(values)} {n_unit} are equal, "
            "so there is no spread to build an interval from"
        )
    return None


def sample_quantile(values: np.ndarray, q: float) -> float:
    """Linear interpolation between order statistics: DuckDB's quantile_cont, numpy's default."""
    return float(np.quantile(values, q))


# -- means --------------------------------------------------------------------------------------


@functools.lru_cache(maxsize=8192)
def t_quantile(level: float, df: int) -> float:
    """The two-sided Student t quantile; cached, because scipy's ppf costs ~0.1 ms a call and a
    summary asks for thousands of intervals with few distinct (level, df)."""
    return float(stats.t.ppf(0.5 + level / 2, df))


def t_interval(n: int, mean: float, sd: float, level: float, n_unit: str) -> Estimate:
    """mean ± t·sd/√n, or no interval (with the reason) when n < 2 or sd is 0."""
    if n == 0:
        return no_interval(None, 0, n_unit, level, "t", f"not enough data: no {n_unit}")
    if n < 2:
        return no_interval(
            mean,
            n,
            n_unit,
            level,
            "t",
            f"not enough data: {counted(n, n_unit)} (an interval needs at least 2)",
        )
    if not sd > 1e-12 * max(abs(mean), 1e-300):
        return no_interval(
            mean,
            n,
            n_unit,
            level,
            "t",
            f"not enough data: all {n} {n_unit} are equal, so there is no spread to build an interval from",
        )
    half = t_quantile(level, n - 1) * sd / math.sqrt(n)
    return Estimate(mean, mean - half, mean + half, level, n, n_unit, "t")


def mean_t(values: Any, level: float = DEFAULT_LEVEL, n_unit: str = "runs") -> Estimate:
    """Mean with its Student-t interval."""
    x = clean_values(values)
    if len(x) == 0:
        return t_interval(0, math.nan, math.nan, level, n_unit)
    if len(x) > 1 and np.all(x == x[0]):
        return t_interval(len(x), float(x[0]), 0.0, level, n_unit)
    return t_interval(
        len(x), float(np.mean(x)), float(np.std(x, ddof=1)) if len(x) > 1 else 0.0, level, n_unit
    )


def mean_t_from_moments(
    n: int, total: float, total_sq: float, level: float = DEFAULT_LEVEL, n_unit: str = "latencies"
) -> Estimate:
    """The t interval of a mean from (n, Σx, Σx²), as DuckDB aggregates them: the values never
    leave the database."""
    if n == 0:
        return t_interval(0, math.nan, math.nan, level, n_unit)
    mean = total / n
    variance = max((total_sq - n * mean * mean) / (n - 1), 0.0) if n > 1 else 0.0
    return t_interval(n, mean, math.sqrt(variance), level, n_unit)


# -- quantiles ----------------------------------------------------------------------------------


@functools.lru_cache(maxsize=8192)
def order_statistic_ranks(n: int, q: float, level: float) -> tuple[int, int] | None:
    """1-based ranks (r, s) with P(X_(r) <= ξ_q <= X_(s)) >= level for any continuous
    distribution: the count of values below ξ_q is Binomial(n, q), so the coverage is
    F(s-1) - F(r-1). None when the sample is too small to reach the level on both sides."""
    alpha = 1.0 - level
    r = int(stats.binom.ppf(alpha / 2, n, q))
    s = int(stats.binom.ppf(1 - alpha / 2, n, q)) + 1
    if r < 1 or s > n:
        return None
    return r, s


def order_statistic_ci(values: np.ndarray, q: float, level: float, n_unit: str) -> Estimate:
    """Quantile with its distribution-free order-statistic interval, in O(n)."""
    n = len(values)
    ranks = order_statistic_ranks(n, q, level)
    estimate = sample_quantile(values, q)
    if ranks is None:
        return no_interval(
            estimate,
            n,
            n_unit,
            level,
            "order-statistic",
            f"not enough data: {n} {n_unit} are too few for a {level:.0%} interval of the {q:.0%} quantile",
        )
    r, s = ranks
    low, high = np.partition(values, [r - 1, s - 1])[[r - 1, s - 1]]
    return Estimate(estimate, float(low), float(high), level, n, n_unit, "order-statistic")


def _quantile_statistic(q: float) -> Callable[[np.ndarray, int], np.ndarray]:
    def statistic(sample: np.ndarray, axis: int = -1) -> np.ndarray:
        return np.quantile(sample, q, axis=axis)

    return statistic


def bootstrap(
    samples: Sequence[np.ndarray],
    statistic: Callable,
    *,
    level: float,
    settings: BootstrapSettings,
    label: str,
    paired: bool = False,
    method: str = "BCa",
) -> tuple[float, float] | None:
    """scipy's bootstrap interval, vectorised, seeded by `label`; None when it is degenerate
    (scipy warns and returns NaN when e.g. every resample gives the same statistic).

    Callers pass samples sorted: resampling draws indices, so the same values in another order
    (DuckDB returns grouped rows in no fixed order) would give another interval."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            result = stats.bootstrap(
                tuple(samples),
                statistic,
                n_resamples=settings.n_resamples,
                vectorized=True,
                paired=paired,
                axis=-1,
                confidence_level=level,
                method=method,
                rng=settings.rng(label),
            )
        except (ValueError, ZeroDivisionError, FloatingPointError):
            return None
    low, high = result.confidence_interval
    if not (math.isfinite(low) and math.isfinite(high)):
        return None
    return float(low), float(high)


def quantile_ci(
    values: Any,
    q: float,
    *,
    level: float = DEFAULT_LEVEL,
    settings: BootstrapSettings | None = None,
    n_unit: str = "latencies",
    label: str = "",
) -> Estimate:
    """Quantile q (0.5 = median) with a BCa interval for small samples, order statistics for big."""
    settings = settings or BootstrapSettings()
    x = clean_values(values)
    estimate = sample_quantile(x, q) if len(x) else None
    problem = spread_problem(x, n_unit)
    if problem:
        return no_interval(estimate, len(x), n_unit, level, "bootstrap-bca", problem)
    if len(x) > settings.bca_max_n:
        return order_statistic_ci(x, q, level, n_unit)
    interval = bootstrap(
        [np.sort(x)], _quantile_statistic(q), level=level, settings=settings, label=f"q{q}:{label}"
    )
    if interval is None:
        fallback = order_statistic_ci(x, q, level, n_unit)
        fallback.note = (
            "BCa was degenerate for this sample; order-statistic interval instead"
            if fallback.has_interval
            else fallback.note
        )
        return fallback
    return Estimate(estimate, interval[0], interval[1], level, len(x), n_unit, "bootstrap-bca")
