"""The fleet section: per device class and configuration, its units side by side against their class.
Each unit's median latency is drawn as a multiple of the rest of its class with its interval,
flagged units coloured; the variance components (between units, between runs, within a run) get
the report's interval chart and table, and each class its sentence."""

from __future__ import annotations

from typing import Any

import polars as pl

from edgestats.analysis.fleet.stats import FASTER, LIKE_CLASS, SLOWER
from edgestats.formatting import counted
from edgestats.reports import charts_answers
from edgestats.reports.sections import FigureSpec, drawable, figure, pct

DRAWN = frozenset({"units"})
# slower red, faster blue, a unit like its class grey
UNIT_COLOURS = {SLOWER: "#d62728", FASTER: "#1f77b4", LIKE_CLASS: "#7f7f7f"}


def units_chart(units: pl.DataFrame) -> Any:
    """Each unit's ratio to the rest of its class (dot) with its interval (rule), coloured by its
    verdict; one panel per class and configuration, a dashed rule at 1 (the class)."""
    return charts_answers.ratio_chart(
        units,
        category="device",
        x_title="times as long as the rest of its class (log)",
        colours=UNIT_COLOURS,
        ratio_title="times as long as its class",
    )


def figures(result: Any) -> list[FigureSpec]:
    frames = drawable(result)
    title = (
        "Each unit's median latency as a multiple of the rest of its class (dot), with its "
        f"{pct(result.level)} interval (bar), one panel per class and configuration; red: flagged "
        "slower, blue: flagged faster (Holm's step-down across the class's units)"
    )
    return figure(frames, "units", "units", title, units_chart)


def sentences(result: Any) -> list[str]:
    """One sentence per class and configuration, as `analyze` prints them."""
    return [e["sentence"] for e in result.entries if "sentence" in e]


def sentence(result: Any) -> str:
    """How many classes were compared and how many units were flagged, in one sentence."""
    groups = [e for e in result.entries if "unit_ratios" in e]
    if not groups:
        return "No device class has two units with a latency to compare."
    units = [r for e in groups for r in e["unit_ratios"]]
    flagged = [r for r in units if r["verdict"] != LIKE_CLASS]
    text = (
        f"In {counted(len(groups), 'groups')} of a class and configuration, "
        f"{len(flagged)} of {counted(len(units), 'units')} {'differs' if len(flagged) == 1 else 'differ'} "
        "from their class "
        f"(Holm across each class's units, {pct(result.level)} intervals)"
    )
    if flagged:
        return text + ": " + "; ".join(r["verdict_text"] for r in flagged) + "."
    return text + "."
