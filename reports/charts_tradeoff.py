"""Chart builders of tradeoff: memory against latency with the Pareto front, and the best
candidate per metric against its runner-up (Holm-corrected). Pure: an analysis frame in, a chart out.
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
        pl.lit("Pareto front").alias("front"),
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
            [*PARETO_DRAWN, *([colour_by] if colour_by else []), *([facet_by] if facet_by else [])]
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
    front_key = alt.Stroke(
        "front:N", title=None, scale=alt.Scale(range=[FRONT]), legend=alt.Legend(symbolType="stroke")
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


WINNER_KEYS = {
    "metric",
    "best",
    "runner_up",
    "runner_up_estimate",
    "runner_up_over_best",
    "p_value",
    "p_holm",
    "significant",
    "n_runner_up",
}


def winners_frame(winners: pl.DataFrame) -> pl.DataFrame:
    """Byte metrics in MiB (metric renamed to say so), the significance as text, intervals as
    text and as drawn bounds."""
    keys = group_columns(winners, WINNER_KEYS)
    in_bytes = pl.col("metric").str.ends_with("_bytes")
    scaled = [
        (
            pl.when(in_bytes).then(pl.col(c).cast(pl.Float64) / MIB).otherwise(pl.col(c).cast(pl.Float64))
        ).alias(c)
        for c in ("estimate", "ci_low", "ci_high", "runner_up_estimate")
    ]
    frame = label_column(winners, varying(winners, keys) or keys, name="stratum").with_columns(
        *scaled,
        pl.when(in_bytes)
        .then(pl.col("metric").str.replace(r"_bytes$", " (MiB)"))
        .otherwise(pl.col("metric")),
        pl.when(pl.col("significant").fill_null(False))
        .then(pl.lit("yes"))
        .otherwise(pl.lit("no"))
        .alias("significant"),
    )
    frame = frame.with_columns(pl.col("runner_up_estimate").fill_null(pl.col("estimate")).alias("runner_x"))
    return drawn_bounds(with_interval_text(frame))


# The columns of winners_frame the chart's data keeps.
WINNERS_DRAWN = (
    "stratum",
    "metric",
    "best",
    "runner_up",
    "estimate",
    "ci_low",
    "ci_high",
    "bar_low",
    "bar_high",
    INTERVAL,
    "runner_up_estimate",
    "runner_x",
    "p_holm",
    "significant",
    "n",
)


def winners_chart(winners: pl.DataFrame) -> alt.FacetChart:
    """Per stratum and metric: the best candidate's median with its interval (filled) and the
    runner-up's median (hollow), one panel per metric (each in its own unit, bytes as MiB); a
    bold rule marks a difference that is significant after Holm's correction."""
    frame = winners_frame(winners)
    layer = alt.layer(*_winners_layers(frame)).properties(
        width=WIDTH // 2, height=band_height(frame["stratum"].n_unique())
    )
    return (
        layer.properties(data=frame.select(*WINNERS_DRAWN))
        .facet(facet=alt.Facet("metric:N", title=None), columns=2)
        .resolve_scale(x="independent")
    )


def _winners_layers(frame: pl.DataFrame) -> list[alt.Chart]:
    """The best's interval (bold where significant), the best's median and the runner-up's."""
    y = alt.Y("stratum:N", title=None)
    tooltip = [
        alt.Tooltip("stratum:N"),
        alt.Tooltip("metric:N"),
        alt.Tooltip("best:N"),
        alt.Tooltip("estimate:Q", title="best's median", format=EXACT),
        alt.Tooltip(f"{INTERVAL}:N"),
        alt.Tooltip("runner_up:N"),
        alt.Tooltip("runner_up_estimate:Q", title="runner-up's median", format=EXACT),
        alt.Tooltip("p_holm:Q", format=".3g"),
        alt.Tooltip("significant:N", title="significant (Holm)"),
        alt.Tooltip("n:Q"),
    ]
    rules = (
        alt.Chart()
        .mark_rule()
        .encode(
            x=alt.X("bar_low:Q", title=None, scale=alt.Scale(zero=False)),
            x2="bar_high:Q",
            y=y,
            tooltip=tooltip,
            strokeWidth=alt.StrokeWidth(
                "significant:O",
                scale=alt.Scale(domain=["yes", "no"], range=[3, 1]),
                title="significant (Holm)",
            ),
        )
    )
    best = (
        alt.Chart()
        .mark_point(filled=True, size=50)
        .encode(
            x="estimate:Q",
            y=y,
            tooltip=tooltip,
            **category_encoding("best", frame["best"].n_unique(), title="best"),
        )
    )
    runner = (
        alt.Chart()
        .mark_point(size=50, color="#777")
        .encode(  # drawn at the best's where it has none, unseen
            x="runner_x:Q",
            y=y,
            tooltip=tooltip,
            opacity=alt.condition("isValid(datum.runner_up_estimate)", alt.value(1), alt.value(0)),
        )
    )
    return [rules, best, runner]
