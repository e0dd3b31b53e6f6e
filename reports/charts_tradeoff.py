"""Chart builders of tradeoff: memory against latency with the Pareto front, and the best per metric
against the runner-up. The best candidate's comparison with its runner-up is Holm-corrected, and
each is drawn at the estimate and interval summary gives that configuration. Pure: an analysis frame
in, a chart out.
"""

from __future__ import annotations

import altair as alt
import polars as pl

from edgestats.reports.charts_common import (
    EXACT,
    INTERVAL,
    WIDTH,
    band_height,
    category_encoding,
    drawn_bounds,
    facet,
    filter_fields,
    group_columns,
    label_column,
    no_data_chart,
    varying,
    wide_range,
    with_interval_text,
)

# -- tradeoff: memory vs latency, the Pareto front, best vs runner-up -----------------------------

PARETO_INTERVALS = (
    "latency_median_ms_ci_low",
    "latency_median_ms_ci_high",
    "rss_peak_bytes_ci_low",
    "rss_peak_bytes_ci_high",
)
MIB = 1048576.0
FRONT = "#111111"  # the Pareto front: near-black, outside every categorical palette
FRONT_LABEL = "Pareto front"


def pareto_frame(points: pl.DataFrame, keys: list[str], facet_by: str | None) -> pl.DataFrame:
    """Memory in MiB, each point's intervals as text (for tooltips) and as drawn bounds
    (lat_*, mem_*: the bounds, or the value where there is none)."""
    frame = label_column(points, [c for c in varying(points, keys) if c != facet_by] or keys)
    frame = frame.with_columns(
        (pl.col("rss_peak_bytes") / MIB).alias("rss_peak_mib"),
        *(
            (pl.col(c).cast(pl.Float64) / MIB).alias(c.replace("bytes", "mib"))
            if c in frame.columns
            else pl.lit(None, pl.Float64).alias(c.replace("bytes", "mib"))
            for c in PARETO_INTERVALS
            if c.startswith("rss")
        ),
        *(
            pl.col(c).cast(pl.Float64) if c in frame.columns else pl.lit(None, pl.Float64).alias(c)
            for c in PARETO_INTERVALS
            if c.startswith("latency")
        ),
        pl.lit(FRONT_LABEL).alias("front"),
    )
    frame = with_interval_text(
        frame, "latency_median_ms_ci_low", "latency_median_ms_ci_high", name="latency_interval"
    )
    frame = with_interval_text(frame, "rss_peak_mib_ci_low", "rss_peak_mib_ci_high", name="memory_interval")
    frame = drawn_bounds(
        frame, "latency_median_ms", "latency_median_ms_ci_low", "latency_median_ms_ci_high", prefix="lat"
    )
    return drawn_bounds(frame, "rss_peak_mib", "rss_peak_mib_ci_low", "rss_peak_mib_ci_high", prefix="mem")


# The columns of pareto_frame the chart's data keeps (then the colour and facet columns).
PARETO_DRAWN = (
    "config",
    "latency_median_ms",
    "rss_peak_mib",
    "n_runs",
    "pareto",
    "front",
    "latency_median_ms_ci_low",
    "latency_median_ms_ci_high",
    "rss_peak_mib_ci_low",
    "rss_peak_mib_ci_high",
    "lat_low",
    "lat_high",
    "mem_low",
    "mem_high",
    "latency_interval",
    "memory_interval",
)


