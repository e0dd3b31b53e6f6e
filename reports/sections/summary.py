"""The summary section: latency per configuration (box plot with the median's interval, ECDF)."""

from __future__ import annotations

from typing import Any

import polars as pl

from edgestats.formatting import format_interval, format_number
from edgestats.reports import charts_latency
from edgestats.reports.sections import FigureSpec, drawable, figure, label, pct

DRAWN = frozenset({"metrics", "distribution", "ecdf"})


def figures(result: Any) -> list[FigureSpec]:
    frames = drawable(result)
    return [
        *figure(frames, "metrics", "latency", "Steady-state latency per configuration: box p25–p75, whiskers p5–p95, "
                "dotted to p99, median tick with its interval (dark bar)",
                lambda metrics: charts_latency.latency_distribution_chart(metrics, frames.get("distribution"))),
        *figure(frames, "ecdf", "ecdf", "ECDF of the steady-state latencies per configuration (51 quantiles each)",
                charts_latency.latency_ecdf_chart),
    ]


def sentence(result: Any) -> str:
    frame = result.frames.get("metrics")
    medians = frame.filter((pl.col("metric") == "latency_median_ms") & pl.col("estimate").is_not_null()).sort("estimate")
    if medians.height == 0:
        return "No configuration has a latency."
    fast, slow = medians.row(0, named=True), medians.row(-1, named=True)
    text = (f"Median steady-state latency of {label(fast, medians)} is "
            f"{format_interval(fast['estimate'], fast['ci_low'], fast['ci_high'])} ms ({pct(fast['level'])} interval)")
    if medians.height > 1:
        text += (f", the fastest of {medians.height} configurations; the slowest, {label(slow, medians)}, takes "
                 f"{format_interval(slow['estimate'], slow['ci_low'], slow['ci_high'])} ms, "
                 f"{format_number(slow['estimate'] / fast['estimate'])}× as long")
    return text + "."
