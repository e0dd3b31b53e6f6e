"""Chart builders of the training analyses, of the DLaaS tables and of the Jetson study. From the
DLaaS tables: hyperparameter main effects, accuracy and training time vs iterations; from the Jetson
study: fetch stall vs workers x storage and resources vs batch size. Pure functions: an analysis
frame in, a chart out; the statistics (means and their intervals) come computed in the frames.
"""

from __future__ import annotations

import altair as alt
import polars as pl

from edgestats.analysis.hyperparams.effects import MEANS_KEPT_APART
from edgestats.contracts import ITERATION_FACTORS, SERIES_CANDIDATES
from edgestats.reports.charts_common import (
    FILTER_FIELDS,
    WIDTH,
    category_encoding,
    coefficient_chart,
    drawn_bounds,
    filter_fields,
    group_columns,
    interval_tooltip,
    label_column,
    varying,
    wide_range,
    with_interval_text,
)


def _series_layers(x: alt.X, y: alt.Y, colour: dict, series: str, *fields: str) -> list:
    """A line through the means of each series (its tooltip names the series), a rule across
    each mean's interval and a dot at it (their tooltips: the exact mean and its interval)."""
    tooltip = interval_tooltip(*fields, title="mean")
    names = [alt.Tooltip(f"{f}:N") for f in dict.fromkeys((series, *(f for f in fields if f == "response")))]
    line = (
        alt.Chart()
        .mark_line(opacity=0.6)
        .encode(x=x, y=y, detail=f"{series}:N", color=colour["color"], tooltip=names)
    )
    bars = (
        alt.Chart()
        .mark_rule(strokeWidth=2)
        .encode(x=x, y="bar_low:Q", y2="bar_high:Q", color=colour["color"], tooltip=tooltip)
    )
    dots = alt.Chart().mark_point(filled=True, size=45).encode(x=x, y=y, tooltip=tooltip, **colour)
    return [line, bars, dots]


def _naming(frame: pl.DataFrame, keys: list[str]) -> list[str]:
    """The keys that vary, less a filter field (device, framework, runtime, model: every row
    carries them for the page's filter) that the other varying keys already determine: the
    runtime that goes with each framework would only repeat it in each series' name."""
    named = varying(frame, keys)
    for column in reversed([c for c in named if c in FILTER_FIELDS]):
        rest = [c for c in named if c != column]
        if rest and frame.select(rest).n_unique() == frame.select([*rest, column]).n_unique():
            named = rest
    return named


# -- hyperparams: main effects, response vs iterations -------------------------------------------


def _level_order(values: pl.Series) -> list[str]:
    """Levels sorted as numbers where they are numbers, else as text."""
    texts = values.cast(pl.String).unique().to_list()
    try:
        return sorted(texts, key=float)
    except (TypeError, ValueError):
        return sorted(texts, key=str)


def main_effects_chart(effects: pl.DataFrame) -> alt.FacetChart:
    """Mean response at each level of each factor with its interval, one panel per factor
    (rows: response), levels in numeric order; one colour per group when there are several."""
    keys = group_columns(effects, {"response", "factor", "value"})
    frame = label_column(effects, _naming(effects, keys) or keys, name="group").with_columns(
        pl.col("value").cast(pl.String),
        *(pl.col(c).cast(pl.Float64) for c in ("estimate", "ci_low", "ci_high")),
    )
    order = _level_order(frame["value"])
    x = alt.X("value:O", title=None, sort=order)
    n_groups = frame["group"].n_unique()
    colour = category_encoding("group", n_groups) if n_groups > 1 else {"color": alt.value("#1f77b4")}
    y = alt.Y("estimate:Q", title="mean response", scale=alt.Scale(zero=False))
    layers = _series_layers(x, y, colour, "group", "group", "response", "factor", "value")
    data = drawn_bounds(with_interval_text(frame)).select(
        *filter_fields(frame, "group"),
        "response",
        "factor",
        "value",
        "estimate",
        "ci_low",
        "ci_high",
        "bar_low",
        "bar_high",
        "interval",
        "level",
        "n",
    )
    return (
        alt.layer(*layers, data=data)
        .properties(width=200, height=170)
        .facet(column=alt.Column("factor:N", title=None), row=alt.Row("response:N", title=None))
        .resolve_scale(x="independent", y="independent")
    )


