"""hyperparams: how a response (training time, accuracy, time per epoch, testing time, latency)
depends on factors (batch size, iterations or epochs, learning rate, threads, workers …), the
DLaaS study's tables made into fitted models.

Per group (--by), on the runs whose response and factors are all known (the others are counted
in n_excluded):

- OLS in statsmodels: response ~ factors (+ their pairwise interactions when asked), numeric
  factors log10-scaled where they span two decades or more (learning rate 1e-4..1e-2, batch
  size 50..5000), text factors as categories. Per term: estimate, interval, p-value; R²; the
  type-II ANOVA table.
- main effects: the mean response at each level of each factor, with an interval that stays in
  the response's range (edgestats.analysis.bounded): accuracy on the logit scale (Wilson for one
  run whose test-set size, column n_test, is known), times on the log scale.
- proportionality (for a time response and an iterations/epochs factor): time ~ iterations at
  each fixed batch size — slope (time per iteration), intercept, R², and whether the intercept's
  interval holds 0 with R² ≥ 0.99 (the paper's "training time is proportional to #iterations").
- best: the configuration (factor values) with the min or max mean response, among those that
  satisfy --constraint (e.g. max accuracy with training_time_s <= 600), with the same bounded
  interval of its mean.
"""

from __future__ import annotations

import math
import re
import warnings

import numpy as np
import polars as pl

from edgestats.analysis.hyperparams_configs import (  # noqa: F401
    Condition,
    best_configuration,
    best_row,
    parse_constraint,
    response_mean,
)
from edgestats.analysis.intervals import finite_or_none
from edgestats.analysis.load import AnalysisData, AnalysisInputError, check_group_columns
from edgestats.analysis.options import AnalysisOptions
from edgestats.analysis.result import AnalysisResult, iter_groups, not_enough_entry, rows_frame, unavailable
from edgestats.contracts import ITERATION_FACTORS, SERIES_CANDIDATES

NAME = "hyperparams"
DECADES_FOR_LOG = 2.0  # max/min ≥ 100: the factor acts on a log scale
# Factors that act multiplicatively (docs/architecture.md §6); others (iterations: time is linear in them)
# stay linear unless --log asks.
LOG_CANDIDATES = ("learning_rate", "batch_size")
PROPORTIONAL_R2 = 0.99
MAX_MAIN_EFFECT_LEVELS = 20  # more distinct values than this is a continuum, not levels
# time ~ factor through the origin is the claim for these: per iteration, and per training sample
# (the Jetson study: end-to-end time grows with the dataset's size)
PROPORTIONAL_FACTORS = (*ITERATION_FACTORS, "dataset_samples")
# Responses and factors used when none are named, and the groups fitted apart when no --by.
DEFAULT_RESPONSES = ("training_time_s", "accuracy_pct")
HYPERPARAMETERS = (
    "batch_size",
    "iterations",
    "epochs",
    "learning_rate",
    "optimizer",
    "threads",
    "num_workers",
    "dataset_samples",
)
HYPERPARAM_GROUPS = ("device", "framework", "dataset", "model")
# The response-vs-iterations means: one line per the first of these present (besides the
# iteration factor), kept apart per device and framework (the chart's facets).
MEANS_KEPT_APART = ("device", "framework")


def choose_scale(values: np.ndarray, requested: str = "auto", factor: str = "learning_rate") -> str:
    """'log' for a learning rate or batch size that is positive and spans ≥ 2 decades, or for any
    factor when asked; else 'linear'."""
    if requested in ("log", "linear"):
        if requested == "log" and (len(values) == 0 or values.min() <= 0):
            raise AnalysisInputError("a factor with values ≤ 0 cannot be log-scaled; drop --log for it")
        return requested
    if (
        factor in LOG_CANDIDATES
        and len(values)
        and values.min() > 0
        and math.log10(values.max() / values.min()) >= DECADES_FOR_LOG
    ):
        return "log"
    return "linear"


