"""fleet's arithmetic on arrays: variance components, the between-unit SD's MLS interval, and each
unit against the rest of its class. Method: docs/methodology.md, "Fleets"; Holm's step-down runs
across the class's units.

Every function takes run medians as a (..., units, runs) array padded with NaN where a unit has
fewer runs (leading axes: many classes at once, as the coverage simulations call them), so the
analysis, which calls them for one class at a time, and the tests run the same code.

- Model: log y_ij = mu + u_i + e_ij, unit effects u_i ~ N(0, s_u^2), run effects e_ij ~ N(0, s_r^2)
  (a run's median noise included). Within-unit mean square S2 = MSW (df N - a) estimates s_r^2.
  Between units, the unweighted-means mean square S1 = n_h * var(unit means) (df a - 1), n_h the
  harmonic mean of the runs per unit (Thomas & Hultquist 1978); balanced, it is the ANOVA's MSB.
  s_u^2 = (S1 - S2) / n_h, truncated at 0 (Searle, Casella & McCulloch 1992, §3.6).
- Interval: the modified large-sample (MLS) interval of (theta1 - theta2) / n_h (Graybill & Wang
  1980; Burdick & Graybill 1992, §3.3; for unbalanced data with S1 of unweighted means, §5.2.2),
  clipped at 0, its square root the SD's. s_r^2 gets the exact chi-square interval of S2.
- Unit against its class: d_i = mean(log run medians of i) - mean over the other units of theirs
  (leave-one-out, each unit weighed equally); var = S2 (1/n_i + sum_{k != i} (1/n_k) / (a - 1)^2),
  Student t on df N - a (a contrast of a one-way ANOVA with fixed unit effects; with equal unit
  means it is exactly t). The ratio exp(d) with interval exp(d +- t se) is always > 0; the p-values
  are Holm-adjusted across the class's units (Holm 1979), which holds the family-wise rate of
  false flags at alpha under any dependence. The leave-one-out d is a/(a - 1) times the contrast
  with the class mean, so the test is the same; the ratio reads as "against the others".
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import stats

from edgestats.analysis.estimators.multiplicity import holm

SLOWER, FASTER, LIKE_CLASS = "slower", "faster", "as its class"
MLS_METHOD = (
    "modified large-sample (MLS) interval of the between-unit variance of log run medians "
    "(Graybill & Wang 1980; Burdick & Graybill 1992), unweighted means when unbalanced"
)
CONTRAST_METHOD = (
    "t on the log scale: the unit's mean log run median against the other units' (leave-one-out), "
    "pooled within-unit variance; Holm across the class's units"
)


@dataclass(frozen=True)
class UnitAnova:
    """The one-way random-effects ANOVA of log run medians per class (arrays over leading axes)."""

    units: np.ndarray  # a: units with at least one run
    runs: np.ndarray  # N: runs in all
    unit_means: np.ndarray  # (..., a) mean log run median per unit (NaN: a unit without runs)
    unit_runs: np.ndarray  # (..., a) runs per unit
    s1: np.ndarray  # between-unit mean square (unweighted means), df a - 1
    s2: np.ndarray  # within-unit (between-run) mean square, df N - a
    n_h: np.ndarray  # harmonic mean of the runs per unit

    @property
    def df1(self) -> np.ndarray:
        return self.units - 1

    @property
    def df2(self) -> np.ndarray:
        return self.runs - self.units

    @property
    def between_unit_var(self) -> np.ndarray:
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.maximum((self.s1 - self.s2) / self.n_h, 0.0)


def unit_anova(log_medians: np.ndarray) -> UnitAnova:
    """The ANOVA of (..., units, runs) log run medians, NaN where a unit has fewer runs."""
    y = np.asarray(log_medians, dtype=float)
    present = np.isfinite(y)
    n_i = present.sum(axis=-1).astype(float)
    with np.errstate(invalid="ignore", divide="ignore"):
        means = np.where(n_i > 0, np.where(present, y, 0.0).sum(axis=-1) / n_i, np.nan)
        ss_within = np.where(present, (y - means[..., None]) ** 2, 0.0).sum(axis=(-1, -2))
        units = (n_i > 0).sum(axis=-1).astype(float)
        total = n_i.sum(axis=-1)
        s2 = ss_within / (total - units)
        n_h = units / np.where(n_i > 0, 1.0 / n_i, 0.0).sum(axis=-1)
        var_means = np.nanvar(means, axis=-1, ddof=1) if means.shape[-1] > 1 else np.full(units.shape, np.nan)
    return UnitAnova(units, total, means, n_i, n_h * var_means, s2, n_h)


def _upper(chi_df, level):
    return stats.chi2.ppf(0.5 + level / 2, chi_df)


def _lower(chi_df, level):
    return stats.chi2.ppf(0.5 - level / 2, chi_df)


def mls_interval(anova: UnitAnova, level: float) -> tuple[np.ndarray, np.ndarray]:
    """The two-sided MLS interval of the between-unit variance (S1 - S2) / n_h, clipped at 0 (module
    docstring). NaN where a < 2 or N - a < 1."""
    alpha = 1.0 - level
    s1, s2, n1, n2 = anova.s1, anova.s2, anova.df1, anova.df2
    ok = (n1 >= 1) & (n2 >= 1)
    n1, n2 = np.where(ok, n1, 1.0), np.where(ok, n2, 1.0)
    g1 = 1.0 - n1 / _upper(n1, level)
    g2 = 1.0 - n2 / _upper(n2, level)
    h1 = n1 / _lower(n1, level) - 1.0
    h2 = n2 / _lower(n2, level) - 1.0
    f_high = stats.f.ppf(1.0 - alpha / 2, n1, n2)
    f_low = stats.f.ppf(alpha / 2, n1, n2)
    g12 = ((f_high - 1.0) ** 2 - g1**2 * f_high**2 - h2**2) / f_high
    h12 = ((1.0 - f_low) ** 2 - h1**2 * f_low**2 - g2**2) / f_low
    with np.errstate(invalid="ignore"):
        v_low = g1**2 * s1**2 + h2**2 * s2**2 + g12 * s1 * s2
        v_high = h1**2 * s1**2 + g2**2 * s2**2 + h12 * s1 * s2
        low = np.maximum((s1 - s2 - np.sqrt(np.maximum(v_low, 0.0))) / anova.n_h, 0.0)
        high = np.maximum((s1 - s2 + np.sqrt(np.maximum(v_high, 0.0))) / anova.n_h, 0.0)
    return np.where(ok, low, np.nan), np.where(ok, high, np.nan)


def between_run_interval(anova: UnitAnova, level: float) -> tuple[np.ndarray, np.ndarray]:
    """The exact chi-square interval of the between-run variance from S2 (df N - a; NaN below 1)."""
    df = anova.df2
    ok = df >= 1
    safe = np.where(ok, df, 1.0)
    low = safe * anova.s2 / _upper(safe, level)
    high = safe * anova.s2 / _lower(safe, level)
    return np.where(ok, low, np.nan), np.where(ok, high, np.nan)


@dataclass(frozen=True)
class UnitContrasts:
    """Each unit against the rest of its class (arrays (..., a)); NaN where no test can be made."""

    ratio: np.ndarray  # exp(d): the unit's geometric-mean run median over the others'
    ci_low: np.ndarray
    ci_high: np.ndarray
    p_value: np.ndarray
    p_holm: np.ndarray  # adjusted by the step-down rule (module docstring)
    flagged: np.ndarray  # bool: the step-down rejected it


def _against(anova: UnitAnova, reference: np.ndarray, level: float) -> tuple[np.ndarray, ...]:
    """(ratio, low, high, p) of every unit against the mean of the `reference` units other than
    itself (NaN where fewer than one other, no spread, or no degrees of freedom)."""
    means, n_i = anova.unit_means, anova.unit_runs
    inverse = np.where(n_i > 0, 1.0 / np.where(n_i > 0, n_i, 1.0), 0.0)
    self_in = reference & (n_i > 0)
    count = reference.sum(axis=-1, keepdims=True) - self_in
    with np.errstate(invalid="ignore", divide="ignore"):
        total = np.where(reference, np.nan_to_num(means), 0.0).sum(axis=-1, keepdims=True)
        others_mean = (total - np.where(self_in, means, 0.0)) / count
        inv_total = np.where(reference, inverse, 0.0).sum(axis=-1, keepdims=True)
        others_inverse = (inv_total - np.where(self_in, inverse, 0.0)) / count**2
        d = means - others_mean
        se = np.sqrt(anova.s2[..., None] * (inverse + others_inverse))
        df = np.broadcast_to(anova.df2[..., None], d.shape)
        testable = (count >= 1) & (df >= 1) & (se > 0) & (n_i > 0)
        safe_df, safe_se = np.where(testable, df, 1.0), np.where(testable, se, 1.0)
        half = stats.t.ppf(0.5 + level / 2, safe_df) * safe_se
        p = np.where(testable, 2 * stats.t.sf(np.abs(d) / safe_se, safe_df), np.nan)
    low, high = (np.where(testable, np.exp(d + sign * half), np.nan) for sign in (-1.0, 1.0))
    return np.exp(d), low, high, p


def unit_contrasts(log_medians: np.ndarray, level: float) -> UnitContrasts:
    """Every unit against the rest of its class, by Holm's step-down with the reference re-estimated
    at each step (module docstring): the smallest p of the m units not yet flagged is rejected when
    max(m p, the last step's) < alpha, that unit is flagged and leaves the reference, and the rest
    are tested again; when none is rejected, the rest get Holm's adjustment of their p-values.
    Two units left that differ are both flagged (neither is the class)."""
    anova = unit_anova(log_medians)
    present = anova.unit_runs > 0
    flagged = np.zeros(present.shape, bool)
    going = np.ones(present.shape[:-1], bool)
    previous = np.zeros(going.shape)
    out = [np.full(present.shape, np.nan) for _ in range(5)]  # ratio, low, high, p, p_holm
    for _ in range(present.shape[-1] + 1):
        figures = _against(anova, present & ~flagged, level)
        update = going[..., None] & ~flagged
        for i, values in enumerate(figures):
            out[i] = np.where(update, values, out[i])
        p = np.where(flagged, np.nan, figures[3])
        m = np.sum(~np.isnan(p), axis=-1)
        any_p = m > 0
        at = np.argmin(np.where(np.isnan(p), np.inf, p), axis=-1)
        step = np.maximum(
            previous, m * np.take_along_axis(np.nan_to_num(p, nan=1.0), at[..., None], -1)[..., 0]
        )
        reject = going & any_p & (step < 1.0 - level)
        stop = going & ~reject
        final = np.maximum(previous[..., None], holm(p))
        out[4] = np.where(stop[..., None] & ~flagged, final, out[4])
        chosen = reject[..., None] & (np.arange(present.shape[-1]) == at[..., None])
        flagged |= chosen
        out[4] = np.where(chosen, step[..., None], out[4])
        last = reject[..., None] & present & ~flagged & ((present & ~flagged).sum(-1, keepdims=True) == 1)
        flagged |= last
        out[4] = np.where(last, step[..., None], out[4])
        previous = np.where(reject, step, previous)
        going = reject & ((present & ~flagged).sum(-1) > 0)
        if not going.any():
            break
    return UnitContrasts(*out, flagged)


def verdicts(contrasts: UnitContrasts) -> np.ndarray:
    """SLOWER or FASTER where the step-down flagged the unit (by its ratio), else LIKE_CLASS."""
    flagged = contrasts.flagged
    return np.where(flagged & (contrasts.ratio > 1), SLOWER, np.where(flagged, FASTER, LIKE_CLASS))


def padded(groups: list[np.ndarray]) -> np.ndarray:
    """Units' run values as one (units, max runs) array, NaN-padded: unit_anova's input."""
    width = max((len(g) for g in groups), default=0)
    out = np.full((len(groups), width), np.nan)
    for i, values in enumerate(groups):
        out[i, : len(values)] = values
    return out
