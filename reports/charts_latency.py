"""Chart builders of summary: latency per configuration (box plot, quantiles, ECDF). The
breakdown's charts (seconds per phase, load / steady ratios) are in charts_breakdown.py.

Each takes the tidy frame an analysis returns (group keys, then estimate/ci_low/ci_high/level/n,
see edgestats.analysis.result) and draws every estimate with its interval. Nothing here reads a
DB, an analysis' options or computes a statistic; the report's sections (reports/sections/) pick
the frames.
"""

from __future__ import annotations

import altair as alt
import polars as pl

from edgestats.reports.charts_common import (
    EXACT,
    INTERVAL,
    LABEL_LIMIT,
    WIDTH,
    any_interval,
    category_encoding,
    facet,
    facet_column,
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

LATENCY_METRICS = {"latency_median_ms": "median", "latency_p90_ms": "p90", "latency_p99_ms": "p99"}


def latency_quantile_frame(metrics: pl.DataFrame) -> tuple[pl.DataFrame, str | None]:
    """One row per configuration: median with its interval, p90 and p99 (which may be null for
    imported one-figure-per-run results), a config label, and the facet column if any."""
    keys = group_columns(metrics, {"metric", "n_runs"})
    facet_by = facet_column(metrics.select(keys))
    labelled = label_column(metrics, [c for c in varying(metrics, keys) if c != facet_by] or keys)
    index = ["config", *([facet_by] if facet_by else [])]
    median = labelled.filter(pl.col("metric") == "latency_median_ms").select(
        *index,
        "estimate",
        "ci_low",
        "ci_high",
        "level",
        "n",
        "n_unit",
        pl.col("note") if "note" in labelled.columns else pl.lit(None, pl.String).alias("note"),
    )
    tails = (
        labelled.filter(pl.col("metric").is_in(["latency_p90_ms", "latency_p99_ms"]))
        .select(*index, pl.col("metric").replace_strict(LATENCY_METRICS), "estimate")
        .pivot(on="metric", index=index, values="estimate")
    )
    for column in ("p90", "p99"):
        if column not in tails.columns:
            tails = tails.with_columns(pl.lit(None, pl.Float64).alias(column))
    return median.join(tails, on=index, how="left").sort(index), facet_by


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


def latency_box_frame(metrics: pl.DataFrame, distribution: pl.DataFrame) -> tuple[pl.DataFrame, str | None]:
    """One row per configuration: the quantiles of `distribution` next to the median's interval
    from `metrics` (null where the median has none), a config label and the facet column."""
    keys = [c for c in distribution.columns if c not in DISTRIBUTION_COLUMNS]
    median = metrics.filter(pl.col("metric") == "latency_median_ms").select(
        *keys,
        *(pl.col(c).cast(pl.Float64) for c in ("ci_low", "ci_high")),
        "level",
        (pl.col("note") if "note" in metrics.columns else pl.lit(None, pl.String)).alias("median_note"),
    )
    joined = distribution.join(median, on=keys, how="left", nulls_equal=True)
    facet_by = facet_column(joined.select(keys))
    labelled = label_column(joined, [c for c in varying(joined, keys) if c != facet_by] or keys)
    index = ["config", *([facet_by] if facet_by else [])]
    quantiles = ["min_ms", "q05_ms", "q25_ms", "median_ms", "q75_ms", "q95_ms", "q99_ms", "max_ms"]
    frame = labelled.select(
        *index,
        "n",
        "n_unit",
        *(pl.col(c).cast(pl.Float64) for c in quantiles),
        "ci_low",
        "ci_high",
        "level",
        pl.col("median_note").alias("note"),
    )
    return with_interval_text(frame).drop("note").sort(index), facet_by


def latency_distribution_chart(
    metrics: pl.DataFrame, distribution: pl.DataFrame | None = None
) -> alt.FacetChart | alt.LayerChart:
    """A box plot per configuration: box p25–p75, a tick at the median, whiskers p5–p95 and a
    dotted tail to p99, with the median's confidence interval as a dark bar across the tick
    (where it has one). Log axis when configurations span decades. Without the `distribution`
    frame (older callers), the median with its interval, a bar to p90 and a line to p99."""
    if distribution is None or distribution.height == 0:
        return latency_quantile_chart(metrics)
    frame, facet_by = latency_box_frame(metrics, distribution)
    log = wide_range(pl.concat([frame["q05_ms"], frame["q99_ms"]]))
    scale = alt.Scale(type="log") if log else alt.Scale(zero=False)
    y = alt.Y(
        "config:N",
        title=None,
        axis=alt.Axis(labelLimit=LABEL_LIMIT),
        sort=alt.EncodingSortField("median_ms", op="min"),
    )
    x_title = "steady-state latency (ms)" + (", log scale" if log else "")
    tooltip = _box_tooltip()
    tail = (
        alt.Chart()
        .mark_rule(color="#9aa7b5", strokeDash=[2, 2])
        .encode(x=alt.X("q95_ms:Q", scale=scale, title=x_title), x2="q99_ms:Q", y=y, tooltip=tooltip)
    )
    whisker = (
        alt.Chart()
        .mark_rule(color="#6b7b8c")
        .encode(x=alt.X("q05_ms:Q", scale=scale), x2="q95_ms:Q", y=y, tooltip=tooltip)
    )
    box = (
        alt.Chart()
        .mark_bar(size=12, color="#c6dbef", stroke="#6baed6", strokeWidth=1)
        .encode(x=alt.X("q25_ms:Q", scale=scale), x2="q75_ms:Q", y=y, tooltip=tooltip)
    )
    interval = (
        alt.Chart()
        .mark_bar(size=5, color="#08519c")
        .transform_filter(valid_interval())
        .encode(x=alt.X("ci_low:Q", scale=scale), x2="ci_high:Q", y=y, tooltip=tooltip)
    )
    median = (
        alt.Chart()
        .mark_tick(color="#08306b", thickness=2, size=14)
        .encode(x=alt.X("median_ms:Q", scale=scale), y=y, tooltip=tooltip)
    )
    layers = [tail, whisker, box, *([interval] if any_interval(frame, "ci_low", "ci_high") else []), median]
    layer = alt.layer(*layers).properties(
        width=WIDTH if facet_by is None else WIDTH // 2, height=panel_height(frame, "config", facet_by)
    )
    return facet(layer, frame, facet_by)


def _box_tooltip() -> list[alt.Tooltip]:
    """The box plot's tooltip: the median with its interval, the sample, then every quantile."""
    return [
        alt.Tooltip("config:N"),
        alt.Tooltip("median_ms:Q", title="median (ms)", format=EXACT),
        alt.Tooltip(f"{INTERVAL}:N", title="median's interval"),
        alt.Tooltip("n:Q"),
        alt.Tooltip("n_unit:N"),
        *(
            alt.Tooltip(f"{c}:Q", title=c.removesuffix("_ms") + " (ms)", format=EXACT)
            for c in ("min_ms", "q05_ms", "q25_ms", "q75_ms", "q95_ms", "q99_ms", "max_ms")
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
    """The ECDF of each configuration's latencies: its quantile function on a grid (summary's
    `ecdf` frame, 51 points per configuration) joined by lines, one line per configuration, per
    device when several; a log axis when configurations span decades. Configurations with one
    distinct latency are left out (ecdf_spread); with none left, one line of text says why."""
    ecdf, left_out = ecdf_spread(ecdf)
    if ecdf.height == 0:
        return no_data_chart(
            f"No ECDF: each of the {left_out} configurations has a single latency figure "
            "(imported one-figure-per-run results), so there is no distribution to draw."
        )
    keys = [c for c in ecdf.columns if c not in ECDF_VALUES]
    facet_by = facet_column(ecdf.select(keys))
    frame = label_column(ecdf, [c for c in varying(ecdf, keys) if c != facet_by] or keys)
    frame = frame.select("config", *([facet_by] if facet_by else []), "p", "latency_ms", "n", "n_unit").sort(
        ["config", *([facet_by] if facet_by else []), "p"]
    )
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
            y=alt.Y("p:Q", title="fraction of latencies at or below", scale=alt.Scale(domain=[0, 1])),
            **category_encoding("config", frame["config"].n_unique(), title="configuration", mark="line"),
            order="p:Q",
            tooltip=[
                alt.Tooltip("config:N"),
                alt.Tooltip("p:Q", title="fraction at or below", format=".2f"),
                alt.Tooltip("latency_ms:Q", title="latency (ms)", format=EXACT),
                alt.Tooltip("n:Q"),
                alt.Tooltip("n_unit:N"),
            ],
        )
    )
    layer = alt.layer(line).properties(width=WIDTH if facet_by is None else WIDTH // 2, height=220)
    return facet(layer, frame, facet_by)


def latency_quantile_chart(metrics: pl.DataFrame) -> alt.FacetChart | alt.LayerChart:
    """Per configuration: the median with its interval (thick rule and dot), the spread to the
    p90 (bar) and the tail to the p99 (thin rule). Log axis when configurations span decades."""
    frame, facet_by = latency_quantile_frame(metrics)
    log = wide_range(pl.concat([frame["estimate"], frame["p99"]]))
    scale = alt.Scale(type="log") if log else alt.Scale(zero=False)
    y = alt.Y(
        "config:N",
        title=None,
        axis=alt.Axis(labelLimit=LABEL_LIMIT),
        sort=alt.EncodingSortField("estimate", op="min"),
    )
    x_title = "latency (ms)" + (", log scale" if log else "")
    tooltip = [
        alt.Tooltip("config:N"),
        alt.Tooltip("estimate:Q", title="median (ms)", format=EXACT),
        alt.Tooltip(f"{INTERVAL}:N", title="median's interval"),
        alt.Tooltip("p90:Q", title="p90 (ms)", format=EXACT),
        alt.Tooltip("p99:Q", title="p99 (ms)", format=EXACT),
        alt.Tooltip("n:Q"),
        alt.Tooltip("n_unit:N"),
    ]
    frame = with_interval_text(frame).drop("note")
    tail = (
        alt.Chart()
        .mark_rule(color="#9aa7b5")
        .transform_filter("isValid(datum.p99)")
        .encode(x=alt.X("estimate:Q", scale=scale, title=x_title), x2="p99:Q", y=y, tooltip=tooltip)
    )
    spread = (
        alt.Chart()
        .mark_bar(size=9, color="#c6dbef")
        .transform_filter("isValid(datum.p90)")
        .encode(x=alt.X("estimate:Q", scale=scale), x2="p90:Q", y=y, tooltip=tooltip)
    )
    interval = (
        alt.Chart()
        .mark_rule(strokeWidth=3, color="#08519c")
        .transform_filter(valid_interval())
        .encode(x=alt.X("ci_low:Q", scale=scale), x2="ci_high:Q", y=y, tooltip=tooltip)
    )
    median = (
        alt.Chart()
        .mark_point(filled=True, size=50, color="#08519c")
        .encode(x=alt.X("estimate:Q", scale=scale), y=y, tooltip=tooltip)
    )
    layers = [
        *([tail] if frame["p99"].is_not_null().any() else []),
        *([spread] if frame["p90"].is_not_null().any() else []),
        *([interval] if any_interval(frame, "ci_low", "ci_high") else []),
        median,
    ]
    layer = alt.layer(*layers).properties(
        width=WIDTH if facet_by is None else WIDTH // 2, height=panel_height(frame, "config", facet_by)
    )
    return facet(layer, frame, facet_by)
