"""answers' arithmetic on arrays: each ratio to the fastest, the verdict rule, the runs an
inconclusive ratio needs. Each candidate's ratio to the fastest is Welch's t on the log scale of the
runs' medians, as compare does it; the runs needed are how many would resolve an inconclusive ratio
(docs/cli/analyze.md, "answers").

- Ratio (Welch 1947, on logs; edgestats.analysis.estimators.welch): with x the logs of the fastest
  candidate's run medians and y the candidate's, the ratio is exp(mean y - mean x) (the ratio of
  the two geometric means: summary's two estimates divided), its interval exp(d ± t·se) with
  Welch's standard error and Welch–Satterthwaite degrees of freedom, always > 0; the p-value is
  that test's, two-sided.
- Verdict, at alpha = 1 - level: "slower" when the interval lies above 1 and Holm's p (Holm 1979,
  within the group) is below alpha; else "no detectable difference within ±X %" when X <= 5 %,
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
    if ratio.ci_low > 1.0 and p_holm is not None and p_holm < 1.0 - level:
        return SLOWER
    if equivalence_margin(ratio.ci_low, ratio.ci_high) <= EQUIVALENCE_MAX:
        return SAME
    return INCONCLUSIVE
