"""The energy section: energy per inference against latency (with the fit), energy per phase,
and the time-energy correlations (pCAMP Figure 3, Insight 3)."""

from __future__ import annotations

from typing import Any

import polars as pl

from edgestats.formatting import format_interval
from edgestats.reports import charts_energy
from edgestats.reports.sections import FigureSpec, drawable, figure, pct

DRAWN = frozenset({"points", "fit", "band", "phases", "correlation"})


def figures(result: Any) -> list[FigureSpec]:
    frames = drawable(result)
    # The band's columns name the fit groups even where no group had a line to fit (no rows).
    band = result.frames.get("band")
    band = pl.DataFrame() if band is None else band
    return [
        *figure(frames, "points", "time-energy", "Energy per inference against latency, with the fitted line and its band",
                lambda points: charts_energy.time_energy_chart(points, band)),
        *figure(frames, "phases", "phase-energy", "Energy above idle per phase, with intervals",
                charts_energy.phase_energy_chart),
        *figure(frames, "correlation", "correlation", "Correlation of latency and energy per inference, with intervals",
                charts_energy.correlation_chart),
    ]


def sentence(result: Any) -> str:
    corr = result.frames.get("correlation")
    if corr is not None and corr.height:
        pearson = corr.filter(pl.col("method") == "pearson")
        if pearson.height and pearson["estimate"][0] is not None:
            row = pearson.row(0, named=True)
            return (f"Across {row['n']} configurations, energy per inference and latency correlate with Pearson's "
                    f"r = {format_interval(row['estimate'], row['ci_low'], row['ci_high'])} ({pct(row['level'])} interval): "
                    "a configuration that is slower is " + ("also hungrier." if (row["ci_low"] or 0) > 0 else
                                                            "not reliably hungrier."))
    return "Energy per phase and per inference, with intervals, where a power source measured it."
