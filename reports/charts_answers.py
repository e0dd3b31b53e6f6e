"""Chart builder of answers: each candidate's ratio to its group's fastest, with its interval, one
panel per group, a rule at 1 (the fastest). Pure: the analysis' frame in, a chart out.

Every data row keeps the frame's own columns (device, framework, runtime, model where they exist),
so the page's filter reaches each mark.
"""

from __future__ import annotations

import altair as alt
import polars as pl

from edgestats.reports.charts_common import (
    EXACT,
    INTERVAL,
    LABEL_LIMIT,
    LOG_AXIS,
    WIDTH,
    cut_end_marks,
    drawn_bounds,
    no_data_chart,
    panel_height,
    with_interval_text,
)

# How far past the estimates (and 1) an interval is drawn, as a factor on the log axis: one
# interval of [0.003, 40,000] from two noisy runs would otherwise squeeze every panel's answers
# into a few pixels. Beyond it the rule stops at an arrowhead; the tooltip gives the whole interval.
REACH = 4.0

# The verdicts' colours: slower red, a tie grey, inconclusive amber, the fastest green.
VERDICT_COLOURS = {
    "fastest": "#2ca02c",
    "slower": "#d62728",
    "no detectable difference": "#7f7f7f",
    "inconclusive": "#ff9f1c",
}


def _chart_frame(frame: pl.DataFrame) -> pl.DataFrame:
    """The ratio as the estimate the interval helpers know, its interval as text and as drawn bounds,
    cut to REACH times beyond the estimates (and 1) of all panels (beyond_low/beyond_high say which
    end was cut). A group with one candidate answers nothing to draw: it is left to the table."""
    frame = frame.filter(pl.col("ratio").is_not_null()).with_columns(
        *(pl.col(c).cast(pl.Float64) for c in ("ratio", "ratio_ci_low", "ratio_ci_high"))
    )
    if "group" in frame.columns:
        frame = frame.filter(pl.len().over("group") > 1)
    frame = with_interval_text(frame, "ratio_ci_low", "ratio_ci_high")
    frame = drawn_bounds(frame, "ratio", "ratio_ci_low", "ratio_ci_high")
    if frame.height == 0:
        return frame
    low_edge = min(1.0, frame["ratio"].min()) / REACH
    high_edge = max(1.0, frame["ratio"].max()) * REACH
    return frame.with_columns(
        (pl.col("bar_low") < low_edge).alias("beyond_low"),
        (pl.col("bar_high") > high_edge).alias("beyond_high"),
        pl.col("bar_low").clip(lower_bound=low_edge),
        pl.col("bar_high").clip(upper_bound=high_edge),
    )


def _tooltip(data: pl.DataFrame, category: str, ratio_title: str) -> list[alt.Tooltip]:
    """The group and candidate, the exact ratio, its interval, the verdict in words, Holm's p, the
    candidate's own median and its runs."""
    return [
        *(alt.Tooltip(f"{c}:N") for c in ("group", category) if c in data.columns),
        alt.Tooltip("ratio:Q", format=EXACT, title=ratio_title),
        alt.Tooltip(f"{INTERVAL}:N"),
        alt.Tooltip("verdict_text:N", title="verdict"),
        alt.Tooltip("p_holm:Q", format=".2g"),
        alt.Tooltip("estimate:Q", format=EXACT, title="median latency (ms)"),
        alt.Tooltip("n_runs:Q"),
    ]


def _whole_interval(end: str) -> list[alt.Tooltip]:
    return [alt.Tooltip(f"{INTERVAL}:N", title="the whole interval")]


def verdict_colour(colours: dict[str, str] = VERDICT_COLOURS) -> alt.Color:
    return alt.Color(
        "verdict:N", title="verdict", scale=alt.Scale(domain=list(colours), range=list(colours.values()))
    )


def ratio_chart(
    frame: pl.DataFrame,
    *,
    category: str = "candidate",
    x_title: str = "times as long as the group's fastest (log)",
    columns: int = 2,
    colours: dict[str, str] = VERDICT_COLOURS,
    ratio_title: str = "times as long as the fastest",
):
    """Dot at each ratio to the fastest (log x: ratios multiply), a rule across its interval,
    coloured by verdict (`colours`: verdict -> colour); one panel per group (`group`, its text as
    the panel's title), each listing its own candidates, all on one x scale so panels compare.
    fleet draws its units against their class with it."""
    if frame.height == 0 or "ratio" not in frame.columns:
        return no_data_chart("nothing to draw: no group has a ratio")
    data = _chart_frame(frame)
    if data.height == 0:
        return no_data_chart("nothing to draw: no group has a ratio")
    facet_by = "group" if "group" in data.columns else None
    x_scale = alt.Scale(type="log", nice=False, padding=12)
    y = alt.Y(
        f"{category}:N",
        title=None,
        sort=alt.EncodingSortField("ratio", op="min"),
        axis=alt.Axis(labelLimit=LABEL_LIMIT),
    )
    colour = verdict_colour(colours)
    tooltip = _tooltip(data, category, ratio_title)
    one = alt.Chart().mark_rule(color="#555", strokeDash=[4, 3]).encode(x=alt.datum(1))
    rules = (
        alt.Chart()
        .mark_rule(strokeWidth=2)
        .encode(
            x=alt.X("bar_low:Q", title=x_title, scale=x_scale, axis=LOG_AXIS),
            x2="bar_high:Q",
            y=y,
            color=colour,
            tooltip=tooltip,
        )
    )
    dots = (
        alt.Chart()
        .mark_point(filled=True, size=50)
        .encode(x=alt.X("ratio:Q", scale=x_scale), y=y, color=colour, tooltip=tooltip)
    )
    ends = cut_end_marks("bar", "beyond", x_scale, y, _whole_interval, colour=colour)
    layer = alt.layer(one, rules, dots, *ends).properties(
        width=WIDTH if facet_by is None else WIDTH // columns,
        height=panel_height(data, category, facet_by),
    )
    if facet_by is None:
        return layer.properties(data=data)
    panels = layer.properties(data=data).facet(
        facet=alt.Facet(f"{facet_by}:N", title=None, header=alt.Header(labelLimit=LABEL_LIMIT)),
        columns=columns,
    )
    return panels.resolve_scale(y="independent")
