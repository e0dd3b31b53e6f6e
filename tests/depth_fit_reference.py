"""The depth fit's independent reference (importable from tests): statsmodels' HC3 standard
errors with Bell & McCaffrey's (2002) degrees of freedom, written as the trace formula.

For a term c'β of the OLS fit y = Xβ + e, w = X (X'X)⁻¹ c, HC3's variance is Σ wᵢ² eᵢ² / (1 - hᵢᵢ)²
= e'Ae with A = diag(wᵢ² / (1 - hᵢᵢ)²). Under equal spreads e = My (M = I - H) and e'Ae is a
quadratic form in normal errors; Satterthwaite matches its first two moments with a scaled χ²:
df = 2 E[V]² / Var[V] = tr(AM)² / tr(AMAM). Computed here with pinv and traces, where
edgestats.analysis.generation.fit uses a QR and eigenvalues.
"""

from __future__ import annotations

import numpy as np
import statsmodels.api as sm
from scipy import stats


def bell_mccaffrey_df(depths, contrast) -> float:
    x = np.column_stack([np.ones(len(depths)), np.asarray(depths, float)])
    hat = x @ np.linalg.pinv(x)
    m = np.eye(len(depths)) - hat
    w = x @ np.linalg.pinv(x.T @ x) @ np.asarray(contrast, float)
    a = np.diag(w**2 / (1 - np.diag(hat)) ** 2)
    am = a @ m
    return float(np.trace(am) ** 2 / np.trace(am @ am))


def hc3_interval(depths, times, level: float = 0.95) -> dict[str, tuple[float, float, float]]:
    """{"intercept"/"slope": (estimate, low, high)} from statsmodels' HC3 standard errors and the
    degrees of freedom above."""
    fit = sm.OLS(np.asarray(times, float), sm.add_constant(np.asarray(depths, float))).fit(cov_type="HC3")
    out = {}
    for i, name in enumerate(("intercept", "slope")):
        df = bell_mccaffrey_df(depths, np.eye(2)[i])
        half = stats.t.ppf(0.5 + level / 2, df) * fit.bse[i]
        out[name] = (float(fit.params[i]), float(fit.params[i] - half), float(fit.params[i] + half))
    return out
