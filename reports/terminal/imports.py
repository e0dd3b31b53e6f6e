"""What `edgestats import` prints. What an import added, how each column was read, what was kept
as extra, and its notes, from the ImportReport the importer returned (edgestats/imports/importer.py).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from edgestats.formatting import counted


def import_lines(report: Any, db: Path, *, replace: bool) -> list[str]:
    """The lines for one ImportReport; `replace`: the import replaced an earlier one's runs."""
    replaced = f", {counted(report.runs_replaced, 'runs')} of its earlier import replaced" if replace else ""
    lines = [
        f"{report.file.name}: {counted(report.rows, 'rows')} -> {counted(report.runs_added, 'runs')} added, "
        f"{report.runs_already_present} already in {db}{replaced}",
        "  columns: " + ", ".join(f"{src} -> {dst}" for src, dst in report.columns.items()),
    ]
    if report.extra_columns:
        lines.append("  kept as extra JSON: " + ", ".join(report.extra_columns))
        lines.append(
            "  queryable in view run_extra as: "
            + ", ".join(report.extra_view.get(c, "?") for c in report.extra_columns)
        )
    if report.diverged_rows:
        lines.append(f"  rows with NaN/inf values stored as status 'diverged': {report.diverged_rows}")
    lines.append(f"  devices: {', '.join(report.devices)}")
    return lines + [f"  note: {note}" for note in report.notes]
