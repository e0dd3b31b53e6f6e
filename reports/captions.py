"""What a report says where a result falls short, for the page (report.py) and the section modules
(sections/) alike. That is a figure's caption that promises only the intervals that are drawn, and
the sentence of an analysis that has nothing to show."""

from __future__ import annotations

from typing import Any

import polars as pl


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
