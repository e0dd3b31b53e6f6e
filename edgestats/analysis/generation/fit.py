"""Decode time per token against context depth (the generation analysis; docs/methodology.md,
"Decode time against context depth").

Per fit group, the generation configuration without context_depth (device × framework × runtime ×
model × batch × threads × precision × prompt_tokens × new_tokens, or --by without context_depth):
least squares of each run's mean inter-token latency (ms a decode step, generation_summary's
itl_mean_ms) on its context_depth, one row per run:

    time per token (ms) = a + b · context_depth

The run is the unit: a run's decode steps share its process and are not independent, so each run
contributes one row (its mean), and the rows of different runs are independent processes; several
runs per depth are several rows at that depth, which is what gives the fit its residual variance
(with one row per run, a CR2 variance clustered by run is HC2). A run's speed varies by a factor
(a process is a few % slower throughout), so the spread of the run means grows with the time per
token, i.e. with depth: a and b get heteroskedasticity-consistent standard errors (HC3; MacKinnon
& White 1985, Long & Ervin 2000). HC3's variance rests on the few runs of high leverage (the
deepest and shallowest), so its t interval does not have n - 2 degrees of freedom: they are
Bell & McCaffrey's (2002) small-sample ones, the Satterthwaite match of the variance estimate's
first two moments under equal spreads, computed for HC3's own quadratic form (`hc3_fit`):

    w = X (X'X)⁻¹ c,   A = diag(wᵢ² / (1 - hᵢᵢ)²),   M = I - H,   df = tr(AM)² / tr(AMAM)

(c: the term, or (1, depth) for the band). With n - 2 they covered 86-92 % for 95 % in
tests/analysis/test_generation_fit.py's simulations; with these, 93.5-95.6 %. A group needs at
least 3 runs at 2 or more depths; a run that is the fit's only support at its depth (leverage 1,
e.g. one run at one of two depths) leaves no residual to measure its spread from, so the terms
get no interval, and the note says so. The band is the fitted mean's confidence band over the
depths measured (the same variance and df at each depth): band_low / band_high, which the chart
draws with the runs' points.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import polars as pl
from scipy import stats

from edgestats.analysis.core.result import iter_groups, not_enough_entry, rows_frame
from edgestats.analysis.estimators.intervals import Estimate, finite_or_none

RESPONSE = "itl_mean_ms"
DEPTH = "context_depth"
METHOD = (
    "OLS of run-level mean inter-token latency on context depth, HC3 t intervals on Bell-McCaffrey "
    "degrees of freedom"
)
# A run whose leverage is this close to 1 carries the fit alone at its depth: no residual there.
LEVERAGE_ONE = 1 - 1e-9
MIN_RUNS = 3
BAND_POINTS = 25
TERMS = (("intercept_ms", "const"), ("slope_ms_per_token", DEPTH))
KEYS = ("intercept", "slope")  # the JSON entry's keys of TERMS


@dataclass
class DepthFits:
    entries: list[dict] = field(default_factory=list)
    frames: dict[str, pl.DataFrame] = field(default_factory=dict)
    why_none: str | None = None


def fit_keys(config: list[str]) -> list[str]:
    return [c for c in config if c != DEPTH]


@dataclass(frozen=True)
class HC3Fit:
    """OLS of rows of times on one design, vectorised over the rows (simulations pass thousands):
    the coefficients, their HC3 standard errors and Bell-McCaffrey degrees of freedom."""

    params: np.ndarray  # (rows, 2): intercept, slope
    se: np.ndarray  # (rows, 2); NaN where HC3 cannot be computed (a run of leverage 1)
    df: np.ndarray  # (2,): each term's degrees of freedom (the design's, not the data's)
    r_squared: np.ndarray  # (rows,)
    why_none: str | None  # why no interval can be made on this design (None: it can)

    def interval(self, level: float) -> tuple[np.ndarray, np.ndarray]:
        half = stats.t.ppf(0.5 + level / 2, self.df) * self.se
        return self.params - half, self.params + half


def hc3_fit(depths: np.ndarray, times_ms: np.ndarray) -> HC3Fit:
    """time = a + b · depth by least squares for each row of `times_ms` (runs in the order of
    `depths`), HC3 standard errors and Bell-McCaffrey degrees of freedom (module docstring)."""
    depths = np.asarray(depths, dtype=float)
    design = np.column_stack([np.ones(len(depths)), depths])
    times = np.atleast_2d(np.asarray(times_ms, dtype=float))
    params = times @ (design @ np.linalg.inv(design.T @ design))
    residuals = times - params @ design.T
    se, df, why = hc3_contrasts(design, residuals, np.eye(2))
    total = ((times - times.mean(axis=1, keepdims=True)) ** 2).sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        r_squared = 1 - (residuals**2).sum(axis=1) / total
    return HC3Fit(params, se, df, r_squared, why)


def hc3_contrasts(
    design: np.ndarray, residuals: np.ndarray, contrasts: np.ndarray
) -> tuple[np.ndarray, np.ndarray, str | None]:
    """For each column c of `contrasts` (the terms, or (1, depth) for the band): the HC3 standard
    error of c'β per row of residuals, its Bell-McCaffrey degrees of freedom, and why there is no
    interval (then both are NaN)."""
    inverse = np.linalg.inv(design.T @ design)
    weights = design @ inverse @ contrasts  # column j: w = X (X'X)⁻¹ c
    leverage = np.einsum("ij,jk,ik->i", design, inverse, design)
    why = _why_no_interval(design[:, 1], leverage)
    if why is not None:
        nan = np.full((len(residuals), contrasts.shape[1]), np.nan)
        return nan, np.full(contrasts.shape[1], np.nan), why
    se = np.sqrt((residuals**2 / (1 - leverage) ** 2) @ weights**2)
    return se, np.array([bell_mccaffrey_df(w, leverage, design) for w in weights.T]), None


def bell_mccaffrey_df(w: np.ndarray, leverage: np.ndarray, design: np.ndarray) -> float:
    """Satterthwaite's degrees of freedom for the HC3 variance of w'y under equal spreads: the
    eigenvalues λ of A^½ M A^½ (A = diag(w² / (1 - h)²), M = I - H) give (Σλ)² / Σλ²."""
    q, _ = np.linalg.qr(design)
    root_a = np.abs(w) / (1 - leverage)
    g = root_a[:, None] * (np.eye(len(w)) - q @ q.T) * root_a[None, :]
    eigen = np.linalg.eigvalsh(g)
    return float(eigen.sum() ** 2 / (eigen**2).sum())


def _why_no_interval(depths: np.ndarray, leverage: np.ndarray) -> str | None:
    alone = np.flatnonzero(leverage >= LEVERAGE_ONE)
    if not len(alone):
        return None
    at = ", ".join(f"{int(d)}" if float(d).is_integer() else f"{d:g}" for d in sorted(set(depths[alone])))
    return (
        f"no interval: the fit runs through the only run at context depth {at}, so the spread of "
        "runs there cannot be measured (run more runs at each depth)"
    )


def fit_one(depths: np.ndarray, times_ms: np.ndarray, level: float) -> tuple[dict[str, Estimate], HC3Fit]:
    """OLS of time on depth: {term: Estimate} and the fit."""
    fit = hc3_fit(depths, times_ms)
    lows, highs = fit.interval(level)
    out = {}
    for i, (term, _) in enumerate(TERMS):
        low, high, note = finite_or_none(lows[0, i]), finite_or_none(highs[0, i]), fit.why_none
        if note is None and not fit.se[0, i] > 0:
            low, note = None, "no interval: the runs lie exactly on a line"
        if low is None:
            high = None
        out[term] = Estimate(float(fit.params[0, i]), low, high, level, len(depths), "runs", METHOD, note)
    return out, fit


def band_rows(group: dict, depths: np.ndarray, times_ms: np.ndarray, fit: HC3Fit, level: float) -> list[dict]:
    """The fitted mean and its confidence band over the measured depths (HC3, Bell-McCaffrey df at
    each depth; no band where the terms have no interval)."""
    grid = np.linspace(depths.min(), depths.max(), BAND_POINTS)
    design = np.column_stack([np.ones(len(depths)), depths])
    centre = fit.params[0, 0] + fit.params[0, 1] * grid
    residuals = np.atleast_2d(times_ms - design @ fit.params[0])
    se, df, _ = hc3_contrasts(design, residuals, np.vstack([np.ones(BAND_POINTS), grid]))
    half = stats.t.ppf(0.5 + level / 2, df) * se[0]
    return [
        {
            **group,
            "x": float(x),
            "fit": float(f),
            "band_low": finite_or_none(low),
            "band_high": finite_or_none(high),
        }
        for x, f, low, high in zip(grid, centre, centre - half, centre + half)
    ]


def _skip_reason(sub: pl.DataFrame) -> str | None:
    if sub.height < MIN_RUNS:
        return f"the depth fit needs {MIN_RUNS} runs with a mean inter-token latency (has {sub.height})"
    if sub[DEPTH].n_unique() < 2:
        return "the depth fit needs runs at 2 or more context depths (two --context-depth values)"
    return None


def depth_fits(runs: pl.DataFrame, config: list[str], level: float) -> DepthFits:
    """Per fit group: the entry (intercept and slope with intervals), the `depth_fit` rows, the runs'
    points and the fitted band; why_none when no group could be fitted."""
    usable = runs.filter(pl.col(RESPONSE).is_not_null() & pl.col(DEPTH).is_not_null())
    out, fit_rows, points, band = DepthFits(), [], [], []
    reasons = []
    for group, sub in iter_groups(usable, fit_keys(config)):
        points += [{**group, DEPTH: d, RESPONSE: t} for d, t in sub.select(DEPTH, RESPONSE).iter_rows()]
        why = _skip_reason(sub)
        if why:
            reasons.append(why)
            continue
        depths, times = sub[DEPTH].to_numpy().astype(float), sub[RESPONSE].to_numpy().astype(float)
        terms, fit = fit_one(depths, times, level)
        out.entries.append(
            {
                "group": group,
                "fit": f"{RESPONSE} = a + b · {DEPTH}",
                "n": sub.height,
                "n_unit": "runs",
                "level": level,
                "depths": sorted(int(d) for d in set(depths)),
                "r_squared": finite_or_none(fit.r_squared[0]),
                **{key: {"term": term, **terms[term].as_dict()} for key, (term, _) in zip(KEYS, TERMS)},
            }
        )
        fit_rows += [{**group, "term": term, **e.as_dict()} for term, e in terms.items()]
        band += band_rows(group, depths, times, fit, level)
    if fit_rows:
        out.frames = {
            "depth_fit": rows_frame(fit_rows),
            "depth_points": rows_frame(points),
            "depth_band": rows_frame(band),
        }
    else:
        out.why_none = f"no depth fit: {reasons[0]}" if reasons else None
        if reasons and runs[DEPTH].n_unique() > 1:
            out.entries.append(not_enough_entry(reasons[0], level=level, fit=f"{RESPONSE} ~ {DEPTH}"))
    return out
