"""What `edgestats migrate` prints: the schema a DB went from and to, with the migrations applied."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any


def migrate_line(db: Path, before: int, applied: Sequence[Any], latest: int) -> str:
    """`applied`: the migrations run (each with its version and name); none: already at `latest`."""
    if not applied:
        return f"{db}: already at schema {latest}"
    names = ", ".join(f"{m.version:04d}_{m.name}" for m in applied)
    return f"{db}: schema {before} -> {latest} ({names})"
