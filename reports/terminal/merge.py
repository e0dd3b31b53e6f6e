"""What `edgestats merge` prints. Per input, the runs, rows, devices and baselines it added, from
the reports the merge returned (edgestats/exports/merge.py)."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from edgestats.formatting import counted


def merge_lines(reports: Iterable[Any], out: Path) -> list[str]:
    """One line per merged input, and a note where a device's facts differed from `out`'s."""
    lines = []
    for r in reports:
        migrated = f" (migrated from schema {r.migrated_from} in a copy)" if r.migrated_from else ""
        rows = sum(r.rows_added.values())
        lines.append(
            f"{r.path}{migrated}: {r.runs_added} runs added ({rows} rows), {r.runs_identical} already "
            f"present, {r.devices_added} devices added, {r.baselines_added} baselines added"
        )
        if r.devices_differing:
            lines.append(
                f"  note: {counted(r.devices_differing, 'devices')} already in {out} with other facts; the "
                "existing facts were kept"
            )
    return lines
