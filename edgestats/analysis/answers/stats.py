"""answers' arithmetic on arrays: each ratio to the fastest, Holm over every pair, the verdict rule,
the runs an inconclusive ratio needs. Each candidate's ratio to the fastest is Welch's t on the log
scale of the runs' medians, as compare does it; the runs needed are how many would resolve an
inconclusive ratio (docs/cli/analyze.md, "answers").

- Ratio (Welch 1947, on logs; edgestats.analysis.estimators.welch): with x the logs of the fastest
  candidate's run medians and y the candidate's, the ratio is exp(mean y - mean x) (the ratio of
  the two geometric means: summary's two estimates divided), its interval exp(d ± t·se) with
  Welch's standard error and Welch–Satterthwaite degrees of freedom, always > 0; the p-value is
  that test's, two-sided.
- Selection (the fastest is chosen from the data, so "Y is slower than the fastest" is one of the
  group's k(k - 1)/2 pairwise claims, whichever pair the data pick): every pair of candidates gets
  Welch's two-sided p, and Holm's adjustment (Holm 1979) runs over all of them; a ratio's p_holm is
  its pair's. That holds the family-wise error of the group's "slower" claims, the choice of the
  fastest included, at alpha (Holm over the pairs vs the selected fastest alone did not: 7-9 % in
  an A/A audit of 5 equal runtimes). With two candidates it is the one test, as before.
- Verdict, at alpha = 1 - level: "slower" when the interval lies above 1 and Holm's p (over every
  pair in the group) is below alpha; else "no detectable difference within ±X %" when X <= 5 %,
  where X is the largest |ratio - 1| the interval allows, max(high - 1, 1 - low) (the interval
  rules out any larger difference either way; X is shown rounded up); else "inconclusive".
- Runs to resolve (Kalibera & Jones 2013: more runs, not longer ones, narrow a run-level
  interval): the fewest runs per configuration n, the same on both sides, whose Welch interval
  has a half-width of at most log(1.05) on the log scale (the ratio known to ±5 %) at the spreads
  measured: t(level, df_n) · sqrt((s_a² + s_b²) / n) <= log 1.05, with s_a, s_b the SDs of the two
  sides' log run medians (between-run spread plus a run median's own noise, as the interval sees
  it) and df_n Welch–Satterthwaite's for n a side.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from edgestats.analysis.estimators.multiplicity import holm
from edgestats.analysis.estimators.welch import ratio_interval, welch_log, welch_p_value

EQUIVALENCE_MAX = 0.05  # "no detectable difference within ±X %" only for X up to 5 %
SLOWER, SAME, INCONCLUSIVE, FASTEST = "slower", "no detectable difference", "inconclusive", "fastest"


@dataclass(frozen=True)
class Ratio:
    """A candidate's ratio to the fastest: estimate, interval (None without one), Welch's p."""

    estimate: float
    ci_low: float | None
    ci_high: float | None
    p_value: float | None
    sd_fastest: float | None  # SD of the log run medians of each side (None with one run)
    sd_candidate: float | None


def _sd(logs: np.ndarray) -> float | None:
    return float(np.std(logs, ddof=1)) if len(logs) >= 2 else None


def welch_ratio(fastest: np.ndarray, candidate: np.ndarray, level: float):
    """(estimate, ci_low, ci_high, p) of candidate / fastest from run medians over the last axis
    (leading axes: many comparisons at once, as the coverage simulation calls it); 2 runs a side."""
    w = welch_log(np.log(fastest), np.log(candidate))
    low, high = ratio_interval(w, level)
    return np.exp(w.d), low, high, welch_p_value(w)


def ratio_to_fastest(fastest: np.ndarray, candidate: np.ndarray, level: float) -> Ratio:
    """The candidate's run medians over the fastest's: Welch on logs (module docstring). With one
    run on a side, or no spread on either, the ratio of geometric means without an interval."""
    fastest, candidate = np.asarray(fastest, dtype=float), np.asarray(candidate, dtype=float)
    log_a, log_b = np.log(fastest), np.log(candidate)
    estimate = math.exp(float(log_b.mean() - log_a.mean()))
    sd_a, sd_b = _sd(log_a), _sd(log_b)
    if sd_a is None or sd_b is None or (sd_a == 0 and sd_b == 0):
        return Ratio(estimate, None, None, None, sd_a, sd_b)
    _, low, high, p = welch_ratio(fastest, candidate, level)
    return Ratio(estimate, float(low), float(high), float(p), sd_a, sd_b)


def pairwise_p(medians: list[np.ndarray]) -> np.ndarray:
    """Welch's two-sided p (on logs) of every pair of candidates, a (..., k, k) symmetric matrix,
    from each candidate's run medians over its last axis (leading axes: many groups at once, as
    the selection simulation calls it). NaN on the diagonal and where a pair has no test (one run
    on a side, no spread on either): ratio_to_fastest's cases."""
    logs = [np.log(np.asarray(m, dtype=float)) for m in medians]
    k = len(logs)
    p = np.full((*np.broadcast_shapes(*(x.shape[:-1] for x in logs)), k, k), np.nan)
    for i in range(k):
        for j in range(i + 1, k):
            if min(logs[i].shape[-1], logs[j].shape[-1]) < 2:
                continue
            w = welch_log(logs[i], logs[j])
            with np.errstate(divide="ignore", invalid="ignore"):
                p[..., i, j] = p[..., j, i] = np.where(w.se > 0, welch_p_value(w), np.nan)
    return p


