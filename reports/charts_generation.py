"""Chart builders of the generation analysis: estimates side by side, and decode time per token
against context depth. Per configuration, the estimates of a few related quantities stand side by
side (prefill and decode tokens per second; inter-token p50 / p90 / p99; energy per token of prefill
and decode), each a dot with a rule across its interval; decode time per token against context depth
has the runs as points, the fitted line and its band.

Pure: frames of edgestats.analysis.generation.analysis in, an Altair chart out; no statistic here.
"""

from __future__ import annotations

import altair as alt
import polars as pl

from edgestats.reports.charts_common import (
    EXACT,
    WIDTH,
    category_encoding,
    estimate_interval_chart,
    filter_fields,
    group_columns,
    no_data_chart,
    varying,
)

# What each metric is called in a legend.
SHORT = {
    "prefill_tokens_per_s": "prefill",
    "decode_tokens_per_s": "decode",
    "itl_p50_ms": "p50",
    "itl_p90_ms": "p90",
    "itl_p99_ms": "p99",
    "prefill_energy_per_token_j": "prefill",
    "decode_energy_per_token_j": "decode",
    "ttft_ms": "time to first token",
}
MIN_PANEL_HEIGHT = 80
# Numbers in a configuration's label say what they count ("prompt 16 · depth 512", not "16 · 512").
NAMED = {
    "prompt_tokens": "prompt",
    "new_tokens": "new",
    "context_depth": "depth",
    "batch_size": "batch",
    "threads": "threads",
}


def config_label(row: dict, keys: list[str]) -> str:
    """A configuration in words: its values of `keys`, the numbers first, each with what it counts
    ("depth 512 · pytorch"): a narrow screen cuts a label's end, so what tells rows apart leads."""
    ordered = [k for k in keys if k in NAMED] + [k for k in keys if k not in NAMED]
    parts = [f"{NAMED[k]} {row[k]}" if k in NAMED else str(row[k]) for k in ordered if row.get(k) is not None]
    return " · ".join(parts) or "all runs"


def labelled(frame: pl.DataFrame, keys: list[str]) -> pl.DataFrame:
    """`frame` with its `config` label made of `keys` (config_label)."""
    labels = [config_label(row, keys) for row in frame.select(keys).iter_rows(named=True)] if keys else None
    return frame.with_columns(pl.Series("config", labels or ["all runs"] * frame.height, pl.String))


def shown_keys(frame: pl.DataFrame, candidates: list[str]) -> list[str]:
    """The candidate columns that vary in the frame (all of them where none varies), without the
    runtime where the framework alone tells it (one runtime per framework: "llamacpp", not
    "llamacpp · cpu")."""
    keys = varying(frame, candidates) or candidates
    if {"framework", "runtime"} <= set(keys):
        pairs = frame.select("framework", "runtime").unique().height
        if pairs == frame["framework"].n_unique():
            keys = [k for k in keys if k != "runtime"]
    return keys


def config_frame(metrics: pl.DataFrame, chosen: tuple[str, ...]) -> pl.DataFrame:
    """The rows of `chosen` metrics that have an estimate, labelled by the configuration columns
    that vary among them (`config`) and by the metric's short name (`quantity`)."""
    frame = metrics.filter(pl.col("metric").is_in(list(chosen)) & pl.col("estimate").is_not_null())
    keys = group_columns(frame, {"metric", "n_runs", "quantity"})
    frame = labelled(frame, shown_keys(frame, keys))
    return frame.with_columns(
        pl.col("metric").replace_strict(SHORT, default=pl.col("metric")).alias("quantity")
    )


def side_by_side_chart(
    metrics: pl.DataFrame, chosen: tuple[str, ...], *, x_title: str, log_x: bool = False
) -> alt.LayerChart | alt.Chart:
    """One band per configuration, a row inside it per metric (yOffset), coloured by metric: a dot
    at the estimate and a rule across its interval (none where the row has no interval)."""
    frame = config_frame(metrics, chosen)
    if frame.height == 0:
        return no_data_chart("nothing to draw: no configuration has these figures")
    order = [SHORT.get(m, m) for m in chosen if SHORT.get(m, m) in set(frame["quantity"].to_list())]
    return estimate_interval_chart(
        frame,
        category="config",
        x_title=x_title,
        color="quantity",
        log_x=log_x,
        offset_order=order,
        min_height=MIN_PANEL_HEIGHT,
    )


