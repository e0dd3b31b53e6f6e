"""Results written as a report folder, from what the analysis layer loads. What the analysis layer
loads from the DB (its overview, power trace and environment) handed to the report's drawing
(edgestats.reports), which opens no DB.

`analyze --out` and `compare --out` write through here (workflows/analyze.py, workflows/compare.py),
and so can Python: `write_analysis_report(db, results, ReportRequest(out))` with the results of
`edgestats.analysis.run_analyses` (or `Results.analyze(...).results`). Cheap to import: the
analysis stack is imported when a report is written.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class ReportRequest:
    """What `analyze --out DIR` asks for: the folder, every chart as images too (`png`, `svg`),
    and every table in a paper's format (`latex`, `markdown`, `csv`; None: none)."""

    out: Path
    images: Sequence[str] = ()
    tables: str | None = None


def write_analysis_report(
    db: str | Path, results: dict[str, Any], request: ReportRequest, options: Any = None
):
    """DIR/index.html and DIR/analysis.json (+ images/, tables/) for `results`; the DB's overview,
    power trace and environment (of the runs `options`, an AnalysisOptions, select; None: every
    run) are loaded here. Returns the report's ReportFiles (reports/report.py)."""
    from edgestats.analysis.load.environment import load_environment
    from edgestats.analysis.load.overview import load_overview
    from edgestats.analysis.load.power_trace import load_power_trace
    from edgestats.reports import write_report

    environment = load_environment(db, options.where, options.filters) if options else load_environment(db)
    return write_report(
        request.out,
        results,
        load_overview(db),
        load_power_trace(db),
        images=list(request.images),
        tables=request.tables,
        environment=environment,
    )


def write_compare_report(comparison: Any, out: str | Path) -> tuple[Path, Path]:
    """DIR/index.html (the ratios and their intervals) and DIR/compare.json for a Comparison, with
    the overview of each side's DB (one, when both sides are selections of one DB)."""
    from edgestats.analysis.load.overview import load_overview
    from edgestats.reports.compare_page import write_compare_page

    dbs = dict.fromkeys([comparison.a.db, comparison.b.db])
    return write_compare_page(out, comparison, [load_overview(db) for db in dbs])
