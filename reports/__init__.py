"""Altair chart builders and the HTML report assembly (installed as `edgestats.reports`).

Reports draw, analyses compute: chart builders (`charts_*`) are pure functions from an analysis
result frame (polars) to an alt.Chart; `sections/` holds one module per analysis of the registry
(its figures and sentence); `page` assembles one self-contained offline HTML page;
`report.write_report` is the one entry point that writes a report folder, from what the
analysis layer loaded (nothing here opens a DB). Importing this package imports nothing heavy,
so the CLI can name it at start-up.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any


def write_report(
    out_dir: str | Path, results: dict[str, Any], overview: Any, power_trace: Any = None, **options: Any
):
    """index.html + analysis.json (+ images/, tables/) for `results`: see report.write_report."""
    from edgestats.reports.report import write_report as write

    return write(out_dir, results, overview, power_trace, **options)
