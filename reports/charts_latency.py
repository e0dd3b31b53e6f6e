"""Chart builders of summary: latency per configuration (box plot, quantiles, ECDF). The
breakdown's charts (seconds per phase, load / steady ratios) are in charts_breakdown.py.

Each takes the tidy frame an analysis returns (group keys, then estimate/ci_low/ci_high/level/n,
see edgestats.analysis.core.result) and draws every estimate with its interval. Nothing here reads a
DB, an analysis' options or computes a statistic; the report's sections (reports/sections/) pick
the frames.
"""

from __future__ import annotations

import math

import altair as alt
import polars as pl

from edgestats.reports.charts_common import (
    EXACT,
    LABEL_LIMIT,
    WIDTH,
    any_interval,
    category_encoding,
    cut_end_marks,
    facet,
    facet_column,
    filter_fields,
    group_columns,
    label_column,
    no_data_chart,
    panel_height,
    valid_interval,
    varying,
    wide_range,
    with_interval_text,
)

# -- summary: latency per configuration ----------------------------------------------------------

# The run-level figures a row carries (summary's `metrics`: one estimate per quantity), each with
# its bounds as `<metric>_ci_low` / `<metric>_ci_high` and its interval as text in `<short>_interval`.
LATENCY_METRICS = {"latency_median_ms": "median", "latency_p90_ms": "p90", "latency_p99_ms": "p99"}
MEDIAN = "latency_median_ms"
MEDIAN_LOW, MEDIAN_HIGH = f"{MEDIAN}_ci_low", f"{MEDIAN}_ci_high"
ESTIMATE = ("estimate", "ci_low", "ci_high")


def run_level_frame(metrics: pl.DataFrame) -> tuple[pl.DataFrame, list[str]]:
    """One row per configuration of summary's `metrics`: median, p90 and p99 (null where summary
    has none, as for imported runs' p99) with their bounds and interval texts, the median's n and
    n_unit (runs), and the group keys (returned too)."""
    keys = group_columns(metrics, {"metric", "n_runs"})
    note = pl.col("note") if "note" in metrics.columns else pl.lit(None, pl.String).alias("note")
    wide = metrics.filter(pl.col("metric") == MEDIAN).select(*keys, "n", "n_unit", "level")
    for metric, short in LATENCY_METRICS.items():
        low, high = f"{metric}_ci_low", f"{metric}_ci_high"
        part = metrics.filter(pl.col("metric") == metric).select(
            *keys,
            *(pl.col(c).cast(pl.Float64).alias(name) for c, name in zip(ESTIMATE, (metric, low, high))),
            "level",
            note,
        )
        part = with_interval_text(part, low, high, name=f"{short}_interval").drop("level", "note")
        wide = wide.join(part, on=keys, how="left", nulls_equal=True)
    return wide, keys


def latency_quantile_frame(metrics: pl.DataFrame) -> tuple[pl.DataFrame, str | None]:
    """One row per configuration: run_level_frame with a config label, and the facet column if any."""
    frame, keys = run_level_frame(metrics)
    facet_by = facet_column(frame.select(keys))
    labelled = label_column(frame, [c for c in varying(frame, keys) if c != facet_by] or keys)
    index = ["config", *([facet_by] if facet_by else [])]
    first = filter_fields(labelled, *index, *keys)
    return labelled.select(*first, *(c for c in labelled.columns if c not in first)).sort(index), facet_by


# Columns of summary's `distribution` frame (ms) that are not group keys.
DISTRIBUTION_COLUMNS = {
    "n_runs",
    "n",
    "n_unit",
    "note",
    "min_ms",
    "q01_ms",
    "q05_ms",
    "q25_ms",
    "median_ms",
    "q75_ms",
    "q95_ms",
    "q99_ms",
    "max_ms",
}
# The pooled quantiles a box plot draws: they describe every latency of the configuration pooled,
# not the run-level estimates, so each is named (and titled) `pooled_*`.
POOLED = ("min_ms", "q05_ms", "q25_ms", "median_ms", "q75_ms", "q95_ms", "q99_ms", "max_ms")


def latency_box_frame(metrics: pl.DataFrame, distribution: pl.DataFrame) -> tuple[pl.DataFrame, str | None]:
    """One row per configuration: summary's run-level median, p90 and p99 with their intervals
    (run_level_frame) beside the pooled quantiles of `distribution` (`pooled_*`, with their count
    `pooled_n` and its unit), a config label and the facet column."""
    frame, facet_by = latency_quantile_frame(metrics)
    keys = group_columns(metrics, {"metric", "n_runs"})
    pooled = distribution.select(
        *keys,
        pl.col("n").alias("pooled_n"),
        pl.col("n_unit").alias("pooled_unit"),
        *(pl.col(c).cast(pl.Float64).alias(f"pooled_{c}") for c in POOLED),
    )
    return frame.join(pooled, on=keys, how="left", nulls_equal=True, maintain_order="left"), facet_by


