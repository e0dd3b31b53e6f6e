"""The generation section: each configuration's figures with run-level intervals, and decode time
against context depth. The figures are time to first token, prefill and decode tokens per second,
inter-token latency p50 / p90 / p99 and energy per token; decode time per token is drawn against
context depth with the fitted line. It draws what edgestats.analysis.generation.analysis computed
and computes nothing."""

from __future__ import annotations

from typing import Any

import polars as pl

from edgestats.formatting import format_interval
from edgestats.reports import charts_generation as charts
from edgestats.reports.charts_common import group_columns
from edgestats.reports.sections import (
    FigureSpec,
    drawable,
    figure,
    pct,
    unavailable_sentence,
    with_intervals,
)

DRAWN = frozenset({"metrics", "depth_points", "depth_band", "depth_fit"})


def label(row: dict, frame: pl.DataFrame) -> str:
    """The configuration of a row in words, as the charts label it (charts_generation.config_label)."""
    keys = group_columns(frame, {"metric", "n_runs", "term"})
    return charts.config_label(row, charts.shown_keys(frame, keys))


def _metric_rows(frames: dict[str, pl.DataFrame], *metrics: str) -> pl.DataFrame | None:
    rows = frames.get("metrics")
    if rows is None:
        return None
    chosen = rows.filter(pl.col("metric").is_in(list(metrics)) & pl.col("estimate").is_not_null())
    return chosen if chosen.height else None


def _metric_figure(frames, metrics: tuple[str, ...], key: str, title: str, build) -> list[FigureSpec]:
    rows = _metric_rows(frames, *metrics)
    if rows is None:
        return []
    return [
        (
            key,
            with_intervals(title, rows, drawn="each with its interval across runs"),
            lambda: build(frames["metrics"]),
        )
    ]


def figures(result: Any) -> list[FigureSpec]:
    frames = drawable(result)
    band = frames.get("depth_band", pl.DataFrame())
    return [
        *_metric_figure(
            frames,
            ("decode_tokens_per_s", "prefill_tokens_per_s"),
            "rates",
            "Prefill and decode tokens per second",
            charts.rates_chart,
        ),
        *_metric_figure(
            frames,
            ("ttft_ms",),
            "ttft",
            "Time to first token (the prompt's prefill and the first token's pick)",
            charts.ttft_chart,
        ),
        *_metric_figure(
            frames,
            ("itl_p50_ms", "itl_p90_ms", "itl_p99_ms"),
            "itl",
            "Inter-token latency p50, p90 and p99 across processes",
            charts.itl_chart,
        ),
        *_metric_figure(
            frames,
            ("prefill_energy_per_token_j", "decode_energy_per_token_j"),
            "energy",
            "Energy per token above idle, prefill and decode",
            charts.energy_chart,
        ),
        *figure(
            frames,
            "depth_points",
            "depth",
            "Decode time per token against context depth: each run, the OLS line and its band",
            lambda points: charts.depth_chart(points, band),
        ),
    ]


def _fastest_decode(rows: pl.DataFrame) -> str:
    top = rows.sort("estimate").row(-1, named=True)
    return (
        f"The fastest decode is {format_interval(top['estimate'], top['ci_low'], top['ci_high'])} tokens "
        f"per second ({label(top, rows)}, {pct(top['level'])} interval across runs)"
    )


def _slope_words(fit: pl.DataFrame | None) -> str:
    if fit is None:
        return ""
    slopes = fit.filter((pl.col("term") == "slope_ms_per_token") & pl.col("estimate").is_not_null())
    if slopes.height == 0:
        return ""
    row = slopes.sort("estimate").row(-1, named=True)
    return (
        f"; in the steepest depth fit ({label(row, slopes)}) each token already in the KV cache adds "
        f"{format_interval(1000 * row['estimate'], *_us(row))} µs to a decode step"
    )


def _us(row: dict) -> tuple[float | None, float | None]:
    return tuple(1000 * row[c] if row[c] is not None else None for c in ("ci_low", "ci_high"))


def sentence(result: Any) -> str:
    frames = drawable(result)
    decode = _metric_rows(frames, "decode_tokens_per_s")
    if decode is None:
        return unavailable_sentence(result)
    return _fastest_decode(decode) + _slope_words(frames.get("depth_fit")) + "."
