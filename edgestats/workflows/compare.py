"""`edgestats compare` as one call: B against A from the command's options, and, when asked for,
the comparison drawn as a page (workflows/report.py).

The CLI parses its flags, calls `compare` and hands what it returns to a renderer
(reports/terminal/compare.py). Cheap to import.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from edgestats.analysis.compare.flags import compare_from_flags
from edgestats.workflows.report import write_compare_report


@dataclass
class Compared:
    """The Comparison, and the page and JSON written for `out` (None without)."""

    comparison: Any
    page: tuple[Path, Path] | None = None


def compare(
    db_a: str | Path, db_b: str | Path | None = None, *, out: Path | None = None, **flags: Any
) -> Compared:
    """compare_from_flags(db_a, db_b, **flags) (edgestats/analysis/compare/flags.py); with `out`,
    the comparison written there as index.html and compare.json too."""
    comparison = compare_from_flags(db_a, db_b, **flags)
    return Compared(comparison, write_compare_report(comparison, out) if out is not None else None)
