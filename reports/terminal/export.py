"""What `edgestats export` prints. Each table exported with its rows and partitions, or what an
--append added to a lake, from what edgestats/exports/parquet.py and append.py returned."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from edgestats.formatting import counted


def export_lines(manifest: dict[str, Any], db: Path, parquet: Path) -> list[str]:
    """A line per table of the export's manifest, then the totals."""
    tables = manifest["tables"]
    width = max(len(name) for name in tables)
    lines = []
    for name, table in tables.items():
        if table["partitioned_by"]:
            where = counted(len(table["partitions"]), "devices")
        elif table["rows"] == 0:
            where = "empty (one zero-row file)"
        else:
            where = "unpartitioned"
        lines.append(f"  {name:<{width}}  {table['rows']:>10,} rows  {where}")
    total = sum(t["rows"] for t in tables.values())
    lines.append(
        f"exported {len(tables)} tables ({total:,} rows, schema version {manifest['schema_version']}) "
        f"from {db} to {parquet}"
    )
    return lines


def append_line(result: dict[str, Any], db: Path, lake: Path) -> str:
    """What `export --append` added to the lake, table by table, or that it added nothing."""
    added = {t: n for t, n in result["added"].items() if n}
    if not added:
        return f"{db}: nothing to add, {lake} already holds all its runs"
    rows = ", ".join(f"{t} {n:,}" for t, n in sorted(added.items()))
    return f"appended {counted(result['runs_added'], 'runs')} of {db} to {lake} ({rows} rows)"
