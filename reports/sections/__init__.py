"""One module per analysis of the registry (edgestats/registry/analyses.py): what its report
section draws and says.

A section module has `figures(result) -> [(key, title, build)]` (build() returns an Altair
chart, drawn lazily so one bad chart costs only itself) and `sentence(result) -> str` (one
plain sentence, in numbers with an interval). `DRAWN` names the frames its figures draw; the
report gives every other frame with estimates and intervals the generic interval chart. The
helpers here are shared by the section modules; the captions and the sentence of an analysis
with nothing to show come from reports/captions.py, which the report shares.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import polars as pl

# report.py says these too, so they live below both (reports/captions.py); section modules and
# plug-ins import them from here as before.
from edgestats.reports.captions import unavailable_sentence as unavailable_sentence
from edgestats.reports.captions import with_intervals as with_intervals

FigureSpec = tuple[str, str, Callable[[], Any]]  # (key, title, build)

# Columns that are figures or bookkeeping, never what names a row in a sentence.
GROUP_EXCLUDE = {
    "metric",
    "n_runs",
    "estimate",
    "ci_low",
    "ci_high",
    "level",
    "n",
    "n_unit",
    "method",
    "note",
    "phase",
    "share_of_total",
    "ratio",
    "load_exceeds_steady",
    "confident",
    "part",
    "quantity",
}


def drawable(result: Any) -> dict[str, pl.DataFrame]:
    """The result's frames that have rows."""
    return {k: f for k, f in result.frames.items() if f is not None and f.height}


def figure(
    frames: dict[str, pl.DataFrame],
    frame_key: str,
    key: str,
    title: str,
    build: Callable[[pl.DataFrame], Any],
) -> list[FigureSpec]:
    """[(key, title, build on that frame)] when the frame is there, else nothing."""
    if frame_key not in frames:
        return []
    frame = frames[frame_key]
    return [(key, title, lambda: build(frame))]


def pct(level: float) -> str:
    return f"{level * 100:g} %"


def label(row: dict[str, Any], frame: pl.DataFrame) -> str:
    """The values of the columns that vary in the frame (falls back to all group columns)."""
    keys = [
        c
        for c in frame.columns
        if c not in GROUP_EXCLUDE and frame.schema[c] in (pl.String, pl.Int64, pl.Int32)
    ]
    varying = [c for c in keys if frame[c].n_unique() > 1] or keys
    return " / ".join(str(row[c]) for c in varying if row.get(c) is not None) or "all runs"