def pick_scales(
    rows: pl.DataFrame,
    response: str,
    factors: list[str],
    requested: dict[str, str],
    interactions: bool,
    level: float,
) -> tuple[dict[str, str], dict[str, str]]:
    """Each numeric factor's scale, and why. --log/--linear decide where given. Otherwise a
    learning rate or batch size spanning two decades is a log candidate, and the fit decides:
    log10 is kept only if its R² is at least the linear fit's (batch size 50..5000 on log10 once
    gave R² 0.86 against 0.9999 linear, and said nothing)."""
    scales, why = {}, {}
    for f in [f for f in factors if rows[f].dtype.is_numeric()]:
        values = rows[f].cast(pl.Float64).to_numpy()
        scales[f] = choose_scale(values, requested.get(f, "auto"), f)
        why[f] = (
            f"on a {scales[f]} scale, as asked"
            if f in requested
            else "on a linear scale: it spans less than two decades, or is not a log candidate"
        )
    for f in [f for f, scale in scales.items() if scale == "log" and f not in requested]:
        r2 = {
            scale: fit_ols(rows, response, factors, {**scales, f: scale}, interactions, level).get(
                "r_squared"
            )
            for scale in ("log", "linear")
        }
        if r2["log"] is not None and r2["linear"] is not None:
            scales[f] = "log" if r2["log"] >= r2["linear"] else "linear"
            other = "linear" if scales[f] == "log" else "log"
            why[f] = (
                f"on a {scales[f]} scale: R² {r2[scales[f]]:.4f} against {r2[other]:.4f} on the {other} scale"
            )
        else:
            why[f] = "on a log scale: it spans two decades or more (too few runs to compare fits)"
    return scales, why


def _safe(name: str) -> str:
    return re.sub(r"\W", "_", name)


def design(rows: pl.DataFrame, response: str, factors: list[str], scales: dict[str, str], interactions: bool):
    """(pandas frame, formula, {formula term name -> reported term name}, notes)."""
    data = {"y": rows[response].cast(pl.Float64).to_numpy()}
    terms, names, notes = [], {"Intercept": "intercept"}, []
    for factor in factors:
        column = rows[factor]
        if column.n_unique() < 2:
            notes.append(f"{factor} takes one value here ({column[0]}): left out of the model")
            continue
        if column.dtype.is_numeric():
            values = column.cast(pl.Float64).to_numpy()
            if scales.get(factor) == "log":
                data[f"log10_{_safe(factor)}"] = np.log10(values)
                term, shown = f"log10_{_safe(factor)}", f"log10({factor})"
            else:
                data[_safe(factor)] = values
                term, shown = _safe(factor), factor
        else:
            data[_safe(factor)] = column.cast(pl.String).to_numpy()
            term, shown = f"C({_safe(factor)})", factor
        terms.append(term)
        names[term] = shown
    formula_terms = list(terms)
    if interactions:
        formula_terms += [f"{a}:{b}" for i, a in enumerate(terms) for b in terms[i + 1 :]]
    formula = "y ~ " + (" + ".join(formula_terms) if formula_terms else "1")
    return data, formula, names, notes


def _term_name(raw: str, names: dict[str, str]) -> str:
    """'C(framework)[T.torch]' -> 'framework[torch]'; 'log10_batch_size:iterations' -> 'log10(batch_size):iterations'."""
    parts = []
    for piece in raw.split(":"):
        match = re.match(r"^(C\(\w+\))\[T\.(.*)\]$", piece)
        parts.append(
            f"{names.get(match.group(1), match.group(1))}[{match.group(2)}]"
            if match
            else names.get(piece, piece)
        )
    return ":".join(parts)


def fit_ols(
    rows: pl.DataFrame,
    response: str,
    factors: list[str],
    scales: dict[str, str],
    interactions: bool,
    level: float,
) -> dict:
    """OLS with per-term intervals and the type-II ANOVA; a 'reason' instead when it cannot be fitted."""
    import pandas as pd
    import statsmodels.api as sm
    import statsmodels.formula.api as smf

    data, formula, names, notes = design(rows, response, factors, scales, interactions)
    frame = pd.DataFrame(data)
    n = len(frame)
    if np.all(frame["y"].to_numpy() == frame["y"].iloc[0]):
        return {
            "reason": f"not enough data: all {n} runs have the same {response}, so nothing can be explained",
            "notes": notes,
        }
    with warnings.catch_warnings():  # a rank-deficient design is said in a note, not as a stray warning
        warnings.simplefilter("ignore")
        model = smf.ols(formula, data=frame).fit()
    if model.model.rank < len(model.params):
        notes.append(
            f"the factors are confounded in these runs (rank {model.model.rank} for {len(model.params)} "
            "parameters): their separate effects cannot be told apart; vary one at a time"
        )
    if model.df_resid < 1:
        return {
            "reason": f"not enough data: {n} runs for {len(model.params)} parameters leave no residual "
            "degrees of freedom for intervals",
            "notes": notes,
        }
    ci = model.conf_int(alpha=1 - level)
    terms = [
        {
            "term": _term_name(raw, names),
            "estimate": float(model.params[raw]),
            "ci_low": float(ci.loc[raw, 0]),
            "ci_high": float(ci.loc[raw, 1]),
            "p_value": finite_or_none(model.pvalues[raw]),
        }
        for raw in model.params.index
    ]
    anova = []
    if len(model.params) > 1:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                table = sm.stats.anova_lm(model, typ=2)
            except (ValueError, np.linalg.LinAlgError):
                table = None
        if table is not None:
            anova = [
                {
                    "term": _term_name(str(t), names) if t != "Residual" else "residual",
                    "df": float(r["df"]),
                    "sum_sq": float(r["sum_sq"]),
                    "f": finite_or_none(r.get("F")),
                    "p_value": finite_or_none(r.get("PR(>F)")),
                }
                for t, r in table.iterrows()
            ]
    shown = " + ".join(_term_name(t.strip(), names) for t in formula.split("~", 1)[1].split("+"))
    with (
        np.errstate(all="ignore"),
        warnings.catch_warnings(),
    ):  # R² of a perfect fit is 0/0: None, not a warning
        warnings.simplefilter("ignore")
        r2, adj_r2 = finite_or_none(model.rsquared), finite_or_none(model.rsquared_adj)
    return {
        "model": f"{response} ~ {shown}",
        "r_squared": r2,
        "adj_r_squared": adj_r2,
        "terms": terms,
        "anova": anova,
        "notes": notes,
    }


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


