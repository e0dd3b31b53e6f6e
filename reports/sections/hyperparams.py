"""The hyperparams section: main effects, the response against iterations, the fitted terms."""

from __future__ import annotations

from typing import Any

import polars as pl

from edgestats.formatting import format_interval, format_number
from edgestats.reports import charts_training
from edgestats.reports.sections import FigureSpec, drawable, figure, with_intervals

# `points` are the runs behind the figures, drawn through their means (vs_iterations).
DRAWN = frozenset({"main_effects", "vs_iterations", "points"})
NEUTRAL = "Mean response at each level of each hyperparameter, with intervals."


def figures(result: Any) -> list[FigureSpec]:
    frames = drawable(result)
    return [
        *figure(
            frames,
            "main_effects",
            "main-effects",
            with_intervals(
                "Main effects: mean response at each level of each factor", frames.get("main_effects")
            ),
            charts_training.main_effects_chart,
        ),
        *figure(
            frames,
            "vs_iterations",
            "vs-iterations",
            with_intervals(
                "The response against iterations, one line per batch size", frames.get("vs_iterations")
            ),
            charts_training.response_vs_iterations_chart,
        ),
    ]


def sentence(result: Any) -> str:
    terms = result.frames.get("terms")
    if terms is None or terms.height == 0:
        return NEUTRAL
    fitted = terms.filter((pl.col("term") != "intercept") & pl.col("estimate").is_not_null())
    if fitted.height == 0:
        return NEUTRAL
    parts = []
    for response, sub in fitted.group_by("response", maintain_order=True):
        row = sub.sort("p_value", nulls_last=True).row(0, named=True)
        r2 = f", R² = {format_number(row['r_squared'])}" if row.get("r_squared") is not None else ""
        parts.append(
            f"{response[0]} depends most clearly on {row['term']} (coefficient "
            f"{format_interval(row['estimate'], row['ci_low'], row['ci_high'])}{r2})"
        )
    return "In the fitted models, " + "; ".join(parts) + "."
