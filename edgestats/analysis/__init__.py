"""Statistics over merged results: every figure with a confidence interval (DESIGN.md §6).

`run_analyses(db, options)` is the entry point for the CLI and the report: it reads the frames
the chosen analyses need (aggregated in DuckDB, see `load`) and runs each analysis, a pure
function of polars frames (`summary`, `breakdown`, `energy`, `tradeoff`, `hyperparams`,
`pipeline`). Each returns an `AnalysisResult`: JSON entries and tidy figure frames.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from edgestats.analysis.breakdown import breakdown
from edgestats.analysis.energy import energy
from edgestats.analysis.hyperparams import hyperparams
from edgestats.analysis.intervals import DEFAULT_BCA_MAX_N, DEFAULT_LEVEL, DEFAULT_RESAMPLES, BootstrapSettings
from edgestats.analysis.load import (CONFIG_COLUMNS, FILTER_COLUMNS, AnalysisData, AnalysisInputError, Needs,
                                     check_group_columns, load_data)
from edgestats.analysis.pipeline import pipeline
from edgestats.analysis.result import AnalysisResult, json_safe, unavailable
from edgestats.analysis.summary import summarise
from edgestats.analysis.tradeoff import tradeoff

ANALYSES = ("summary", "breakdown", "energy", "tradeoff", "hyperparams", "pipeline")
# Responses and factors hyperparams uses when none are named.
DEFAULT_RESPONSES = ("training_time_s", "accuracy_pct")
HYPERPARAMETERS = ("batch_size", "iterations", "epochs", "learning_rate", "optimizer", "threads", "num_workers")
# Keys whose values are compared as like with like when tradeoff names a winner.
STRATA = ("device", "model", "batch_size")
HYPERPARAM_GROUPS = ("device", "framework", "dataset", "model")

__all__ = ["ANALYSES", "AnalysisOptions", "AnalysisResult", "AnalysisInputError", "run_analyses", "analyse_data",
           "results_json", "breakdown", "energy", "hyperparams", "pipeline", "summarise", "tradeoff"]


@dataclass
class AnalysisOptions:
    """What to analyse and how; the CLI's options one to one (docs/cli/analyze.md)."""

    only: str | None = None
    where: str | None = None
    filters: dict[str, list[str]] = field(default_factory=dict)
    by: list[str] = field(default_factory=list)
    level: float = DEFAULT_LEVEL
    seed: int = 0
    n_resamples: int = DEFAULT_RESAMPLES
    bca_max_n: int = DEFAULT_BCA_MAX_N
    response: str | None = None
    factors: list[str] = field(default_factory=list)
    interactions: bool = False
    best: str | None = None
    constraint: str | None = None
    log_factors: list[str] = field(default_factory=list)
    linear_factors: list[str] = field(default_factory=list)

    def check(self) -> None:
        if self.only is not None and self.only not in ANALYSES:
            raise AnalysisInputError(f"--only {self.only!r}: use one of {', '.join(ANALYSES)}")
        if not 0.5 <= self.level < 1:
            raise AnalysisInputError(f"--level {self.level}: give a confidence level between 0.5 and 1, e.g. 0.95")
        if self.n_resamples < 100:
            raise AnalysisInputError(f"--resamples {self.n_resamples}: use at least 100 (default {DEFAULT_RESAMPLES})")
        unknown = [c for c in self.filters if c not in FILTER_COLUMNS]
        if unknown:
            raise AnalysisInputError(f"no filter option for {', '.join(unknown)}; filter with --where instead")
        both = set(self.log_factors) & set(self.linear_factors)
        if both:
            raise AnalysisInputError(f"{', '.join(sorted(both))}: asked for both --log and --linear")

    @property
    def settings(self) -> BootstrapSettings:
        return BootstrapSettings(n_resamples=self.n_resamples, bca_max_n=self.bca_max_n, seed=self.seed)

    @property
    def selected(self) -> tuple[str, ...]:
        return (self.only,) if self.only else ANALYSES


def _needs(selected: tuple[str, ...]) -> Needs:
    return Needs(latencies=bool({"summary", "tradeoff"} & set(selected)),
                 phases="breakdown" in selected, phase_energy="energy" in selected, epochs="pipeline" in selected)


