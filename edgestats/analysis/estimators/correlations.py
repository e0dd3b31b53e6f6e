"""Correlations with their intervals: Pearson and Spearman, and Spearman's exact p-value on small
samples. Pearson's interval is Fisher z's, Spearman's is Fisher z with the Bonett–Wright variance,
and the exact p-value is a permutation test's.

Apart from edgestats.analysis.estimators.intervals, which holds the Estimate they return, because a
correlation is a statistic of pairs with its own interval and p-value (energy's latency-energy
and pipeline's workers-stall correlations ask for one).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import stats

from edgestats.analysis.estimators.intervals import DEFAULT_LEVEL, Estimate, finite_or_none, no_interval


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
            no_interval(
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
                no_interval(
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
        return Correlation(method, no_interval(r, n, n_unit, level, name, why), p)
    return Correlation(method, Estimate(r, interval[0], interval[1], level, n, n_unit, name), p)
