"""Chart builders of breakdown: where a run's time goes, and the load / steady ratios with 1
(break-even) marked. The time is seconds per phase, stacked in pCAMP's Table 3 order.

Apart from charts_latency.py (summary's latency per configuration), because these draw phases and
ratios of phase times, not latency distributions. Like every chart module, each builder takes the
tidy frame an analysis returns and draws every estimate with its interval; nothing here reads a
DB or computes a statistic.
"""

from __future__ import annotations

import altair as alt
import polars as pl

from edgestats.reports.charts_common import (
    EXACT,
    INTERVAL,
    LABEL_LIMIT,
    WIDTH,
    drawn_bounds,
    facet,
    facet_column,
    filter_fields,
    group_columns,
    interval_tooltip,
    label_column,
    no_data_chart,
    panel_height,
    varying,
    with_interval_text,
)

PHASE_ORDER = ["import", "load_model", "compile", "first_inference", "steady", "other"]


def stacked_phase_frame(phases: pl.DataFrame) -> tuple[pl.DataFrame, str | None]:
    """Mean seconds per configuration and phase, stacked in pCAMP's order: each segment's start
    and end, and its interval drawn at the segment's end (low/high = end ∓ the CI half-widths)."""
    keys = group_columns(phases, {"phase", "share_of_total"})
    facet_by = facet_column(phases.select(keys))
    labelled = label_column(phases, [c for c in varying(phases, keys) if c != facet_by] or keys)
    index = ["config", *([facet_by] if facet_by else [])]
    order = pl.col("phase").replace_strict(
        {p: i for i, p in enumerate(PHASE_ORDER)}, default=len(PHASE_ORDER)
    )
    seconds = pl.col("estimate").clip(lower_bound=0.0)  # "other" may dip below 0 by rounding
    stacked = (
        labelled.with_columns(order.alias("phase_order"), seconds.alias("seconds"))
        .sort([*index, "phase_order"])
        .with_columns(pl.col("seconds").cum_sum().over(index).alias("stack_end"))
        .with_columns(
            (pl.col("stack_end") - pl.col("seconds")).alias("stack_start"),
            (pl.col("stack_end") - (pl.col("estimate") - pl.col("ci_low"))).alias("err_low"),
            (pl.col("stack_end") + (pl.col("ci_high") - pl.col("estimate"))).alias("err_high"),
        )
    )
    stacked = with_interval_text(stacked).with_columns(  # no interval: a zero-width rule at the segment's end
        *(pl.col(c).fill_null(pl.col("stack_end")) for c in ("err_low", "err_high"))
    )
    return stacked.select(
        *filter_fields(stacked, *index),
        "phase",
        "phase_order",
        "estimate",
        "ci_low",
        "ci_high",
        INTERVAL,
        "level",
        "n",
        "share_of_total",
        "stack_start",
        "stack_end",
        "err_low",
        "err_high",
    ), facet_by


def phase_breakdown_chart(phases: pl.DataFrame) -> alt.FacetChart | alt.LayerChart:
    """Stacked bars of mean seconds per phase and configuration, each segment's interval as an
    error bar at its end."""
    frame, facet_by = stacked_phase_frame(phases)
    y = alt.Y("config:N", title=None, axis=alt.Axis(labelLimit=LABEL_LIMIT))
    present = [p for p in PHASE_ORDER if p in frame["phase"].to_list()]
    tooltip = [
        alt.Tooltip("config:N"),
        alt.Tooltip("phase:N"),
        alt.Tooltip("estimate:Q", title="mean (s)", format=EXACT),
        alt.Tooltip(f"{INTERVAL}:N"),
        alt.Tooltip("share_of_total:Q", format=".1%"),
        alt.Tooltip("n:Q"),
    ]
    bars = (
        alt.Chart()
        .mark_bar(size=14)
        .encode(
            x=alt.X("stack_start:Q", title="mean seconds per run"),
            x2="stack_end:Q",
            y=y,
            color=alt.Color("phase:N", sort=present, scale=alt.Scale(domain=present, scheme="tableau10")),
            order=alt.Order("phase_order:Q"),
            tooltip=tooltip,
        )
    )
    errors = alt.Chart().mark_rule(color="#333").encode(x="err_low:Q", x2="err_high:Q", y=y, tooltip=tooltip)
    layer = alt.layer(bars, errors).properties(
        width=WIDTH if facet_by is None else WIDTH // 2, height=panel_height(frame, "config", facet_by)
    )
    return facet(layer, frame, facet_by, independent_x=True)


def ratio_frame(frame: pl.DataFrame) -> tuple[pl.DataFrame, str | None]:
    """One row per configuration of one ratio: its config label, estimate and interval, the bounds
    the bar is drawn to (drawn_bounds), and the facet column if any."""
    keys = group_columns(frame, {"ratio", "load_exceeds_steady", "confident"})
    facet_by = facet_column(frame.select(keys))
    frame = label_column(frame, [c for c in varying(frame, keys) if c != facet_by] or keys)
    return drawn_bounds(with_interval_text(frame)).select(
        *filter_fields(frame, "config", *([facet_by] if facet_by else [])),
        "estimate",
        "ci_low",
        "ci_high",
        "bar_low",
        "bar_high",
        INTERVAL,
        "level",
        "n",
    ), facet_by


def ratio_chart(
    ratios: pl.DataFrame, *, ratio_name: str, title: str
) -> alt.FacetChart | alt.LayerChart | alt.Chart:
    """One ratio per configuration with its interval, with 1 (break-even) marked; a log axis
    when every estimate and bound is positive (the axis title says which). Without any
    estimate, one line of text says why."""
    chosen = ratios.filter(pl.col("ratio") == ratio_name)
    frame = chosen.filter(pl.col("estimate").is_not_null())
    if frame.height == 0:
        notes = (
            chosen["note"].drop_nulls().unique(maintain_order=True).to_list()
            if "note" in chosen.columns
            else []
        )
        return no_data_chart(
            f"No {ratio_name} ratio to draw: "
            + (notes[0] if notes else "no configuration has both times")
            + "."
        )
    frame, facet_by = ratio_frame(frame)
    log = frame["estimate"].min() > 0 and frame["bar_low"].min() > 0
    scale = alt.Scale(type="log") if log else alt.Scale(zero=False)
    y = alt.Y(
        "config:N",
        title=None,
        axis=alt.Axis(labelLimit=LABEL_LIMIT),
        sort=alt.EncodingSortField("estimate", op="min"),
    )
    tooltip = interval_tooltip("config", title=ratio_name)
    one = alt.Chart().mark_rule(strokeDash=[4, 3], color="#888").encode(x=alt.datum(1))
    rules = (
        alt.Chart()
        .mark_rule(strokeWidth=2)
        .encode(
            x=alt.X("bar_low:Q", scale=scale, title=title + (", log scale" if log else "")),
            x2="bar_high:Q",
            y=y,
            tooltip=tooltip,
        )
    )
    dots = (
        alt.Chart()
        .mark_point(filled=True, size=45)
        .encode(x=alt.X("estimate:Q", scale=scale), y=y, tooltip=tooltip)
    )
    layer = alt.layer(one, rules, dots).properties(
        width=WIDTH if facet_by is None else WIDTH // 2, height=panel_height(frame, "config", facet_by)
    )
    return facet(layer, frame, facet_by)
