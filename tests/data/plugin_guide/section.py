"""The throughput section: mean inferences per second per configuration, each with its interval.

The plug-in guide's example section (docs/architecture.md §8): tests/test_plugin_guide.py writes
this file as reports/sections/throughput.py in a copy of the repository. It draws what the
analysis computed and computes nothing.
"""

from __future__ import annotations

from typing import Any

import polars as pl

from edgestats.formatting import format_interval
from edgestats.reports.charts_common import estimate_interval_chart, group_columns, label_column
from edgestats.reports.sections import FigureSpec, drawable, figure, label, pct, with_intervals

DRAWN = frozenset({"rates"})


def rates_chart(rates: pl.DataFrame) -> Any:
    """A dot per configuration at its mean throughput, a rule across its interval."""
    frame = label_column(rates, group_columns(rates, {"metric"}))
    return estimate_interval_chart(frame, category="config", x_title="inferences per second")


def figures(result: Any) -> list[FigureSpec]:
    frames = drawable(result)
    title = with_intervals("Mean inferences per second across runs", frames.get("rates"))
    return figure(frames, "rates", "rates", title, rates_chart)


def sentence(result: Any) -> str:
    rates = drawable(result).get("rates")
    if rates is None:
        return "No run has a throughput to show."
    top = rates.filter(pl.col("estimate").is_not_null()).sort("estimate").row(-1, named=True)
    return (
        f"The highest mean throughput is {format_interval(top['estimate'], top['ci_low'], top['ci_high'])} "
        f"inferences per second ({label(top, rates)}, {pct(top['level'])} interval)."
    )
