"""compare's statistics on arrays: two tests, the verdict rule and the minimum detectable effect.
The tests are Welch's t on log per-run figures and Schuirmann's equivalence test
(docs/methodology.md, "compare: what a comparison can conclude").

Each function takes arrays with one comparison per element (or, for `welch_log`, per row of runs)
so that compare.py, which calls them for one configuration at a time, and the simulation tests,
which call them on thousands of simulated comparisons at once, run the same code.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np
from scipy import optimize, special, stats

RESOLVE_TARGET = 0.05  # the precision an inconclusive verdict names: the ratio known to ±5 %
MAX_RUNS = 10_000  # beyond this many runs the advice is to relax the target, not to collect


# The power the minimum detectable effect is quoted at: the usual planning convention (Cohen 1988).
DETECT_POWER = 0.8
# Verdict codes; compare.py words them per metric (slower/higher, faster/lower).
LARGER, SMALLER, SAME, INCONCLUSIVE = "larger", "smaller", "same", "inconclusive"


@dataclass(frozen=True)
class WelchLog:
    """Welch's two-sample t on logs (Welch 1947): d = mean(log B) - mean(log A), its standard
    error, and the Welch-Satterthwaite degrees of freedom (NaN where every value is equal)."""

    d: np.ndarray
    se: np.ndarray
    df: np.ndarray


def welch_log(log_a: np.ndarray, log_b: np.ndarray) -> WelchLog:
    """Welch over the last axis: log_a (..., n_a) and log_b (..., n_b), with n_a, n_b >= 2."""
    log_a, log_b = np.asarray(log_a, dtype=float), np.asarray(log_b, dtype=float)
    n_a, n_b = log_a.shape[-1], log_b.shape[-1]
    var_a = np.var(log_a, axis=-1, ddof=1) / n_a
    var_b = np.var(log_b, axis=-1, ddof=1) / n_b
    with np.errstate(divide="ignore", invalid="ignore"):
        df = (var_a + var_b) ** 2 / (var_a**2 / (n_a - 1) + var_b**2 / (n_b - 1))
    return WelchLog(np.mean(log_b, axis=-1) - np.mean(log_a, axis=-1), np.sqrt(var_a + var_b), df)


def pooled_welch(
    d: np.ndarray, var_a: np.ndarray, n_a: np.ndarray, var_b: np.ndarray, n_b: np.ndarray
) -> WelchLog:
    """The mean of k configurations' log ratios (the last axis), for the geometric mean of their
    ratios B/A: d_i = mean(log B_i) - mean(log A_i), with var_a = s_a^2/n_a and var_b = s_b^2/n_b
    each configuration's squared standard errors. The configurations are fixed (the ones
    compared) and independent, the run is the unit: se = sqrt(sum(var_a + var_b)) / k, and the
    degrees of freedom are Welch-Satterthwaite's over all 2k variance components,
    (sum v)^2 / sum(v^2 / (n - 1)). For one configuration it is that configuration's Welch test."""
    d, var_a, var_b = (np.asarray(x, dtype=float) for x in (d, var_a, var_b))
    n_a, n_b = np.asarray(n_a, dtype=float), np.asarray(n_b, dtype=float)
    k = d.shape[-1]
    total = np.sum(var_a + var_b, axis=-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        df = total**2 / np.sum(var_a**2 / (n_a - 1) + var_b**2 / (n_b - 1), axis=-1)
    return WelchLog(np.mean(d, axis=-1), np.sqrt(total) / k, df)


def welch_p_value(w: WelchLog) -> np.ndarray:
    """Two-sided p of H0: equal means of logs (a ratio of geometric means of 1)."""
    return 2 * stats.t.sf(np.abs(w.d) / w.se, w.df)


def ratio_interval(w: WelchLog, level: float) -> tuple[np.ndarray, np.ndarray]:
    """exp of Welch's t interval of d: the interval of the ratio B/A, always positive."""
    half = stats.t.ppf(0.5 + level / 2, w.df) * w.se
    return np.exp(w.d - half), np.exp(w.d + half)


def equivalence_p_value(w: WelchLog, threshold: float) -> np.ndarray:
    """Schuirmann's (1987) two one-sided tests (TOST) of H0: the ratio lies outside the band
    [1/(1+t), 1+t], with Welch's t: the larger of the two one-sided p-values. p < a is the same as
    the 1 - 2a interval lying inside the band."""
    band = math.log1p(threshold)
    above_lower = stats.t.sf((w.d + band) / w.se, w.df)  # H0: ratio <= 1/(1+t)
    below_upper = stats.t.cdf((w.d - band) / w.se, w.df)  # H0: ratio >= 1+t
    return np.maximum(above_lower, below_upper)


def verdict_codes(
    ci_low: np.ndarray,
    ci_high: np.ndarray,
    p_holm: np.ndarray,
    p_equivalence_holm: np.ndarray,
    *,
    level: float,
    threshold: float,
) -> np.ndarray:
    """LARGER when Holm's p < 1 - level and the whole interval lies above 1+t; SMALLER likewise
    below 1/(1+t); SAME when Holm's TOST p < (1 - level)/2 (so, for one configuration, exactly
    when the level interval lies inside the band); INCONCLUSIVE otherwise. NaN (no interval, no
    test) is never significant."""
    ci_low, ci_high = np.asarray(ci_low, dtype=float), np.asarray(ci_high, dtype=float)
    alpha, upper, lower = 1.0 - level, 1.0 + threshold, 1.0 / (1.0 + threshold)
    significant = np.asarray(p_holm, dtype=float) < alpha
    # The interval check is implied by the TOST p for one configuration; kept so that a printed
    # "same" is never beside an interval that leaves the band (rounding at the edge).
    equivalent = (
        (np.asarray(p_equivalence_holm, dtype=float) < alpha / 2) & (ci_low >= lower) & (ci_high <= upper)
    )
    codes = np.full(np.broadcast(ci_low, ci_high).shape, INCONCLUSIVE, dtype=object)
    codes[equivalent] = SAME
    codes[significant & (ci_low > upper)] = LARGER
    codes[significant & (ci_high < lower)] = SMALLER
    return codes


# Gauss-Legendre nodes on (0, 1) for the two run-variance probabilities: 64 a side keep the MDE
# within 1e-5 (relative) of the exact noncentral t where Welch's df is fixed, from 2 to 100 runs.
QUADRATURE_NODES = 64
# With the SDs estimated (the printed MDE): 32 nodes a side for the new runs' variances and 16 for
# the measured SDs' sampling error keep it within 1e-4 (relative) of 64 and 48 nodes at a tenth of
# the cost (1 % where the noisier side has 2 runs, whose SD's error law has the heaviest tail).
ESTIMATED_NODES, SD_ERROR_NODES = 32, 16


@dataclass(frozen=True)
class Design:
    """What the power of one comparison depends on: each side's SD of log figures and run count."""

    sd_a: float
    n_a: int
    sd_b: float
    n_b: int


@functools.lru_cache(maxsize=64)
def _variance_quantiles(n_runs: int, nodes: int) -> tuple[np.ndarray, np.ndarray]:
    """s^2 / sigma^2 for n_runs runs (chi-square over its df) at Gauss-Legendre nodes in
    probability, with the nodes' weights. Cached: a sweep has few distinct run counts."""
    x, weights = np.polynomial.legendre.leggauss(nodes)
    return stats.chi2.ppf((x + 1) / 2, n_runs - 1) / (n_runs - 1), weights / 2


def _variance_grid(
    design: Design, nodes: int = QUADRATURE_NODES
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Welch's standard error and df over the grid of both sides' sample variances, and each grid
    point's weight."""
    ratio_a, w_a = _variance_quantiles(design.n_a, nodes)
    ratio_b, w_b = _variance_quantiles(design.n_b, nodes)
    var_a = (design.sd_a**2 / design.n_a * ratio_a)[:, None]
    var_b = (design.sd_b**2 / design.n_b * ratio_b)[None, :]
    df = (var_a + var_b) ** 2 / (var_a**2 / (design.n_a - 1) + var_b**2 / (design.n_b - 1))
    return np.sqrt(var_a + var_b), df, w_a[:, None] * w_b[None, :]


def sd_error_scales(design: Design, nodes: int = SD_ERROR_NODES) -> tuple[np.ndarray, np.ndarray]:
    """u = s / sigma at Gauss-Legendre nodes in probability, with weights: the measured combined
    variance s_a^2/n_a + s_b^2/n_b taken as sigma^2 chi^2_nu / nu with nu Welch-Satterthwaite's
    df of the measured SDs (Satterthwaite 1946), the true SDs both s / u (their ratio as measured)."""
    var_a, var_b = design.sd_a**2 / design.n_a, design.sd_b**2 / design.n_b
    nu = (var_a + var_b) ** 2 / (var_a**2 / (design.n_a - 1) + var_b**2 / (design.n_b - 1))
    x, weights = np.polynomial.legendre.leggauss(nodes)
    return np.sqrt(stats.chi2.ppf((x + 1) / 2, nu) / nu), weights / 2


def slower_power_curve(
    design: Design, *, threshold: float, level: float, alpha_test: float, sds_estimated: bool = False
):
    """power(log_ratio): the probability that compare calls B slower (higher) when the true
    difference of mean logs is log_ratio, for normal log figures with these SDs. "Slower" is
    d > max(c_test * se, log(1+t) + c_ci * se), with se and Welch's df estimated: c_ci the
    interval's t quantile (level) and c_test the test's at alpha_test (Holm's first step, which
    every later step implies). d is independent of the sample variances, so the power is the
    normal probability of that event averaged over the two variances' chi-square laws (a 2-D
    quadrature): Welch's df is random, which a noncentral t with a fixed df leaves out.

    sds_estimated: the design's SDs are measured, not known; the power is also averaged over
    their sampling error (`sd_error_scales`: true SDs s / u). At SDs s / u the event is
    d u > max(c_test se, log(1+t) u + c_ci se) with d ~ N(log_ratio u, sd_d^2) and se, sd_d at
    the measured SDs, so one more axis of the same quadrature gives it."""
    nodes = ESTIMATED_NODES if sds_estimated else QUADRATURE_NODES
    se, df, weight = _variance_grid(design, nodes)
    # -stdtrit(df, q) is t's upper q quantile (scipy.special: stats.t.isf without its overhead)
    c_ci = -special.stdtrit(df, (1 - level) / 2)
    c_test = c_ci if alpha_test >= 1 - level else -special.stdtrit(df, alpha_test / 2)
    sd_d = math.sqrt(design.sd_a**2 / design.n_a + design.sd_b**2 / design.n_b)
    weight, band = weight.ravel(), math.log1p(threshold)
    scale, scale_weight = sd_error_scales(design) if sds_estimated else (np.ones(1), np.ones(1))
    bar = np.maximum((c_test * se).ravel()[None, :], band * scale[:, None] + (c_ci * se).ravel()[None, :])

    def power(log_ratio: float) -> float:
        return float(scale_weight @ (special.ndtr((log_ratio * scale[:, None] - bar) / sd_d) @ weight))

    return power


def min_detectable_pct(
    design: Design,
    *,
    threshold: float,
    level: float,
    alpha_test: float,
    power: float = DETECT_POWER,
    sds_estimated: bool = False,
) -> float | None:
    """The smallest true increase of B over A, in %, that compare calls slower (higher) with
    probability `power`, at these SDs and run counts (`slower_power_curve` solved for the ratio;
    sds_estimated: averaged over the measured SDs' sampling error, what compare prints).
    None where no finite change reaches that power (too few runs for the test's level)."""
    if not (design.sd_a > 0 or design.sd_b > 0) or min(design.n_a, design.n_b) < 2:
        return None
    curve = slower_power_curve(
        design, threshold=threshold, level=level, alpha_test=alpha_test, sds_estimated=sds_estimated
    )
    high = math.log1p(threshold) + 4 * math.sqrt(design.sd_a**2 / design.n_a + design.sd_b**2 / design.n_b)
    while curve(high) < power:  # 2 runs a side have heavy tails: widen until the bracket holds it
        high *= 2
        if high > 700:  # exp would overflow: no change of any size is found that often
            return None
    log_ratio = optimize.brentq(lambda x: curve(x) - power, 0.0, high, xtol=1e-12, rtol=1e-12)
    return 100.0 * math.expm1(log_ratio)


def measured_min_detectable_pct(design: Design, **keywords) -> float | None:
    """What compare prints: `min_detectable_pct` with the design's SDs measured (sds_estimated),
    so that at the printed change the power, over the runs that measured it too, is `power`."""
    return min_detectable_pct(design, **keywords, sds_estimated=True)


def welch_df(sd_a: float, sd_b: float, n: int) -> float:
    """Welch–Satterthwaite's degrees of freedom with n runs on each side."""
    var_a, var_b = sd_a**2 / n, sd_b**2 / n
    if var_a + var_b == 0:
        return float(2 * n - 2)
    return (var_a + var_b) ** 2 / (var_a**2 / (n - 1) + var_b**2 / (n - 1))


def runs_to_resolve(
    sd_a: float, sd_b: float, level: float, target: float = RESOLVE_TARGET, max_runs: int = MAX_RUNS
) -> int | None:
    """The fewest runs per configuration (both sides alike, at least 2) whose Welch interval of the
    ratio is at most ±target on the log scale at these SDs of log run medians; None past max_runs."""
    spread = sd_a**2 + sd_b**2
    bound = math.log1p(target)
    if spread == 0:
        return 2
    z = float(stats.norm.ppf(0.5 + level / 2))
    n = max(2, math.ceil(spread * (z / bound) ** 2))  # the normal approximation, then t (wider)
    while (
        n <= max_runs
        and stats.t.ppf(0.5 + level / 2, welch_df(sd_a, sd_b, n)) * math.sqrt(spread / n) > bound
    ):
        n += max(1, n // 50)  # steps of 2 % past 100 runs: the advice needs no more precision
    return n if n <= max_runs else None
