"""Decode time per token against context depth (the generation analysis; docs/methodology.md,
"Decode time against context depth").

Per fit group, the generation configuration without context_depth (device × framework × runtime ×
model × batch × threads × precision × prompt_tokens × new_tokens, or --by without context_depth):
least squares (statsmodels OLS) of each run's mean inter-token latency (ms a decode step,
generation_summary's itl_mean_ms) on its context_depth, one row per run:

    time per token (ms) = a + b · context_depth

The run is the unit: a run's decode steps share its process and are not independent, so each run
contributes one row (its mean), and the rows of different runs are independent processes; several
runs per depth are several rows at that depth, which is what gives the fit its residual variance
(a cluster-robust fit of per-token rows would rest on as few clusters as runs, with the same
point estimate). A run's speed varies by a factor (a process is a few % slower throughout), so the
spread of the run means grows with the time per token, i.e. with depth: the classical OLS interval
of b then covers less than it says (88 % for a nominal 95 % in tests/analysis/test_generation_fit.py's
simulation of 12 runs at 4 depths), so a and b get heteroskedasticity-consistent standard errors
(HC3; MacKinnon & White 1985, recommended for small samples by Long & Ervin 2000) with t intervals
on n - 2 degrees of freedom (92 % there, 95 % with additive spread). A group needs at least 3 runs
at 2 or more depths. The band is the fitted mean's confidence band (HC3) over the depths measured:
band_low / band_high, which the chart draws with the runs' points.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import polars as pl
import statsmodels.api as sm

from edgestats.analysis.core.result import iter_groups, not_enough_entry, rows_frame
from edgestats.analysis.estimators.intervals import Estimate, finite_or_none

RESPONSE = "itl_mean_ms"
DEPTH = "context_depth"
METHOD = "OLS of run-level mean inter-token latency on context depth (statsmodels), HC3 t intervals"
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


def fit_one(depths: np.ndarray, times_ms: np.ndarray, level: float) -> tuple[dict[str, Estimate], object]:
    """OLS of time on depth: {term: Estimate} and the statsmodels result."""
    design = sm.add_constant(depths.astype(float), has_constant="add")
    model = sm.OLS(times_ms, design).fit(cov_type="HC3", use_t=True)
    model_names = ["const", DEPTH]
    ci = np.asarray(model.conf_int(alpha=1 - level))
    out = {}
    for term, name in TERMS:
        i = model_names.index(name)
        low, high = finite_or_none(ci[i, 0]), finite_or_none(ci[i, 1])
        note = None if low is not None else "no interval: the runs lie exactly on a line"
        out[term] = Estimate(float(model.params[i]), low, high, level, len(depths), "runs", METHOD, note)
    return out, model


def band_rows(group: dict, depths: np.ndarray, model, level: float) -> list[dict]:
    """The fitted mean and its confidence band over the measured depths."""
    grid = np.linspace(depths.min(), depths.max(), BAND_POINTS)
    frame = model.get_prediction(sm.add_constant(grid, has_constant="add")).summary_frame(alpha=1 - level)
    return [
        {
            **group,
            "x": float(x),
            "fit": float(f),
            "band_low": finite_or_none(lo),
            "band_high": finite_or_none(hi),
        }
        for x, f, lo, hi in zip(grid, frame["mean"], frame["mean_ci_lower"], frame["mean_ci_upper"])
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
        terms, model = fit_one(depths, times, level)
        out.entries.append(
            {
                "group": group,
                "fit": f"{RESPONSE} = a + b · {DEPTH}",
                "n": sub.height,
                "n_unit": "runs",
                "level": level,
                "depths": sorted(int(d) for d in set(depths)),
                "r_squared": finite_or_none(model.rsquared),
                **{key: {"term": term, **terms[term].as_dict()} for key, (term, _) in zip(KEYS, TERMS)},
            }
        )
        fit_rows += [{**group, "term": term, **e.as_dict()} for term, e in terms.items()]
        band += band_rows(group, depths, model, level)
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