def hyperparams(
    runs: pl.DataFrame,
    *,
    response: str,
    factors: list[str],
    by: list[str],
    level: float = 0.95,
    interactions: bool = False,
    best: str | None = None,
    constraint: str | None = None,
    scales: dict[str, str] | None = None,
) -> AnalysisResult:
    """One entry per group; see the module docstring."""
    columns = [c for c in runs.columns if c not in ("run_idx", "run_id")]
    for name, option in [(response, "--response"), *((f, "--factor") for f in factors)]:
        if name not in columns:
            raise AnalysisInputError(f"{option} {name}: not a run column; use one of {', '.join(columns)}")
    if not factors:
        raise AnalysisInputError(
            "hyperparams needs at least one --factor (e.g. --factor batch_size --factor iterations)"
        )
    if best not in (None, "min", "max"):
        raise AnalysisInputError(f"--best {best!r}: use min or max")
    conditions = parse_constraint(constraint, columns)
    if conditions and best is None:
        raise AnalysisInputError(
            "--constraint chooses among configurations for --best: add --best min or --best max"
        )
    entries, term_rows, effect_rows, proportional_rows, point_rows, best_rows = [], [], [], [], [], []
    scale_notes: list[str] = []
    for group, sub in iter_groups(runs, by):
        complete = sub.drop_nulls([response, *factors]).filter(pl.col(response).cast(pl.Float64).is_finite())
        excluded = sub.height - complete.height
        base = {
            "group": group,
            "response": response,
            "n": complete.height,
            "n_unit": "runs",
            "n_excluded": excluded,
            "level": level,
        }
        if complete.height == 0:
            entries.append(not_enough_entry(f"no run has both {response} and {', '.join(factors)}", **base))
            continue
        scale_of, why = pick_scales(complete, response, factors, scales or {}, interactions, level)
        fit = fit_ols(complete, response, factors, scale_of, interactions, level)
        entry = {
            **base,
            "scale": scale_of,
            "scale_reason": why,
            **{k: v for k, v in fit.items() if k != "notes"},
        }
        if fit.get("notes"):
            entry["notes"] = fit["notes"]
        entry["main_effects"] = main_effects(complete, response, factors, level)
        entry["proportionality"] = proportionality(complete, response, factors, level)
        if best:
            entry["best"] = best_configuration(complete, response, factors, best, conditions, level)
        entries.append(entry)
        tags = {**group, "response": response}
        if best:
            best_rows.append(best_row(tags, entry["best"]))
        where = ", ".join(f"{k} {v}" for k, v in group.items())
        scale_notes += [
            f"{response}{' (' + where + ')' if where else ''}: {f} {w}"
            for f, w in why.items()
            if "R²" in w or "decades or more" in w
        ]
        term_rows += [
            {**tags, **t, "level": level, "n": complete.height, "r_squared": fit.get("r_squared")}
            for t in fit.get("terms", [])
        ]
        effect_rows += [{**tags, **e} for e in entry["main_effects"]]
        proportional_rows += [
            {
                **tags,
                "factor": p["factor"],
                **{f"fixed_{k}": v for k, v in p["fixed"].items()},
                "n": p["n"],
                "level": level,
                "r_squared": p.get("r_squared"),
                "proportional": p.get("proportional"),
                **(
                    {
                        "estimate": p["slope"]["estimate"],
                        "ci_low": p["slope"]["ci_low"],
                        "ci_high": p["slope"]["ci_high"],
                    }
                    if "slope" in p
                    else {"reason": p.get("reason")}
                ),
            }
            for p in entry["proportionality"]
        ]
        point_rows += complete.select(*[c for c in dict.fromkeys([*by, *factors, response])]).to_dicts()
    frames = {
        "terms": rows_frame(term_rows),
        "main_effects": rows_frame(effect_rows),
        "proportionality": rows_frame(proportional_rows),
        "points": rows_frame(point_rows),
    }
    if best_rows:
        frames["best"] = rows_frame(best_rows)
    return AnalysisResult(NAME, level, entries, frames, notes=scale_notes)


