"""One module per analysis of the registry (edgestats/registry/analyses.py): what its report
section draws and says.

A section module has `figures(result) -> [(key, title, build)]` (build() returns an Altair
chart, drawn lazily so one bad chart costs only itself) and `sentence(result) -> str` (one
plain sentence, in numbers with an interval). `DRAWN` names the frames its figures draw; the
report gives every other frame with estimates and intervals the generic interval chart. The
helpers here are shared by the section modules.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import polars as pl

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


def unavailable_sentence(result: Any) -> str:
    reasons = [e["reason"] for e in result.entries if "reason" in e]
    return (
        (reasons[0][0].upper() + reasons[0][1:] + ".")
        if reasons
        else "This analysis has nothing to show for this DB."
    )


def _why_missing(rows: pl.DataFrame) -> str:
    """The commonest note of rows without an interval, else what their n says."""
    if "note" in rows.columns and rows["note"].drop_nulls().len():
        return rows["note"].drop_nulls().mode().sort()[0]
    if "n" in rows.columns and rows["n"].drop_nulls().len() and rows["n"].max() < 2:
        return "one run each (an interval needs at least 2)"
    return "the analysis gave none for them"


def with_intervals(
    title: str,
    frame: pl.DataFrame | None,
    *,
    low: str = "ci_low",
    high: str = "ci_high",
    estimate: str = "estimate",
    drawn: str = "with intervals",
) -> str:
    """A caption that promises only the intervals that are drawn: `title` + `drawn` when every
    estimate has an interval, else how many have none and why (the rows' note or their n)."""
    if frame is None or low not in frame.columns or high not in frame.columns:
        return f"{title}; no intervals: the analysis gave none"
    rows = frame.filter(pl.col(estimate).is_not_null()) if estimate in frame.columns else frame
    missing = rows.filter(pl.col(low).is_null() | pl.col(high).is_null())
    if missing.height == 0:
        return f"{title}, {drawn}" if rows.height else title
    if missing.height == rows.height:
        return f"{title}; no intervals drawn: {_why_missing(missing)}"
    return f"{title}, {drawn}; {missing.height} of {rows.height} have none: {_why_missing(missing)}"
