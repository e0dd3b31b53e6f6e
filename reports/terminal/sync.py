"""What `edgestats sync` prints: per source, the runs it added and those already there, or why not.

The last line says whether every source was synced (edgestats/workflows/sync.py)."""

from __future__ import annotations

from typing import Any

from edgestats.formatting import counted


def sync_lines(report: Any) -> list[str]:
    lines = []
    for s in report.sources:
        if s.refused:
            lines.append(f"{s.path.name}: refused: {s.refused}")
        else:
            lines.append(f"{s.path.name}: {counted(s.runs_new, 'new runs')}, {s.runs_already} already there")
    synced = len(report.sources) - len(report.refused)
    new = sum(s.runs_new for s in report.sources)
    total = counted(len(report.sources), "sources")
    last = f"{synced} of {total} synced into {report.into}, {counted(new, 'new runs')}"
    if report.refused:
        last += f"; {len(report.refused)} refused (see above): fix or leave them out and sync again"
    return [*lines, last]
