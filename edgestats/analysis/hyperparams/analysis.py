"""hyperparams: how a response depends on its factors, the DLaaS study's tables made into fitted
models. Responses: training time, accuracy, time per epoch, testing time, latency; factors: batch
size, iterations or epochs, learning rate, threads, workers …

Per group (--by), on the runs whose response and factors are all known (the others are counted
in n_excluded):

- OLS in statsmodels: response ~ factors (+ their pairwise interactions when asked), numeric
  factors log10-scaled where they span two decades or more (learning rate 1e-4..1e-2, batch
  size 50..5000), text factors as categories. Per term: estimate, interval, p-value; R²; the
  type-II ANOVA table.
- main effects: the mean response at each level of each factor, with an interval that stays in
  the response's range (edgestats.analysis.estimators.bounded): accuracy on the logit scale (Wilson for one
  run whose test-set size, column n_test, is known), times on the log scale.
- proportionality (for a time response and an iterations/epochs factor): time ~ iterations at
  each fixed batch size — slope (time per iteration), intercept, R², and whether the intercept's
  interval holds 0 with R² ≥ 0.99 (the paper's "training time is proportional to #iterations").
- best: the configuration (factor values) with the min or max mean response, among those that
  satisfy --constraint (e.g. max accuracy with training_time_s <= 600), with the same bounded
  interval of its mean.

Every frame row carries the page filter's fields (device, framework, runtime, model) of the
group's runs (edgestats.analysis.core.filter_tags), a point those of its run.

This module runs them per group and assembles the entries and frames; the model and the scale
choice are in hyperparams/fit.py, the main effects, proportionality and response-vs-iterations
means in hyperparams/effects.py, the configurations (--constraint, --best) in hyperparams/configs.py.
"""

from __future__ import annotations

import polars as pl

from edgestats.analysis.core.filter_tags import FILTER_TAGS, filter_tags, tag_columns
from edgestats.analysis.core.options import AnalysisOptions
from edgestats.analysis.core.result import (
    AnalysisResult,
    iter_groups,
    not_enough_entry,
    rows_frame,
    unavailable,
)
from edgestats.analysis.hyperparams.configs import Condition, best_configuration, best_row, parse_constraint
from edgestats.analysis.hyperparams.effects import iteration_means, main_effects, proportionality
from edgestats.analysis.hyperparams.fit import fit_ols, pick_scales
from edgestats.analysis.load.frames import AnalysisData, AnalysisInputError, check_group_columns
from edgestats.contracts import ITERATION_FACTORS

NAME = "hyperparams"
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
# The frames of every result, in this order; `best` follows where --best was given.
FRAME_KEYS = ("terms", "main_effects", "proportionality", "points")


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
    conditions = _checked_conditions(runs, response, factors, best, constraint)
    entries, scale_notes = [], []
    rows: dict[str, list[dict]] = {key: [] for key in (*FRAME_KEYS, "best")}
    for group, sub in iter_groups(runs, by):
        complete = sub.drop_nulls([response, *factors]).filter(pl.col(response).cast(pl.Float64).is_finite())
        base = {
            "group": group,
            "response": response,
            "n": complete.height,
            "n_unit": "runs",
            "n_excluded": sub.height - complete.height,
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
        scale_notes += _scale_notes(response, group, why)
        _add_rows(rows, {**group, **filter_tags(complete, skip=group), "response": response}, entry, level)
        kept = dict.fromkeys([*by, *tag_columns(complete), *factors, response])
        rows["points"] += complete.select(*kept).to_dicts()
    frames = {key: rows_frame(rows[key]) for key in FRAME_KEYS}
    if rows["best"]:
        frames["best"] = rows_frame(rows["best"])
    return AnalysisResult(NAME, level, entries, frames, notes=scale_notes)


def _checked_conditions(
    runs: pl.DataFrame, response: str, factors: list[str], best: str | None, constraint: str | None
) -> list[Condition]:
    """The parsed --constraint, once the response, factors, --best and --constraint are checked."""
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
    return conditions


def _scale_notes(response: str, group: dict, why: dict[str, str]) -> list[str]:
    """The scale choices worth a note: those the fits decided, or a log scale kept untested."""
    where = ", ".join(f"{k} {v}" for k, v in group.items())
    return [
        f"{response}{' (' + where + ')' if where else ''}: {f} {w}"
        for f, w in why.items()
        if "R²" in w or "decades or more" in w
    ]


def _add_rows(rows: dict[str, list[dict]], tags: dict, entry: dict, level: float) -> None:
    """One group's rows of the terms, main_effects, proportionality and best frames."""
    if "best" in entry:
        rows["best"].append(best_row(tags, entry["best"]))
    rows["terms"] += [
        {**tags, **t, "level": level, "n": entry["n"], "r_squared": entry.get("r_squared")}
        for t in entry.get("terms", [])
    ]
    # a level of a filter field (--factor runtime) is about that value alone, not the group's runs
    rows["main_effects"] += [
        {**tags, **({e["factor"]: str(e["value"])} if e["factor"] in FILTER_TAGS else {}), **e}
        for e in entry["main_effects"]
    ]
    rows["proportionality"] += [_proportional_row(tags, p, level) for p in entry["proportionality"]]


def _proportional_row(tags: dict, p: dict, level: float) -> dict:
    """A proportionality line as a row: the slope with its interval, or why there is none."""
    return {
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