def analyse(data: AnalysisData, options: AnalysisOptions) -> AnalysisResult:
    """The registry's entry point: hyperparams for the named response, or for each default
    response the runs have (their entries and frames concatenated)."""
    runs, level, by = data.runs, options.level, options.group_keys(data.runs)
    responses = (
        [options.response]
        if options.response
        else [r for r in DEFAULT_RESPONSES if runs[r].is_not_null().any()]
    )
    if not responses:
        return unavailable(
            NAME, level, "no run has training_time_s or accuracy_pct; name one with --response"
        )
    scales = {**{f: "log" for f in options.log_factors}, **{f: "linear" for f in options.linear_factors}}
    combined: AnalysisResult | None = None
    for response in responses:
        if response not in runs.columns:
            check_group_columns([response], runs, "--response")
        kinds = runs.filter(pl.col(response).is_not_null())["kind"].unique().to_list()
        relevant = runs.filter(pl.col("kind").is_in(kinds)) if kinds else runs
        factors = options.factors or [
            f for f in HYPERPARAMETERS if f in relevant.columns and relevant[f].drop_nulls().n_unique() > 1
        ]
        groups = by or [g for g in HYPERPARAM_GROUPS if relevant[g].drop_nulls().n_unique() > 1]
        if not factors:
            result = unavailable(
                NAME,
                level,
                f"no hyperparameter varies among the runs with {response}; name factors with --factor",
                group={"response": response},
            )
        else:
            result = hyperparams(
                relevant,
                response=response,
                factors=factors,
                by=groups,
                level=level,
                interactions=options.interactions,
                best=options.best,
                constraint=options.constraint,
                scales=scales,
            )
        if combined is None:
            combined = result
        else:
            combined.entries += result.entries
            for key, frame in result.frames.items():
                combined.frames[key] = (
                    pl.concat([combined.frames[key], frame], how="diagonal_relaxed")
                    if key in combined.frames
                    else frame
                )
    _add_iteration_means(combined)
    return combined


def modelled_responses(result: AnalysisResult) -> list[str]:
    """The responses a hyperparams result modelled (those with main effects and a points column)."""
    effects, points = result.frames.get("main_effects"), result.frames.get("points")
    if effects is None or points is None or "response" not in effects.columns:
        return []
    return [r for r in effects["response"].unique(maintain_order=True).to_list() if r in points.columns]


def _add_iteration_means(result: AnalysisResult) -> None:
    """The `vs_iterations` frame (the response against iterations or epochs) where the points have either."""
    points = result.frames.get("points")
    if points is None or not {*ITERATION_FACTORS} & set(points.columns):
        return
    means = iteration_means(points, modelled_responses(result), result.level)
    if means.height:
        result.frames["vs_iterations"] = means
        result.chart_only.add("vs_iterations")


def iteration_means(points: pl.DataFrame, responses: list[str], level: float) -> pl.DataFrame:
    """Mean of each response with its bounded interval (`response_mean`) per iteration count (or
    epochs), per series (batch size, else learning rate or optimizer) and per device / framework,
    however many runs there are: what the response-vs-iterations chart draws (the DLaaS study's
    tables)."""
    factor = next(c for c in ITERATION_FACTORS if c in points.columns)
    series = next((c for c in SERIES_CANDIDATES if c in points.columns and c != factor), None)
    keys = [factor, *([series] if series else []), *(c for c in MEANS_KEPT_APART if c in points.columns)]
    rows = []
    for response in responses:
        measured = points.filter(pl.col(response).is_not_null())
        for values, sub in measured.select(*keys, response).group_by(keys, maintain_order=True):
            e = response_mean(sub, response, level)
            rows.append(
                {
                    **dict(zip(keys, values)),
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
