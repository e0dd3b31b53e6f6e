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


def _no_interval(
    estimate: float | None, n: int, n_unit: str, level: float, method: str, note: str
) -> Estimate:
    return Estimate(finite_or_none(estimate), None, None, level, n, n_unit, method, note)


def _spread_problem(values: np.ndarray, n_unit: str, minimum: int = 2) -> str | None:
    """Why no interval can be made from these values, or None when one can."""
    if len(values) == 0:
        return f"not enough data: no {n_unit}"
    if len(values) < minimum:
        return f"not enough data: {counted(len(values), n_unit)} (an interval needs at least {minimum})"
    if np.all(values == values[0]):
        return f"not enough data: all {len(values)} {n_unit} are equal, so there is no spread to build an interval from"
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
        return _no_interval(None, 0, n_unit, level, "t", f"not enough data: no {n_unit}")
    if n < 2:
        return _no_interval(
            mean,
            n,
            n_unit,
            level,
            "t",
            f"not enough data: {counted(n, n_unit)} (an interval needs at least 2)",
        )
    if not sd > 1e-12 * max(abs(mean), 1e-300):
        return _no_interval(
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
        return _no_interval(
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
    problem = _spread_problem(x, n_unit)
    if problem:
        return _no_interval(estimate, len(x), n_unit, level, "bootstrap-bca", problem)
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


# -- ratios -------------------------------------------------------------------------------------


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
        return _no_interval(
            None, 0, n_unit, level, "bootstrap-bca", f"not enough data: no {n_unit} with both values"
        )
    if np.mean(den) <= 0:
        return _no_interval(
            None, n, n_unit, level, "bootstrap-bca", "the denominator's mean is 0: the ratio is unbounded"
        )
    estimate = float(np.mean(num) / np.mean(den))
    with np.errstate(divide="ignore", invalid="ignore"):
        ratios = num / den
    problem = _spread_problem(ratios, n_unit)  # all-equal per-unit ratios: nothing to resample
    if problem:
        return _no_interval(estimate, n, n_unit, level, "bootstrap-bca", problem)
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
        return _no_interval(estimate, n, n_unit, level, name, "the bootstrap was degenerate for this sample")
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
        return _no_interval(
            None, n, n_unit, level, "bootstrap-bca", f"not enough data: one side has no {n_unit}"
        )
    if np.median(den) <= 0:
        return _no_interval(
            None,
            n,
            n_unit,
            level,
            "bootstrap-bca",
            f"the denominator's median is {np.median(den):g}: the ratio is unbounded",
        )
    estimate = float(np.median(num) / np.median(den))
    for side in (num, den):
        problem = _spread_problem(side, n_unit)
        if problem:
            return _no_interval(
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
        return _no_interval(estimate, n, n_unit, level, name, "the bootstrap was degenerate for this sample")
    return Estimate(estimate, interval[0], interval[1], level, n, n_unit, name)


# -- correlations -------------------------------------------------------------------------------


def fisher_z_interval(r: float, n: int, level: float, se_scale: float = 1.0) -> tuple[float, float] | None:
    """tanh(atanh(r) ± z·se/√(n-3)); None when n ≤ 3 or |r| = 1 (atanh is infinite there)."""
    if n <= 3 or not math.isfinite(r) or abs(r) >= 1.0:
        return None
    z = math.atanh(r)
    half = stats.norm.ppf(0.5 + level / 2) * se_scale / math.sqrt(n - 3)
    return math.tanh(z - half), math.tanh(z + half)


@dataclass
class Correlation:
    method: str  # pearson | spearman
    estimate: Estimate
    p_value: float | None

    def as_dict(self) -> dict[str, Any]:
        return {"method": self.method, **self.estimate.as_dict(), "p_value": finite_or_none(self.p_value)}


def _spearman_permutation_p(x: np.ndarray, y: np.ndarray) -> float:
    """Exact (all pairings) two-sided p of Spearman's rho for small n, where the t
    approximation scipy.stats.spearmanr uses is poor (it gives p = 0 for a perfect rho)."""
    y_centred = stats.rankdata(y) - (len(y) + 1) / 2

    def rho(x_ranks: np.ndarray, axis: int = -1) -> np.ndarray:  # Pearson of ranks = Spearman, ties included
        x_centred = x_ranks - x_ranks.mean(axis=axis, keepdims=True)
        return (x_centred * y_centred).sum(axis=axis) / np.sqrt(
            (x_centred**2).sum(axis=axis) * (y_centred**2).sum()
        )

    result = stats.permutation_test(
        (stats.rankdata(x),),
        rho,
        permutation_type="pairings",
        n_resamples=math.factorial(len(x)),
        vectorized=True,
    )
    return float(result.pvalue)


def correlation(
    x: Any, y: Any, method: str, *, level: float = DEFAULT_LEVEL, n_unit: str = "configurations"
) -> Correlation:
    """Pearson or Spearman correlation with its Fisher-z interval and p-value; pairs with a
    missing side are left out."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    keep = np.isfinite(x) & np.isfinite(y)
    x, y = x[keep], y[keep]
    n = len(x)
    name = f"fisher-z ({method})"
    if n < 3:
        return Correlation(
            method,
            _no_interval(
                None,
                n,
                n_unit,
                level,
                name,
                f"not enough data: {n} {n_unit} (a correlation needs at least 3)",
            ),
            None,
        )
    for side, label in ((x, "x"), (y, "y")):
        if np.all(side == side[0]):
            return Correlation(
                method,
                _no_interval(
                    None,
                    n,
                    n_unit,
                    level,
                    name,
                    f"not enough data: every {label} value is {side[0]:g}, so the correlation is undefined",
                ),
                None,
            )
    if method == "pearson":
        result = stats.pearsonr(x, y)
        r, p, se_scale = float(result.statistic), float(result.pvalue), 1.0
    else:
        result = stats.spearmanr(x, y)
        r = float(result.statistic)
        p = _spearman_permutation_p(x, y) if n <= 8 else float(result.pvalue)
        se_scale = math.sqrt(1 + r * r / 2)  # Bonett & Wright (2000)
    interval = fisher_z_interval(r, n, level, se_scale)
    if interval is None:
        why = (
            f"not enough data for an interval: n = {n} (Fisher z needs at least 4)"
            if n <= 3
            else f"r = {r:g}: the Fisher-z interval is undefined for a perfect correlation"
        )
        return Correlation(method, _no_interval(r, n, n_unit, level, name, why), p)
    return Correlation(method, Estimate(r, interval[0], interval[1], level, n, n_unit, name), p)
