"""Chart builders of tradeoff: memory against latency with the Pareto front, and the best
candidate per metric against its runner-up (Holm-corrected). Pure: an analysis frame in, a chart out.
"""

from __future__ import annotations

import altair as alt
import polars as pl

from edgestats.reports.charts_common import (
    WIDTH, any_interval, band_height, facet, group_columns, label_column, valid_interval, varying, wide_range,
)

# -- tradeoff: memory vs latency, the Pareto front, best vs runner-up -----------------------------

PARETO_INTERVALS = ("latency_median_ms_ci_low", "latency_median_ms_ci_high", "rss_peak_bytes_ci_low", "rss_peak_bytes_ci_high")


def pareto_chart(points: pl.DataFrame) -> alt.FacetChart | alt.LayerChart:
    """Mean peak RSS against median latency, one dot per configuration with its intervals on
    both axes (where the analysis gives them), the Pareto front (no other configuration beats
    these on both) joined by a step line; per device when several."""
    keys = group_columns(points, {"latency_median_ms", "rss_peak_bytes", "n_runs", "pareto", *PARETO_INTERVALS})
    facet_by = "device" if "device" in points.columns and 1 < points["device"].n_unique() <= 12 else None
    colour_by = next((c for c in ("framework", "runtime") if c in points.columns), None)
    intervals = [c for c in PARETO_INTERVALS if c in points.columns]
    frame = label_column(points, [c for c in varying(points, keys) if c != facet_by] or keys).with_columns(
        (pl.col("rss_peak_bytes") / 1048576.0).alias("rss_peak_mb"),
        *(pl.col(c).cast(pl.Float64) for c in intervals if c.startswith("latency")),
        *((pl.col(c).cast(pl.Float64) / 1048576.0).alias(c.replace("bytes", "mb")) for c in intervals if c.startswith("rss")))
    x = alt.X("latency_median_ms:Q", title="median latency (ms)",
              scale=alt.Scale(type="log") if wide_range(frame["latency_median_ms"]) else alt.Scale(zero=False))
    y = alt.Y("rss_peak_mb:Q", title="mean peak RSS (MiB)", scale=alt.Scale(zero=False))
    colour = alt.Color(f"{colour_by}:N") if colour_by else alt.value("#1f77b4")
    front = alt.Chart().mark_line(interpolate="step-after", color="#d62728", strokeDash=[5, 3]).transform_filter(
        "datum.pareto").encode(x=x, y=y, order="latency_median_ms:Q")
    fmt = ".4~g"
    tooltip = [alt.Tooltip("config:N"), alt.Tooltip("latency_median_ms:Q", format=fmt),
               *(alt.Tooltip(f"{c}:Q", format=fmt) for c in intervals if c.startswith("latency")),
               alt.Tooltip("rss_peak_mb:Q", format=fmt),
               *(alt.Tooltip(f"{c.replace('bytes', 'mb')}:Q", format=fmt) for c in intervals if c.startswith("rss")),
               alt.Tooltip("n_runs:Q"), alt.Tooltip("pareto:N")]
    dots = alt.Chart().mark_point(size=60, filled=True).encode(
        x=x, y=y, color=colour,
        shape=alt.Shape("pareto:N", title="on the Pareto front", scale=alt.Scale(domain=[True, False], range=["diamond", "circle"])),
        tooltip=tooltip)
    layers = [front, dots]
    if any_interval(frame, "latency_median_ms_ci_low", "latency_median_ms_ci_high"):  # where the analysis gives them
        layers.insert(0, alt.Chart().mark_rule(opacity=0.6).transform_filter(
            valid_interval("latency_median_ms_ci_low", "latency_median_ms_ci_high")).encode(
            x="latency_median_ms_ci_low:Q", x2="latency_median_ms_ci_high:Q", y=y, color=colour))
    if any_interval(frame, "rss_peak_mb_ci_low", "rss_peak_mb_ci_high"):
        layers.insert(0, alt.Chart().mark_rule(opacity=0.6).transform_filter(
            valid_interval("rss_peak_mb_ci_low", "rss_peak_mb_ci_high")).encode(
            x=x, y="rss_peak_mb_ci_low:Q", y2="rss_peak_mb_ci_high:Q", color=colour))
    layer = alt.layer(*layers).properties(width=WIDTH if facet_by is None else WIDTH // 2, height=280)
    data = frame.select(*dict.fromkeys(["config", "latency_median_ms", "rss_peak_mb", "n_runs", "pareto",
                                        *(c.replace("bytes", "mb") for c in intervals),
                                        *([colour_by] if colour_by else []), *([facet_by] if facet_by else [])]))
    return facet(layer, data.sort("latency_median_ms"), facet_by)


def winners_chart(winners: pl.DataFrame) -> alt.FacetChart:
    """Per stratum and metric: the best candidate's median with its interval (filled) and the
    runner-up's median (hollow), one panel per metric (each in its own unit); a bold rule
    marks a difference that is significant after Holm's correction."""
    keys = group_columns(winners, {"metric", "best", "runner_up", "runner_up_estimate", "ratio_of_medians", "p_value",
                                   "p_holm", "significant", "n_runner_up"})
    frame = label_column(winners, varying(winners, keys) or keys, name="stratum").with_columns(
        pl.col("significant").fill_null(False), *(pl.col(c).cast(pl.Float64) for c in ("estimate", "ci_low", "ci_high")))
    y = alt.Y("stratum:N", title=None)
    tooltip = [alt.Tooltip("stratum:N"), alt.Tooltip("best:N"), alt.Tooltip("estimate:Q", format=".4~g"),
               alt.Tooltip("ci_low:Q", format=".4~g"), alt.Tooltip("ci_high:Q", format=".4~g"), alt.Tooltip("runner_up:N"),
               alt.Tooltip("runner_up_estimate:Q", format=".4~g"), alt.Tooltip("p_holm:Q", format=".3g"), alt.Tooltip("n:Q")]
    rules = alt.Chart().mark_rule().encode(
        x=alt.X("ci_low:Q", title=None, scale=alt.Scale(zero=False)), x2="ci_high:Q", y=y,
        strokeWidth=alt.StrokeWidth("significant:N", scale=alt.Scale(domain=[True, False], range=[3, 1]), title="significant (Holm)"))
    best = alt.Chart().mark_point(filled=True, size=50).encode(x="estimate:Q", y=y, color=alt.Color("best:N", title="best"), tooltip=tooltip)
    runner = alt.Chart().mark_point(size=50, color="#777").encode(x="runner_up_estimate:Q", y=y, tooltip=tooltip)
    layer = alt.layer(rules, best, runner).properties(width=WIDTH // 2, height=band_height(frame["stratum"].n_unique()))
    return (layer.properties(data=frame.select("stratum", "metric", "best", "runner_up", "estimate", "ci_low", "ci_high",
                                               "runner_up_estimate", "p_holm", "significant", "n"))
            .facet(facet=alt.Facet("metric:N", title=None), columns=2).resolve_scale(x="independent"))