def run_analyses(db: str | Path, options: AnalysisOptions | None = None) -> dict[str, AnalysisResult]:
    """Every analysis asked for (`options.only`, or all six), keyed by name, in ANALYSES order.

    An analysis the data cannot support is still in the dict: its entries say why
    (`result.available` is False). Raises AnalysisInputError for options the DB cannot answer
    (an unknown column, a bad --where)."""
    options = options or AnalysisOptions()
    options.check()
    data = load_data(db, where=options.where, filters=options.filters, needs=_needs(options.selected))
    return analyse_data(data, options)


def default_config(runs: pl.DataFrame) -> list[str]:
    """The configuration columns the selected runs have values in."""
    return [c for c in CONFIG_COLUMNS if c in runs.columns and runs[c].is_not_null().any()]


def analyse_data(data: AnalysisData, options: AnalysisOptions) -> dict[str, AnalysisResult]:
    """run_analyses on frames already loaded (tests build AnalysisData by hand)."""
    options.check()
    runs, level, settings = data.runs, options.level, options.settings
    if runs.height == 0:
        filters = " and ".join(x for x in [options.where, *(f"{k} in {v}" for k, v in options.filters.items())] if x)
        why = "no ok or diverged runs" + (f" match {filters}" if filters else " in the DB")
        return {name: unavailable(name, level, why) for name in options.selected}
    by = check_group_columns(options.by, runs)
    config = by or default_config(runs)
    present = lambda columns: [c for c in columns if c in runs.columns and runs[c].is_not_null().any()]  # noqa: E731
    results: dict[str, AnalysisResult] = {}
    for name in options.selected:
        if name == "summary":
            results[name] = summarise(runs, data.latencies, by=config, level=level, settings=settings)
        elif name == "breakdown":
            results[name] = breakdown(runs, data.phases, by=config, level=level, settings=settings)
        elif name == "energy":
            results[name] = energy(runs, data.phase_energy, config=default_config(runs), by=by, level=level)
        elif name == "tradeoff":
            results[name] = tradeoff(runs, data.latencies, config=default_config(runs), strata=by or present(STRATA),
                                     level=level, settings=settings)
        elif name == "hyperparams":
            results[name] = _hyperparams(runs, options, by)
        elif name == "pipeline":
            results[name] = pipeline(runs, data.epochs, by=by or None, level=level, settings=settings)
    for result in results.values():
        result.notes += data.notes
    return results


def _hyperparams(runs: pl.DataFrame, options: AnalysisOptions, by: list[str]) -> AnalysisResult:
    """hyperparams for the named response, or for each default response the runs have."""
    level = options.level
    responses = [options.response] if options.response else [r for r in DEFAULT_RESPONSES if runs[r].is_not_null().any()]
    if not responses:
        return unavailable("hyperparams", level, "no run has training_time_s or accuracy_pct; name one with --response")
    scales = {**{f: "log" for f in options.log_factors}, **{f: "linear" for f in options.linear_factors}}
    combined: AnalysisResult | None = None
    for response in responses:
        if response not in runs.columns:
            check_group_columns([response], runs, "--response")
        kinds = runs.filter(pl.col(response).is_not_null())["kind"].unique().to_list()
        relevant = runs.filter(pl.col("kind").is_in(kinds)) if kinds else runs
        factors = options.factors or [f for f in HYPERPARAMETERS if f in relevant.columns and relevant[f].drop_nulls().n_unique() > 1]
        groups = by or [g for g in HYPERPARAM_GROUPS if relevant[g].drop_nulls().n_unique() > 1]
        if not factors:
            result = unavailable("hyperparams", level, f"no hyperparameter varies among the runs with {response}; "
                                 "name factors with --factor", group={"response": response})
        else:
            result = hyperparams(relevant, response=response, factors=factors, by=groups, level=level,
                                 interactions=options.interactions, best=options.best, constraint=options.constraint,
                                 scales=scales)
        if combined is None:
            combined = result
        else:
            combined.entries += result.entries
            for key, frame in result.frames.items():
                combined.frames[key] = pl.concat([combined.frames[key], frame], how="diagonal_relaxed") if key in combined.frames else frame
    return combined


def results_json(results: dict[str, AnalysisResult]) -> dict[str, Any]:
    """The `--json` document: {analysis name: [entries]} (docs/cli/analyze.md)."""
    return {name: result.to_json() for name, result in results.items()}


def dumps(results: dict[str, AnalysisResult]) -> str:
    """JSON text with NaN refused: a NaN here is a bug, not a result."""
    return json.dumps(json_safe(results_json(results)), indent=2, allow_nan=False)