# How far beyond a configuration's pooled p5-p95 (and median) its median's interval is drawn, as a
# factor: an interval of [0.001, 20,000] ms from three runs would otherwise set the axis of every
# panel. Beyond it the bar stops at an arrowhead; the tooltip keeps the whole interval.
REACH = 4.0


def with_drawn_interval(frame: pl.DataFrame) -> pl.DataFrame:
    """drawn_low/drawn_high: the median's interval cut to REACH beyond the row's own pooled p5-p95
    and median; cut_low/cut_high say which end was cut (an arrowhead is drawn there)."""
    low_edge = pl.min_horizontal(pl.col("pooled_q05_ms"), pl.col(MEDIAN)) / REACH
    high_edge = pl.max_horizontal(pl.col("pooled_q95_ms"), pl.col(MEDIAN)) * REACH
    return frame.with_columns(
        (pl.col(MEDIAN_LOW) < low_edge).fill_null(False).alias("cut_low"),
        (pl.col(MEDIAN_HIGH) > high_edge).fill_null(False).alias("cut_high"),
        pl.max_horizontal(pl.col(MEDIAN_LOW), low_edge).alias("drawn_low"),
        pl.min_horizontal(pl.col(MEDIAN_HIGH), high_edge).alias("drawn_high"),
    )


def decade_axis(frame: pl.DataFrame) -> alt.Axis:
    """An axis whose ticks (and grid lines) are the powers of 10 the drawn figures span."""
    drawn = pl.concat(
        [
            frame[c].cast(pl.Float64)
            for c in ("pooled_q05_ms", "pooled_q95_ms", MEDIAN, "drawn_low", "drawn_high")
        ]
    )
    drawn = drawn.filter(drawn.is_finite() & (drawn > 0))
    if drawn.len() == 0:
        return alt.Axis()
    low, high = math.floor(math.log10(drawn.min())), math.ceil(math.log10(drawn.max()))
    return alt.Axis(values=[10.0**k for k in range(low, high + 1)], format="~g")


def _whisker(frame: pl.DataFrame, log: bool, scale: alt.Scale, y: alt.Y, tooltip: list) -> alt.Chart:
    """The pooled p5-p95 rule; it carries the x axis: on a log scale, ticks at powers of 10 (a log
    axis over decades otherwise draws a grid line per minor tick)."""
    return (
        alt.Chart()
        .mark_rule(color="#6b7b8c")
        .transform_filter("isValid(datum.pooled_q05_ms)")
        .encode(
            x=alt.X(
                "pooled_q05_ms:Q",
                scale=scale,
                title="steady-state latency (ms)" + (", log scale" if log else ""),
                axis=decade_axis(frame) if log else alt.Axis(),
            ),
            x2="pooled_q95_ms:Q",
            y=y,
            tooltip=tooltip,
        )
    )


def _median_cut_ends(scale: alt.Scale, y: alt.Y, tooltip: list[alt.Tooltip]) -> list[alt.Chart]:
    """Arrowheads at the ends of a median's interval that with_drawn_interval cut."""
    return cut_end_marks(
        "drawn",
        "cut",
        scale,
        y,
        lambda end: tooltip,
        size=70,
        mark_colour="#08519c",
        valid=valid_interval(MEDIAN_LOW, MEDIAN_HIGH),
    )


