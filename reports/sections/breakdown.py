"""The breakdown section: seconds per phase (stacked) and model load against the steady run."""

from __future__ import annotations

from typing import Any

import polars as pl

from edgestats.formatting import format_interval
from edgestats.reports import charts_breakdown
from edgestats.reports.sections import FigureSpec, drawable, figure, label, pct, with_intervals

DRAWN = frozenset({"phases", "ratios"})
NEUTRAL = "Phase times per configuration, with intervals across runs."


RATIO = "load_model / steady"


def figures(result: Any) -> list[FigureSpec]:
    frames = drawable(result)
    ratios = frames.get("ratios")
    ratios = None if ratios is None else ratios.filter(pl.col("ratio") == RATIO)
    return [
        *figure(
            frames,
            "phases",
            "phases",
            with_intervals(
                "Mean seconds per phase (stacked)", frames.get("phases"), drawn="each with its interval"
            ),
            charts_breakdown.phase_breakdown_chart,
        ),
        *figure(
            frames,
            "ratios",
            "ratio",
            with_intervals("Model load time ÷ steady-state run time (above 1: loading costs more)", ratios),
            lambda ratios: charts_breakdown.ratio_chart(
                ratios, ratio_name=RATIO, title="model load time ÷ steady-state run time"
            ),
        ),
    ]


def sentence(result: Any) -> str:
    ratios = result.frames.get("ratios")
    if ratios is None or ratios.height == 0:
        return NEUTRAL
    steady = ratios.filter((pl.col("ratio") == RATIO) & pl.col("estimate").is_not_null())
    if steady.height == 0:
        one = ratios.filter(pl.col("estimate").is_not_null()).sort("estimate")
        if one.height == 0:
            return NEUTRAL
        row = one.row(-1, named=True)
        return (
            "Loading the model takes as long as "
            f"{format_interval(row['estimate'], row['ci_low'], row['ci_high'])} "
            f"single inferences ({label(row, one)}, {pct(row['level'])} interval)."
        )
    exceeds = steady.filter(pl.col("estimate") > 1)
    confident = steady.filter(pl.col("ci_low").is_not_null() & (pl.col("ci_low") > 1))
    top = steady.sort("estimate").row(-1, named=True)
    return (
        "Loading the model costs more than the whole steady-state run in "
        f"{exceeds.height} of {steady.height} configurations ({confident.height} with the whole "
        f"{pct(top['level'])} interval above 1); the largest ratio, {label(top, steady)}, is "
        f"{format_interval(top['estimate'], top['ci_low'], top['ci_high'])}."
    )
