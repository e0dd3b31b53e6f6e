"""The breakdown section: seconds per phase (stacked) and model load against the steady run."""

from __future__ import annotations

from typing import Any

import polars as pl

from edgestats.formatting import format_interval
from edgestats.reports import charts_latency
from edgestats.reports.sections import FigureSpec, drawable, figure, label, pct

DRAWN = frozenset({"phases", "ratios"})
NEUTRAL = "Phase times per configuration, with intervals across runs."


def figures(result: Any) -> list[FigureSpec]:
    frames = drawable(result)
    return [
        *figure(frames, "phases", "phases", "Mean seconds per phase (stacked), each with its interval",
                charts_latency.phase_breakdown_chart),
        *figure(frames, "ratios", "ratio", "Model load ÷ steady-state run (above 1: loading costs more)",
                lambda ratios: charts_latency.ratio_chart(ratios, ratio_name="load_model / steady",
                                                          title="load_model / steady (log scale)")),
    ]


def sentence(result: Any) -> str:
    ratios = result.frames.get("ratios")
    if ratios is None or ratios.height == 0:
        return NEUTRAL
    steady = ratios.filter((pl.col("ratio") == "load_model / steady") & pl.col("estimate").is_not_null())
    if steady.height == 0:
        one = ratios.filter(pl.col("estimate").is_not_null()).sort("estimate")
        if one.height == 0:
            return NEUTRAL
        row = one.row(-1, named=True)
        return (f"Loading the model takes as long as {format_interval(row['estimate'], row['ci_low'], row['ci_high'])} "
                f"single inferences ({label(row, one)}, {pct(row['level'])} interval).")
    exceeds = steady.filter(pl.col("estimate") > 1)
    confident = steady.filter(pl.col("ci_low").is_not_null() & (pl.col("ci_low") > 1))
    top = steady.sort("estimate").row(-1, named=True)
    return (f"Loading the model costs more than the whole steady-state run in {exceeds.height} of {steady.height} "
            f"configurations ({confident.height} with the whole {pct(top['level'])} interval above 1); the largest ratio, "
            f"{label(top, steady)}, is {format_interval(top['estimate'], top['ci_low'], top['ci_high'])}.")
