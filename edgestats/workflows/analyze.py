"""`edgestats analyze` as one call. The analyses of a results DB, with, when asked for, the report
folder (workflows/report.py) and the devices whose rows the terminal lists first.

The CLI parses its flags into an AnalysisOptions, calls `analyze` and hands what it returns to a
renderer (reports/terminal/analyze.py, or the --json document). Cheap to import.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from edgestats.workflows.report import ReportRequest, write_analysis_report


@dataclass
class Analyzed:
    """The results by analysis name (registry order), the report written (ReportFiles, or None)
    and the devices with collected, not imported, runs (empty unless asked for)."""

    results: dict[str, Any]
    report: Any = None
    collected_devices: frozenset[str] = frozenset()


def analyze(
    db: str | Path, options: Any = None, *, report: ReportRequest | None = None, collected: bool = False
) -> Analyzed:
    """run_analyses(db, options); with `report`, the results written as that report; with
    `collected`, the devices that collected runs in the DB too."""
    from edgestats.analysis import run_analyses
    from edgestats.analysis.load.overview import collected_devices

    results = run_analyses(db, options)
    written = write_analysis_report(db, results, report, options) if report is not None else None
    return Analyzed(results, written, collected_devices(db) if collected else frozenset())
