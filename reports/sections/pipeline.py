"""The pipeline section: fetch stall against workers and storage, resources against batch size."""

from __future__ import annotations

from typing import Any

import polars as pl

from edgestats.formatting import format_interval
from edgestats.reports import charts_training
from edgestats.reports.sections import FigureSpec, drawable, figure, label, pct, with_intervals

DRAWN = frozenset({"workers", "resources"})


def figures(result: Any) -> list[FigureSpec]:
    frames = drawable(result)
    return [
        *figure(
            frames,
            "workers",
            "workers",
            with_intervals(
                "Fetch stall and E2E time per epoch against workers, per storage", frames.get("workers")
            ),
            charts_training.workers_chart,
        ),
        *figure(
            frames,
            "resources",
            "resources",
            with_intervals(
                "How CPU use and memory follow batch size (Spearman's ρ)", frames.get("resources")
            ),
            charts_training.resources_chart,
        ),
    ]


def sentence(result: Any) -> str:
    reductions = result.frames.get("reductions")
    if reductions is not None and reductions.height:
        stall = reductions.filter((pl.col("metric") == "stall_s") & pl.col("estimate").is_not_null())
        if stall.height:
            row = stall.row(0, named=True)
            return (
                f"Going from {row['from_workers']} to {row['to_workers']} data-loading workers cuts the "
                "median fetch stall "
                f"by a factor of {format_interval(row['estimate'], row['ci_low'], row['ci_high'])} "
                f"({label(row, stall)}, {pct(row['level'])} interval)."
            )
    resources = result.frames.get("resources")
    if resources is not None and resources.height:
        row = resources.filter(pl.col("estimate").is_not_null()).sort("estimate").row(-1, named=True)
        return (
            f"{row['y']} rises with batch size with Spearman's ρ = "
            f"{format_interval(row['estimate'], row['ci_low'], row['ci_high'])} "
            f"({pct(row['level'])} interval)."
        )
    return "Fetch stalls against workers and storage, and resource use against batch size."
