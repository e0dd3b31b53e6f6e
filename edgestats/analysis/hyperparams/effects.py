"""The descriptive side of hyperparams: main effects, proportionality and response-vs-iterations
means, with intervals. Main effects are the mean response at each level of each factor;
proportionality is whether a time is proportional to iterations (or training samples) at each batch
size; the response-vs-iterations means are those the report draws.

Apart from hyperparams.py (the analysis per group) and hyperparams/fit.py (the OLS model), because
these are means and one-factor lines read straight off the runs, not terms of the fitted model.
"""

from __future__ import annotations

import warnings

import numpy as np
import polars as pl

from edgestats.analysis.core.filter_tags import filter_tags, tag_columns
from edgestats.analysis.core.result import iter_groups
from edgestats.analysis.estimators.intervals import finite_or_none
from edgestats.analysis.hyperparams.configs import response_mean
from edgestats.contracts import ITERATION_FACTORS, SERIES_CANDIDATES

PROPORTIONAL_R2 = 0.99

MAX_MAIN_EFFECT_LEVELS = 20  # more distinct values than this is a continuum, not levels

# time ~ factor through the origin is the claim for these: per iteration, and per training sample
# (the Jetson study: end-to-end time grows with the dataset's size)
PROPORTIONAL_FACTORS = (*ITERATION_FACTORS, "dataset_samples")

# The response-vs-iterations means: one line per the first of these present (besides the
# iteration factor), kept apart per device, framework and model (one model's times say nothing
# of another's; the chart draws each as its own line).
MEANS_KEPT_APART = ("device", "framework", "model")


def main_effects(rows: pl.DataFrame, response: str, factors: list[str], level: float) -> list[dict]:
    """Mean response at each level of each factor (marginal over the others), t intervals."""
    out = []
    for factor in factors:
        if rows[factor].n_unique() > MAX_MAIN_EFFECT_LEVELS:
            continue
        for (value,), sub in rows.sort(factor).group_by([factor], maintain_order=True):
            estimate = response_mean(sub, response, level)
            out.append({"factor": factor, "value": value, **estimate.as_dict()})
    return out


def proportionality(rows: pl.DataFrame, response: str, factors: list[str], level: float) -> list[dict]:
    """time ~ iterations (raw scale) at each batch size: is the time per iteration (or per
    training sample, for dataset_samples) constant?"""
    import statsmodels.api as sm

    if not response.endswith("_s"):
        return []
    out = []
    for factor in [f for f in PROPORTIONAL_FACTORS if f in rows.columns and (f in factors)]:
        fixed = (
            ["batch_size"] if "batch_size" in rows.columns and rows["batch_size"].is_not_null().any() else []
        )
        points = rows.filter(pl.col(factor).is_not_null())
        for group, sub in iter_groups(points, fixed):
            x, y = sub[factor].cast(pl.Float64).to_numpy(), sub[response].cast(pl.Float64).to_numpy()
            base = {"factor": factor, "fixed": group, "n": len(x), "level": level}
            if len(x) < 3 or np.unique(x).size < 2:
                out.append(
                    {
                        **base,
                        "reason": f"not enough data: {len(x)} runs at {np.unique(x).size} {factor} values "
                        "(a line with intervals needs 3 runs and 2 values)",
                    }
                )
                continue
            with np.errstate(all="ignore"), warnings.catch_warnings():  # equal times: R² is 0/0, None
                warnings.simplefilter("ignore")
                fit = sm.OLS(y, sm.add_constant(x)).fit()
                ci = fit.conf_int(alpha=1 - level)
                r2 = finite_or_none(fit.rsquared)
            intercept = {
                "estimate": float(fit.params[0]),
                "ci_low": float(ci[0][0]),
                "ci_high": float(ci[0][1]),
            }
            slope = {"estimate": float(fit.params[1]), "ci_low": float(ci[1][0]), "ci_high": float(ci[1][1])}
            out.append(
                {
                    **base,
                    "slope": slope,
                    "intercept": intercept,
                    "r_squared": r2,
                    "proportional": bool(
                        r2 is not None
                        and r2 >= PROPORTIONAL_R2
                        and intercept["ci_low"] <= 0 <= intercept["ci_high"]
                    ),
                }
            )
    return out


def iteration_means(points: pl.DataFrame, responses: list[str], level: float) -> pl.DataFrame:
    """Mean of each response with its bounded interval (`response_mean`) per iteration count (or
    epochs), per series (batch size, else learning rate or optimizer) and per device / framework /
    model,
    however many runs there are: what the response-vs-iterations chart draws (the DLaaS study's
    tables). Each row carries the page filter's fields of its runs (filter_tags)."""
    factor = next(c for c in ITERATION_FACTORS if c in points.columns)
    series = next((c for c in SERIES_CANDIDATES if c in points.columns and c != factor), None)
    keys = [factor, *([series] if series else []), *(c for c in MEANS_KEPT_APART if c in points.columns)]
    tagged = tag_columns(points, skip=keys)
    rows = []
    for response in responses:
        measured = points.filter(pl.col(response).is_not_null())
        for values, sub in measured.select(*keys, *tagged, response).group_by(keys, maintain_order=True):
            e = response_mean(sub, response, level)
            rows.append(
                {
                    **dict(zip(keys, values)),
                    **filter_tags(sub, skip=keys),
                    "response": response,
                    "estimate": e.estimate,
                    "ci_low": e.ci_low,
                    "ci_high": e.ci_high,
                    "level": level,
                    "n": e.n,
                }
            )
    if not rows:
        return pl.DataFrame()
    means = pl.DataFrame(rows, infer_schema_length=None).with_columns(
        *(pl.col(c).cast(pl.Float64) for c in ("estimate", "ci_low", "ci_high"))
    )
    return means.filter(pl.col(factor).is_not_null())
