"""Altair chart builders and the HTML report assembly (installed as `edgestats.reports`).

Chart builders (`charts`) are pure functions from an analysis result frame (polars) to an
alt.Chart; `page` assembles one self-contained offline HTML page; `report.write_report` is the
one entry point that writes a report folder. Importing this package imports nothing heavy, so
the CLI can name it at start-up.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any


def write_report(db: str | Path, out_dir: str | Path, results: dict[str, Any], **options: Any):
    """index.html + analysis.json (+ images/, tables/) for `results` of `db`: see report.write_report."""
    from edgestats.reports.report import write_report as write

    return write(db, out_dir, results, **options)
