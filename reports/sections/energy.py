"""The energy section: energy per inference against latency with the fit, energy per phase and the
time-energy correlations. See pCAMP Figure 3, Insight 3."""

from __future__ import annotations

from typing import Any

import polars as pl

from edgestats.formatting import format_interval
from edgestats.reports import charts_energy
from edgestats.reports.sections import FigureSpec, drawable, figure, pct, with_intervals

DRAWN = frozenset({"points", "fit", "band", "phases", "correlation"})


def figures(result: Any) -> list[FigureSpec]:
    frames = drawable(result)
    # The band's columns name the fit groups even where no group had a line to fit (no rows).
    band = result.frames.get("band")
    band = pl.DataFrame() if band is None else band
    fitted = (
        "with the line fitted through them and its band"
        if band.height
        else "no fitted line: too few configurations to fit one"
    )
    phases = frames.get("phases")
    phases = None if phases is None else phases.filter(pl.col("quantity") == "energy_j")
    return [
        *figure(
            frames,
            "points",
            "time-energy",
            f"Energy per inference against latency, one point per configuration (means over its runs), "
            f"{fitted}",
            lambda points: charts_energy.time_energy_chart(points, band),
        ),
        *figure(
            frames,
            "phases",
            "phase-energy",
            with_intervals("Energy above idle per phase", phases),
            charts_energy.phase_energy_chart,
        ),
        *figure(
            frames,
            "correlation",
            "correlation",
            with_intervals("Correlation of latency and energy per inference", frames.get("correlation")),
            charts_energy.correlation_chart,
        ),
    ]


def sentence(result: Any) -> str:
    corr = result.frames.get("correlation")
    if corr is not None and corr.height:
        pearson = corr.filter(pl.col("method") == "pearson")
        if pearson.height and pearson["estimate"][0] is not None:
            row = pearson.row(0, named=True)
            return (
                f"Across {row['n']} configurations, energy per inference and latency correlate with "
                f"Pearson's r = {format_interval(row['estimate'], row['ci_low'], row['ci_high'])} "
                f"({pct(row['level'])} interval): "
                "a configuration that is slower is "
                + ("also hungrier." if (row["ci_low"] or 0) > 0 else "not reliably hungrier.")
            )
    return "Energy per phase and per inference, with intervals, where a power source measured it."
