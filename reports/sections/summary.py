"""The summary section: latency per configuration, over a box plot of the pooled latencies, and
their ECDF. The latency is summary's run-level median with its interval, p90 and p99.

The `variance` frame (runs, latencies, between- and within-run SD, recommended runs) is shown
as a table, as every frame that is not chart-only is."""

from __future__ import annotations

from typing import Any

import polars as pl

from edgestats.formatting import counted, format_interval, format_number
from edgestats.reports import charts_latency
from edgestats.reports.sections import FigureSpec, drawable, figure, label, pct, with_intervals

DRAWN = frozenset({"metrics", "distribution", "ecdf"})


def figures(result: Any) -> list[FigureSpec]:
    frames = drawable(result)
    metrics, ecdf = frames.get("metrics"), frames.get("ecdf")
    medians = None if metrics is None else metrics.filter(pl.col("metric") == "latency_median_ms")
    latency = with_intervals(
        "Steady-state latency per configuration: the median across runs (tick), thin ticks at p90 and p99; "
        "behind them a box plot of the pooled latencies (box p25–p75, whiskers p5–p95)",
        medians,
        drawn="the median with its interval (dark bar)",
    )
    ecdf_title = "ECDF of the pooled steady-state latencies per configuration (51 quantiles each)"
    if ecdf is not None:
        _, left_out = charts_latency.ecdf_spread(ecdf)
        ecdf_title += (
            f"; {left_out} configuration{'s' if left_out != 1 else ''} with a single latency figure "
            "(imported results) left out"
            if left_out
            else ""
        )
    return [
        *figure(
            frames,
            "metrics",
            "latency",
            latency,
            lambda metrics: charts_latency.latency_distribution_chart(metrics, frames.get("distribution")),
        ),
        *figure(frames, "ecdf", "ecdf", ecdf_title, charts_latency.latency_ecdf_chart),
    ]


def runs_basis(row: dict[str, Any]) -> str:
    """What the interval rests on: the runs it is across, or one run's latencies (then it covers
    within-run variance only, and the sentence says so)."""
    runs = row.get("n_runs")
    if row.get("n_unit") == "runs" and row.get("n"):
        return f" across {counted(int(row['n']), 'runs')}"
    if runs == 1:
        return ", one run: within-run variance only"
    return ""


def sentence(result: Any) -> str:
    frame = result.frames.get("metrics")
    medians = frame.filter((pl.col("metric") == "latency_median_ms") & pl.col("estimate").is_not_null()).sort(
        "estimate"
    )
    if medians.height == 0:
        return "No configuration has a latency."
    fast, slow = medians.row(0, named=True), medians.row(-1, named=True)
    text = (
        f"Median steady-state latency of {label(fast, medians)} is "
        f"{format_interval(fast['estimate'], fast['ci_low'], fast['ci_high'])} ms "
        f"({pct(fast['level'])} interval"
        f"{runs_basis(fast)})"
    )
    if medians.height > 1:
        text += (
            f", the fastest of {medians.height} configurations; the slowest, {label(slow, medians)}, takes "
            f"{format_interval(slow['estimate'], slow['ci_low'], slow['ci_high'])} ms, "
            f"{format_number(slow['estimate'] / fast['estimate'])}× as long"
        )
    return text + "."