def latency_distribution_chart(
    metrics: pl.DataFrame, distribution: pl.DataFrame | None = None
) -> alt.FacetChart | alt.LayerChart:
    """Per configuration, summary's run-level median (a tick) with its confidence interval (a dark
    bar) and its p90 and p99 (thin ticks), over a box plot of the pooled latencies: box p25–p75,
    whiskers p5–p95. Log axis when configurations span decades. Without the `distribution`
    frame, the run-level figures alone (latency_quantile_chart)."""
    if distribution is None or distribution.height == 0:
        return latency_quantile_chart(metrics)
    frame, facet_by = latency_box_frame(metrics, distribution)
    frame = with_drawn_interval(frame)
    log = wide_range(pl.concat([frame["pooled_q05_ms"], frame["pooled_q95_ms"], frame[MEDIAN]]))
    scale = alt.Scale(type="log") if log else alt.Scale(zero=False)
    y = alt.Y(
        "config:N",
        title=None,
        axis=alt.Axis(labelLimit=LABEL_LIMIT),
        sort=alt.EncodingSortField(MEDIAN, op="min"),
    )
    tooltip = _box_tooltip()
    whisker = _whisker(frame, log, scale, y, tooltip)
    box = (
        alt.Chart()
        .mark_bar(size=12, color="#c6dbef", stroke="#6baed6", strokeWidth=1)
        .transform_filter("isValid(datum.pooled_q25_ms)")
        .encode(x=alt.X("pooled_q25_ms:Q", scale=scale), x2="pooled_q75_ms:Q", y=y, tooltip=tooltip)
    )
    interval = (
        alt.Chart()
        .mark_bar(size=5, color="#08519c")
        .transform_filter(valid_interval(MEDIAN_LOW, MEDIAN_HIGH))
        .encode(x=alt.X("drawn_low:Q", scale=scale), x2="drawn_high:Q", y=y, tooltip=tooltip)
    )
    tails = [
        alt.Chart()
        .mark_tick(color="#555", thickness=1, size=10)
        .transform_filter(f"isValid(datum.{metric})")
        .encode(x=alt.X(f"{metric}:Q", scale=scale), y=y, tooltip=tooltip)
        for metric in ("latency_p90_ms", "latency_p99_ms")
        if frame[metric].is_not_null().any()
    ]
    median = (
        alt.Chart()
        .mark_tick(color="#08306b", thickness=2, size=14)
        .encode(x=alt.X(f"{MEDIAN}:Q", scale=scale), y=y, tooltip=tooltip)
    )
    pooled = [whisker, box] if frame["pooled_q25_ms"].is_not_null().any() else []
    ends = _median_cut_ends(scale, y, tooltip)
    drawn = [interval, *ends] if any_interval(frame, MEDIAN_LOW, MEDIAN_HIGH) else []
    layers = [*pooled, *drawn, *tails, median]
    layer = alt.layer(*layers).properties(
        width=WIDTH if facet_by is None else WIDTH // 2, height=panel_height(frame, "config", facet_by)
    )
    return facet(layer, frame, facet_by)


def _run_level_tooltip() -> list[alt.Tooltip]:
    """summary's run-level median, p90 and p99, each with its interval, and the runs they rest on."""
    return [
        alt.Tooltip("config:N"),
        *(
            tip
            for metric, short in LATENCY_METRICS.items()
            for tip in (
                alt.Tooltip(f"{metric}:Q", title=f"{short} (ms)", format=EXACT),
                alt.Tooltip(f"{short}_interval:N", title=f"{short}'s interval"),
            )
        ),
        alt.Tooltip("n:Q"),
        alt.Tooltip("n_unit:N"),
    ]


def _box_tooltip() -> list[alt.Tooltip]:
    """The run-level figures, then the pooled latencies' quantiles, each titled "pooled"."""
    return [
        *_run_level_tooltip(),
        alt.Tooltip("pooled_n:Q", title="pooled: n"),
        alt.Tooltip("pooled_unit:N", title="pooled: n counts"),
        *(
            alt.Tooltip(f"pooled_{c}:Q", title=f"pooled {c.removesuffix('_ms')} (ms)", format=EXACT)
            for c in ("min_ms", "q05_ms", "q25_ms", "median_ms", "q75_ms", "q95_ms", "q99_ms", "max_ms")
        ),
    ]


ECDF_VALUES = {"p", "latency_ms", "n", "n_unit"}


def ecdf_spread(ecdf: pl.DataFrame) -> tuple[pl.DataFrame, int]:
    """The ECDF rows of configurations with more than one distinct latency (a single figure, as an
    imported result has, is a vertical line: no distribution to show), and how many were left out."""
    keys = [c for c in ecdf.columns if c not in ECDF_VALUES]
    if not keys:
        return (ecdf if ecdf["latency_ms"].n_unique() > 1 else ecdf.clear()), int(
            ecdf["latency_ms"].n_unique() <= 1
        )
    spread = pl.col("latency_ms").n_unique().over(keys) > 1
    kept = ecdf.filter(spread)
    total = ecdf.select(keys).unique().height
    return kept, total - (kept.select(keys).unique().height if kept.height else 0)


