"""Statistics over merged results: every figure with a confidence interval (docs/architecture.md §6).

`run_analyses(db, options)` (core/run.py) is the entry point for the CLI and the report: it reads
the frames the chosen analyses need (aggregated in DuckDB, see `load/`) and runs each analysis of
the registry (edgestats/registry/analyses.py): a subject package (`summary/`, `answers/`, ...)
whose `analysis.py` holds `analyse(data, options)`, a pure function of polars frames. Each returns
an `AnalysisResult`: JSON entries and tidy figure frames. `core/` holds what every analysis takes
and returns (the options, declared once in core/flags.py, and the result) and the loop that runs
them, `estimators/` the intervals and tests they share, `load/` the loaders (the report's header
and power trace have their own: `load.overview`, `load.power_trace`), `compare/` the statistics of
`edgestats compare`.

The names below are resolved on first use (PEP 562): the CLI imports the options' declaration
(core/flags.py) at start-up, which runs this file, and must not import polars with it.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "ANALYSES",
    "AnalysisData",
    "AnalysisOptions",
    "AnalysisResult",
    "AnalysisInputError",
    "run_analyses",
    "analyse_data",
    "default_config",
    "dumps",
    "results_json",
]

_RUN = ("ANALYSES", "run_analyses", "analyse_data", "needs_of", "dumps", "results_json")
_FRAMES = ("AnalysisData", "AnalysisInputError", "default_config")


def __getattr__(name: str) -> Any:
    if name in _RUN:
        from edgestats.analysis.core import run as home
    elif name in _FRAMES:
        from edgestats.analysis.load import frames as home
    elif name == "AnalysisOptions":
        from edgestats.analysis.core import options as home
    elif name == "AnalysisResult":
        from edgestats.analysis.core import result as home
    else:
        raise AttributeError(f"module 'edgestats.analysis' has no attribute {name!r}")
    return getattr(home, name)


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
