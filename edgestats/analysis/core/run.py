"""Running the analyses and writing their results as JSON. `run_analyses(db, options)` reads the frames
the chosen analyses need and runs each analysis of the registry on them, and `dumps` writes their
results as the `--json` document.

The entry point of the CLI (through edgestats/workflows/analyze.py), the Python API and the tests;
`edgestats.analysis` names these functions (docs/architecture.md §6).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from edgestats.analysis.core.options import AnalysisOptions
from edgestats.analysis.core.result import AnalysisResult, json_safe, unavailable
from edgestats.analysis.load.frames import AnalysisData, Needs, load_data
from edgestats.registry import analyses as registry
from edgestats.registry import resolve

# The analyses' names in registry order, as they were when this module was imported.
ANALYSES = registry.analysis_names()


def needs_of(selected: tuple[str, ...]) -> Needs:
    """The frames the selected analyses' registry entries ask for."""
    return Needs.of(frame for name in selected for frame in registry.analysis(name).needs)


def run_analyses(db: str | Path, options: AnalysisOptions | None = None) -> dict[str, AnalysisResult]:
    """Every analysis asked for (`options.only`, or all of the registry), keyed by name, in
    registry order.

    An analysis the data cannot support is still in the dict: its entries say why
    (`result.available` is False). Raises AnalysisInputError for options the DB cannot answer
    (an unknown column, a bad --where)."""
    options = options or AnalysisOptions()
    options.check()
    data = load_data(db, where=options.where, filters=options.filters, needs=needs_of(options.selected))
    return analyse_data(data, options)


def analyse_data(data: AnalysisData, options: AnalysisOptions) -> dict[str, AnalysisResult]:
    """run_analyses on frames already loaded (tests build AnalysisData by hand)."""
    options.check()
    runs, level = data.runs, options.level
    if runs.height == 0:
        filters = " and ".join(
            x for x in [options.where, *(f"{k} in {v}" for k, v in options.filters.items())] if x
        )
        why = "no ok or diverged runs" + (f" match {filters}" if filters else " in the DB")
        return {name: unavailable(name, level, why) for name in options.selected}
    options.group_keys(runs)  # a bad --by fails once, before any analysis runs
    results: dict[str, AnalysisResult] = {}
    for name in options.selected:
        results[name] = resolve(registry.analysis(name).analyse)(data, options)
    for result in results.values():
        result.notes += data.notes
    return results


def results_json(results: dict[str, AnalysisResult]) -> dict[str, Any]:
    """The `--json` document: {analysis name: [entries]} (docs/cli/analyze.md)."""
    return {name: result.to_json() for name, result in results.items()}


def dumps(results: dict[str, AnalysisResult]) -> str:
    """JSON text with NaN refused: a NaN here is a bug, not a result."""
    return json.dumps(json_safe(results_json(results)), indent=2, allow_nan=False)