def response_vs_iterations_chart(means: pl.DataFrame) -> alt.FacetChart:
    """Each response (accuracy, training time) against iterations or epochs: the mean per
    combination with its interval (hyperparams' `vs_iterations` frame), one line per batch size
    (the DLaaS study's tables) and per device, framework or model where they vary, one row per
    response."""
    factor = next(c for c in ITERATION_FACTORS if c in means.columns)
    colour_by = next((c for c in SERIES_CANDIDATES if c in means.columns and c != factor), None)
    # the means are kept apart per device, framework and model: each that varies names its own lines
    apart = varying(means, MEANS_KEPT_APART)
    frame = means.with_columns(
        pl.concat_str(
            [pl.col(colour_by).cast(pl.String) if colour_by else pl.lit("all"), *(pl.col(c) for c in apart)],
            separator=" · ",
            ignore_nulls=True,
        ).alias("series")
    )
    x = alt.X(
        f"{factor}:Q",
        title=factor,
        scale=alt.Scale(type="log") if wide_range(frame[factor]) else alt.Scale(zero=False),
    )
    colour = category_encoding(
        "series",
        frame["series"].n_unique(),
        title=" · ".join([colour_by or "all", *apart]) if apart else colour_by or "",
        sort=_level_order(frame["series"]),
    )
    y = alt.Y("estimate:Q", title="mean", scale=alt.Scale(zero=False))
    layers = _series_layers(x, y, colour, "series", "series", factor, "response")
    data = drawn_bounds(with_interval_text(frame)).select(
        *filter_fields(frame, factor),
        "series",
        "response",
        "estimate",
        "ci_low",
        "ci_high",
        "bar_low",
        "bar_high",
        "interval",
        "level",
        "n",
    )
    return (
        alt.layer(*layers, data=data)
        .properties(width=WIDTH, height=200)
        .facet(row=alt.Row("response:N", title=None))
        .resolve_scale(y="independent")
    )


# -- pipeline: fetch stall vs workers x storage, resources vs batch size --------------------------


def workers_chart(workers: pl.DataFrame) -> alt.FacetChart:
    """Median fetch stall and E2E time per epoch against num_workers, one line per storage
    (or group), with intervals; one column per quantity, one row per device when several."""
    keys = group_columns(workers, {"num_workers", "quantity"})
    row_by = "device" if "device" in workers.columns and workers["device"].n_unique() > 1 else None
    frame = label_column(
        workers,
        [c for c in _naming(workers, keys) if c != row_by] or ["storage"]
        if "storage" in workers.columns
        else [],
        name="series",
    ).with_columns(*(pl.col(c).cast(pl.Float64) for c in ("estimate", "ci_low", "ci_high")))
    x = alt.X("num_workers:O", title="num_workers")
    colour = category_encoding("series", frame["series"].n_unique(), title="storage / group")
    y = alt.Y("estimate:Q", title="median seconds per epoch")
    layers = _series_layers(x, y, colour, "series", "series", "num_workers", "quantity")
    data = drawn_bounds(with_interval_text(frame)).select(
        *filter_fields(frame, "series", "num_workers", "quantity", *([row_by] if row_by else [])),
        "estimate",
        "ci_low",
        "ci_high",
        "bar_low",
        "bar_high",
        "interval",
        "level",
        "n",
    )
    facet_spec = {"column": alt.Column("quantity:N", title=None)}
    if row_by:
        facet_spec["row"] = alt.Row(f"{row_by}:N", title=None)
    return (
        alt.layer(*layers, data=data)
        .properties(width=240, height=200)
        .facet(**facet_spec)
        .resolve_scale(y="independent")
    )


def resources_chart(resources: pl.DataFrame) -> alt.LayerChart:
    """Spearman's correlation of each CPU/memory figure with batch size, with intervals."""
    keys = group_columns(resources, {"x", "y", "p_value"})
    return coefficient_chart(
        label_column(resources, ["y", *_naming(resources, keys)]), title="Spearman's rho with batch size"
    )