def pareto_chart(points: pl.DataFrame) -> alt.FacetChart | alt.LayerChart | alt.Chart:
    """Mean peak RSS (MiB) against median latency, one dot per configuration with its intervals
    on both axes (where the analysis gives them); the Pareto front (no other configuration beats
    these on both) as a thick near-black step line with its points ringed; per device when several."""
    points = points.filter(pl.col("latency_median_ms").is_not_null() & pl.col("rss_peak_bytes").is_not_null())
    if points.height == 0:
        return no_data_chart("No Pareto front: no configuration has both a latency and a peak memory.")
    keys = group_columns(
        points, {"latency_median_ms", "rss_peak_bytes", "n_runs", "pareto", *PARETO_INTERVALS}
    )
    facet_by = "device" if "device" in points.columns and 1 < points["device"].n_unique() <= 12 else None
    colour_by = next((c for c in ("framework", "runtime") if c in points.columns), None)
    frame = pareto_frame(points, keys, facet_by)
    log = wide_range(frame["latency_median_ms"])
    x = alt.X(
        "latency_median_ms:Q",
        title="median latency (ms)" + (", log scale" if log else ""),
        scale=alt.Scale(type="log") if log else alt.Scale(zero=False),
    )
    y = alt.Y("rss_peak_mib:Q", title="mean peak RSS (MiB)", scale=alt.Scale(zero=False))
    colour = (
        category_encoding(colour_by, frame[colour_by].n_unique())["color"]
        if colour_by
        else alt.value("#1f77b4")
    )
    layers = _pareto_layers(x, y, colour)
    layer = alt.layer(*layers).properties(width=WIDTH if facet_by is None else WIDTH // 2, height=300)
    data = frame.select(
        *dict.fromkeys(
            [
                *PARETO_DRAWN,
                *([colour_by] if colour_by else []),
                *([facet_by] if facet_by else []),
                *filter_fields(frame, *keys),  # each point's configuration, for the page filter
            ]
        )
    )
    return facet(layer, data.sort("latency_median_ms"), facet_by)


def _pareto_layers(x: alt.X, y: alt.Y, colour) -> list[alt.Chart]:
    """The intervals on both axes, the front's step line and rings, and the points on top."""
    tooltip = [
        alt.Tooltip("config:N"),
        alt.Tooltip("latency_median_ms:Q", title="median latency (ms)", format=EXACT),
        alt.Tooltip("latency_interval:N", title="latency interval"),
        alt.Tooltip("rss_peak_mib:Q", title="mean peak RSS (MiB)", format=EXACT),
        alt.Tooltip("memory_interval:N", title="memory interval"),
        alt.Tooltip("n_runs:Q"),
        alt.Tooltip("pareto:N", title="on the Pareto front"),
    ]
    # A fixed domain: when the page's filter leaves the front no row, its legend keeps its entry
    # (an empty domain made Vega place the legend at an infinite offset, an error in the console).
    front_key = alt.Stroke(
        "front:N",
        title=None,
        scale=alt.Scale(domain=[FRONT_LABEL], range=[FRONT]),
        legend=alt.Legend(symbolType="stroke"),
    )
    return [
        alt.Chart()
        .mark_rule(opacity=0.5)
        .encode(x="lat_low:Q", x2="lat_high:Q", y=y, color=colour, tooltip=tooltip),
        alt.Chart()
        .mark_rule(opacity=0.5)
        .encode(x=x, y="mem_low:Q", y2="mem_high:Q", color=colour, tooltip=tooltip),
        alt.Chart()
        .mark_line(interpolate="step-after", strokeWidth=3)
        .transform_filter("datum.pareto")
        .encode(x=x, y=y, order="latency_median_ms:Q", stroke=front_key, tooltip=tooltip),
        alt.Chart()
        .mark_point(size=260, filled=False, strokeWidth=2.5, color=FRONT)
        .transform_filter("datum.pareto")
        .encode(x=x, y=y, tooltip=tooltip),
        alt.Chart()
        .mark_point(size=70, filled=True, opacity=1)
        .encode(x=x, y=y, color=colour, tooltip=tooltip),
    ]


# Columns of tradeoff's `contenders` frame that are not configuration columns.
CONTENDER_VALUES = {
    "stratum",
    "metric",
    "side",
    "candidate",
    "estimate",
    "ci_low",
    "ci_high",
    "level",
    "n",
    "n_unit",
    "note",
    "p_holm",
    "significant",
}
SIDES = {"best": "best", "runner_up": "runner-up"}


def winners_frame(contenders: pl.DataFrame) -> pl.DataFrame:
    """Byte metrics in MiB (metric renamed to say so), the side and significance as text,
    intervals as text and as drawn bounds; the configuration columns kept for the page filter."""
    in_bytes = pl.col("metric").str.ends_with("_bytes")
    scaled = [
        (
            pl.when(in_bytes).then(pl.col(c).cast(pl.Float64) / MIB).otherwise(pl.col(c).cast(pl.Float64))
        ).alias(c)
        for c in ("estimate", "ci_low", "ci_high")
    ]
    frame = contenders.with_columns(
        *scaled,
        pl.when(in_bytes)
        .then(pl.col("metric").str.replace(r"_bytes$", " (MiB)"))
        .otherwise(pl.col("metric")),
        pl.col("side").replace_strict(SIDES, default=pl.col("side")),
        pl.when(pl.col("significant").fill_null(False))
        .then(pl.lit("yes"))
        .otherwise(pl.lit("no"))
        .alias("significant"),
    )
    frame = drawn_bounds(with_interval_text(frame))
    keys = [c for c in contenders.columns if c not in CONTENDER_VALUES]
    drawn = ["stratum", "metric", "side", "candidate", "estimate", "ci_low", "ci_high", "bar_low", "bar_high"]
    return frame.select(
        *filter_fields(frame, *keys), *drawn, INTERVAL, "p_holm", "significant", "n", "n_unit"
    )


def winners_chart(contenders: pl.DataFrame) -> alt.FacetChart | alt.Chart:
    """Per stratum and metric, the best candidate (filled) and the runner-up (hollow), each at the
    estimate summary gives that configuration with its interval; one panel per metric (each in its
    own unit, bytes as MiB); bold intervals where the difference is significant after Holm."""
    if contenders.height == 0:
        return no_data_chart("No winners to draw: no stratum has two candidates measured on a metric.")
    frame = winners_frame(contenders)
    layer = alt.layer(*_winners_layers(frame)).properties(
        width=WIDTH // 2, height=band_height(2 * frame["stratum"].n_unique())
    )
    return (
        layer.properties(data=frame)
        .facet(facet=alt.Facet("metric:N", title=None), columns=2)
        .resolve_scale(x="independent")
    )


def _winners_layers(frame: pl.DataFrame) -> list[alt.Chart]:
    """Each side's interval (bold where significant), the best's estimate filled, the runner-up's hollow."""
    y = alt.Y("stratum:N", title=None)
    offset = alt.YOffset("side:N", sort=list(SIDES.values()), title=None)
    colour = category_encoding("candidate", frame["candidate"].n_unique(), title="candidate")["color"]
    tooltip = [
        alt.Tooltip("stratum:N"),
        alt.Tooltip("metric:N"),
        alt.Tooltip("side:N"),
        alt.Tooltip("candidate:N"),
        alt.Tooltip("estimate:Q", title="estimate (as in the summary)", format=EXACT),
        alt.Tooltip(f"{INTERVAL}:N"),
        alt.Tooltip("p_holm:Q", title="p (Holm), best vs runner-up", format=".3g"),
        alt.Tooltip("significant:N", title="significant (Holm)"),
        alt.Tooltip("n:Q"),
        alt.Tooltip("n_unit:N"),
    ]
    rules = (
        alt.Chart()
        .mark_rule()
        .encode(
            x=alt.X("bar_low:Q", title=None, scale=alt.Scale(zero=False)),
            x2="bar_high:Q",
            y=y,
            yOffset=offset,
            color=colour,
            tooltip=tooltip,
            strokeWidth=alt.StrokeWidth(
                "significant:O",
                scale=alt.Scale(domain=["yes", "no"], range=[3, 1]),
                title="significant (Holm)",
            ),
        )
    )
    points = [
        alt.Chart()
        .mark_point(filled=filled, size=55, opacity=1)
        .transform_filter(f"datum.side === '{side}'")
        .encode(x="estimate:Q", y=y, yOffset=offset, color=colour, tooltip=tooltip)
        for side, filled in (("best", True), ("runner-up", False))
    ]
    return [rules, *points]