def latency_ecdf_chart(ecdf: pl.DataFrame) -> alt.FacetChart | alt.LayerChart:
    """The ECDF of each configuration's pooled latencies (every steady latency of its runs, not
    summary's run-level figures: its axis and tooltip say "pooled"): the quantile function on a
    grid (summary's `ecdf` frame, 51 points per configuration) joined by lines, one line per
    configuration, per device when several; a log axis when configurations span decades.
    Configurations with one distinct latency are left out (ecdf_spread); with none left, one line
    of text says why."""
    ecdf, left_out = ecdf_spread(ecdf)
    if ecdf.height == 0:
        return no_data_chart(
            f"No ECDF: each of the {left_out} configurations has a single latency figure "
            "(imported one-figure-per-run results), so there is no distribution to draw."
        )
    keys = [c for c in ecdf.columns if c not in ECDF_VALUES]
    facet_by = facet_column(ecdf.select(keys))
    frame = label_column(ecdf, [c for c in varying(ecdf, keys) if c != facet_by] or keys)
    index = ["config", *([facet_by] if facet_by else [])]
    frame = frame.select(*filter_fields(frame, *index), "p", "latency_ms", "n", "n_unit").sort([*index, "p"])
    log = wide_range(frame["latency_ms"])
    x = alt.X(
        "latency_ms:Q",
        title="steady-state latency (ms)" + (", log scale" if log else ""),
        scale=alt.Scale(type="log") if log else alt.Scale(zero=False),
    )
    line = (
        alt.Chart()
        .mark_line(strokeWidth=1.5)
        .encode(
            x=x,
            y=alt.Y("p:Q", title="fraction of pooled latencies at or below", scale=alt.Scale(domain=[0, 1])),
            **category_encoding("config", frame["config"].n_unique(), title="configuration", mark="line"),
            order="p:Q",
            tooltip=[
                alt.Tooltip("config:N"),
                alt.Tooltip("p:Q", title="fraction of pooled latencies at or below", format=".2f"),
                alt.Tooltip("latency_ms:Q", title="pooled latency (ms)", format=EXACT),
                alt.Tooltip("n:Q", title="pooled: n"),
                alt.Tooltip("n_unit:N", title="pooled: n counts"),
            ],
        )
    )
    layer = alt.layer(line).properties(width=WIDTH if facet_by is None else WIDTH // 2, height=220)
    return facet(layer, frame, facet_by)


def latency_quantile_chart(metrics: pl.DataFrame) -> alt.FacetChart | alt.LayerChart:
    """Per configuration, summary's run-level figures alone: the median with its interval (thick
    rule and dot), the spread to the p90 (bar) and the tail to the p99 (thin rule). Log axis when
    configurations span decades."""
    frame, facet_by = latency_quantile_frame(metrics)
    log = wide_range(pl.concat([frame[MEDIAN], frame["latency_p99_ms"]]))
    scale = alt.Scale(type="log") if log else alt.Scale(zero=False)
    y = alt.Y(
        "config:N",
        title=None,
        axis=alt.Axis(labelLimit=LABEL_LIMIT),
        sort=alt.EncodingSortField(MEDIAN, op="min"),
    )
    x_title = "latency (ms)" + (", log scale" if log else "")
    tooltip = _run_level_tooltip()
    x = alt.X(f"{MEDIAN}:Q", scale=scale, title=x_title)
    tail = (
        alt.Chart()
        .mark_rule(color="#9aa7b5")
        .transform_filter("isValid(datum.latency_p99_ms)")
        .encode(x=x, x2="latency_p99_ms:Q", y=y, tooltip=tooltip)
    )
    spread = (
        alt.Chart()
        .mark_bar(size=9, color="#c6dbef")
        .transform_filter("isValid(datum.latency_p90_ms)")
        .encode(x=x, x2="latency_p90_ms:Q", y=y, tooltip=tooltip)
    )
    interval = (
        alt.Chart()
        .mark_rule(strokeWidth=3, color="#08519c")
        .transform_filter(valid_interval(MEDIAN_LOW, MEDIAN_HIGH))
        .encode(x=alt.X(f"{MEDIAN_LOW}:Q", scale=scale), x2=f"{MEDIAN_HIGH}:Q", y=y, tooltip=tooltip)
    )
    median = alt.Chart().mark_point(filled=True, size=50, color="#08519c").encode(x=x, y=y, tooltip=tooltip)
    layers = [
        *([tail] if frame["latency_p99_ms"].is_not_null().any() else []),
        *([spread] if frame["latency_p90_ms"].is_not_null().any() else []),
        *([interval] if any_interval(frame, MEDIAN_LOW, MEDIAN_HIGH) else []),
        median,
    ]
    layer = alt.layer(*layers).properties(
        width=WIDTH if facet_by is None else WIDTH // 2, height=panel_height(frame, "config", facet_by)
    )
    return facet(layer, frame, facet_by)