def holm_over_pairs(p: np.ndarray) -> np.ndarray:
    """`pairwise_p`'s matrix Holm-adjusted over the group's pairs (each pair once; untested ones
    left out of m): the row of the fastest gives each other candidate's p_holm."""
    k = p.shape[-1]
    upper = np.triu_indices(k, 1)
    adjusted = np.full(p.shape, np.nan)
    adjusted[..., upper[0], upper[1]] = adjusted[..., upper[1], upper[0]] = holm(p[..., upper[0], upper[1]])
    return adjusted


def is_slower(ci_low, p_holm, level: float):
    """The "slower" rule on arrays (NaN: no interval or no test, never slower)."""
    with np.errstate(invalid="ignore"):
        return (np.asarray(ci_low, dtype=float) > 1.0) & (np.asarray(p_holm, dtype=float) < 1.0 - level)


def selection_slower(medians: np.ndarray, level: float) -> np.ndarray:
    """Which candidates answers calls slower than the fastest, for groups given as run medians
    (..., k candidates, n runs): the fastest the lowest geometric mean, each other's interval
    Welch's, its p_holm its pair's in Holm over all pairs (`compare_members`' rule, on arrays)."""
    medians = np.asarray(medians, dtype=float)
    k = medians.shape[-2]
    fastest = np.argmin(np.log(medians).mean(axis=-1), axis=-1)[..., None]
    p_holm = np.take_along_axis(
        holm_over_pairs(pairwise_p([medians[..., i, :] for i in range(k)])), fastest[..., None], -2
    )
    best = np.take_along_axis(medians, fastest[..., None], -2)
    _, low, _, _ = welch_ratio(best, medians, level)
    slower = is_slower(low, p_holm[..., 0, :], level)
    return slower & (np.arange(k) != fastest)


def equivalence_margin(ci_low: float, ci_high: float) -> float:
    """The largest |ratio - 1| the interval allows: it rules out any larger difference."""
    return max(ci_high - 1.0, 1.0 - ci_low)


def margin_pct_text(margin: float) -> str:
    """X of "within ±X %", rounded up (never claim a tighter band than the interval gives)."""
    pct = 100.0 * margin
    shown = math.ceil(pct) if pct >= 1 else math.ceil(pct * 10) / 10
    return f"{shown:g}"


def verdict_code(ratio: Ratio, p_holm: float | None, level: float) -> str:
    """SLOWER, SAME or INCONCLUSIVE by the rule of the module docstring."""
    if ratio.ci_low is None or ratio.ci_high is None:
        return INCONCLUSIVE
    if p_holm is not None and is_slower(ratio.ci_low, p_holm, level):
        return SLOWER
    if equivalence_margin(ratio.ci_low, ratio.ci_high) <= EQUIVALENCE_MAX:
        return SAME
    return INCONCLUSIVE