def ttft_chart(metrics: pl.DataFrame) -> alt.LayerChart | alt.Chart:
    """Time to first token per configuration: a dot and a rule across its interval."""
    return side_by_side_chart(metrics, ("ttft_ms",), x_title="time to first token (ms)")


def rates_chart(metrics: pl.DataFrame) -> alt.LayerChart | alt.Chart:
    """Prefill and decode tokens per second per configuration (log axis: they differ tenfold)."""
    return side_by_side_chart(
        metrics,
        ("prefill_tokens_per_s", "decode_tokens_per_s"),
        x_title="tokens per second (log)",
        log_x=True,
    )


def itl_chart(metrics: pl.DataFrame) -> alt.LayerChart | alt.Chart:
    """Inter-token latency p50, p90 and p99 per configuration, across processes."""
    return side_by_side_chart(
        metrics, ("itl_p50_ms", "itl_p90_ms", "itl_p99_ms"), x_title="inter-token latency (ms)"
    )


def energy_chart(metrics: pl.DataFrame) -> alt.LayerChart | alt.Chart:
    """Energy per token above idle of prefill and of decode, per configuration."""
    return side_by_side_chart(
        metrics,
        ("prefill_energy_per_token_j", "decode_energy_per_token_j"),
        x_title="energy per token above idle (J, log)",
        log_x=True,
    )


def depth_chart(points: pl.DataFrame, band: pl.DataFrame) -> alt.LayerChart | alt.Chart:
    """Each run's mean time per decode step against its context depth (points), the OLS line and
    its confidence band, one colour per fit group."""
    if points.height == 0 or band.height == 0:
        return no_data_chart("nothing to draw: no fit")
    keys = [c for c in band.columns if c not in ("x", "fit", "band_low", "band_high")]
    shown = shown_keys(points, keys)
    points, band = labelled(points, shown), labelled(band, shown)
    n = points["config"].n_unique()
    colour = category_encoding("config", n, title=None)
    legend = alt.Legend(orient="top", title=None, columns=1, labelLimit=360, symbolOpacity=1)
    colour["color"] = colour["color"].legend(legend)
    x_title, y_title = "context depth (tokens already in the KV cache)", "ms per decode step"
    band_tip = [
        alt.Tooltip("config:N", title="configuration"),
        alt.Tooltip("x:Q", title="context depth", format=EXACT),
        alt.Tooltip("fit:Q", title="fitted ms per step", format=EXACT),
        alt.Tooltip("band_low:Q", title="band low", format=EXACT),
        alt.Tooltip("band_high:Q", title="band high", format=EXACT),
    ]
    area = (
        alt.Chart(band)
        .mark_area(opacity=0.15)
        .transform_filter("isValid(datum.band_low) && isValid(datum.band_high)")
        .encode(
            x=alt.X("x:Q", title=x_title),
            y=alt.Y("band_low:Q", title=y_title),
            y2="band_high:Q",
            tooltip=band_tip,
            **colour,
        )
    )
    line = alt.Chart(band).mark_line().encode(x="x:Q", y="fit:Q", tooltip=band_tip, **colour)
    dots = (
        alt.Chart(points.select(*filter_fields(points, "config", "context_depth", "itl_mean_ms")))
        .mark_point(filled=True, size=40, opacity=0.8)
        .encode(
            x="context_depth:Q",
            y="itl_mean_ms:Q",
            **colour,
            tooltip=[
                alt.Tooltip("config:N", title="configuration"),
                alt.Tooltip("context_depth:Q", title="context depth"),
                alt.Tooltip("itl_mean_ms:Q", title="run's mean ms per step", format=EXACT),
            ],
        )
    )
    return alt.layer(area, line, dots).properties(width=WIDTH, height=260)
