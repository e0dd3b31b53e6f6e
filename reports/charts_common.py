"""What every chart builder shares: the interval marks, faceting, labels, sizes.

Builders receive frames that are already aggregated (one row per plotted point, with
estimate/ci_low/ci_high/level/n), so a chart embeds tens or hundreds of rows whether the DB
holds 1 run or 10,000. Nothing here touches a DB.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import altair as alt
import polars as pl

# The fields the page's filter bar selects chart rows by (reports/page_assets.py): every data row
# of a configuration carries those its configuration has; a row that spans configurations (a
# correlation across them all) carries none and stays under any filter.
FILTER_FIELDS = ("device", "framework", "runtime", "model")
WIDTH = 520
LABEL_LIMIT = 280  # px of a category label before it is cut with an ellipsis
ROW_HEIGHT = 18  # per category on a band axis
# A log axis labels 3,000, 4,000 and 5,000 a few pixels apart: Vega's overlap check drops labels
# only once they touch, so "4,0005,000" read as one number. A gap of 6 px is asked for.
LOG_AXIS = alt.Axis(labelSeparation=6)
MIN_HEIGHT, MAX_HEIGHT = 60, 900
FACET_CANDIDATES = ("device", "framework")
MAX_FACETS = 12  # more panels than this are unreadable; the chart colours by it instead


def label_column(
    frame: pl.DataFrame, columns: Sequence[str], name: str = "config", sep: str = " · "
) -> pl.DataFrame:
    """A text label joining the given columns (only those present), nulls skipped."""
    present = [c for c in columns if c in frame.columns]
    if not present:
        return frame.with_columns(pl.lit("all").alias(name))
    parts = [pl.col(c).cast(pl.String) for c in present]
    return frame.with_columns(
        pl.concat_str(parts, separator=sep, ignore_nulls=True).fill_null("all").alias(name)
    )


def filter_fields(frame: pl.DataFrame, *first: str) -> list[str]:
    """`first`, then the FILTER_FIELDS the frame has, without repeats: the columns a chart's data
    keeps, so the page's filter reaches its rows."""
    return list(dict.fromkeys([*first, *(c for c in FILTER_FIELDS if c in frame.columns)]))


def varying(frame: pl.DataFrame, columns: Sequence[str]) -> list[str]:
    """Columns present in the frame that take more than one value."""
    return [c for c in columns if c in frame.columns and frame[c].n_unique() > 1]


def facet_column(frame: pl.DataFrame, exclude: Sequence[str] = ()) -> str | None:
    """device or framework, when the data has several of them (and not too many for panels)."""
    for column in FACET_CANDIDATES:
        if column in exclude or column not in frame.columns:
            continue
        if 1 < frame[column].n_unique() <= MAX_FACETS:
            return column
    return None


def any_interval(frame: pl.DataFrame, low: str, high: str) -> bool:
    """True when some row has both bounds."""
    return (
        low in frame.columns
        and high in frame.columns
        and frame.select((pl.col(low).is_not_null() & pl.col(high).is_not_null()).any()).item()
    )


def valid_interval(low: str = "ci_low", high: str = "ci_high") -> str:
    """The Vega expression of a row that has both bounds."""
    return f"isValid(datum.{low}) && isValid(datum.{high})"


def drawn_bounds(
    frame: pl.DataFrame, at: str = "estimate", low: str = "ci_low", high: str = "ci_high", prefix: str = "bar"
) -> pl.DataFrame:
    """Where a rule draws the interval: `{prefix}_low`/`{prefix}_high` are the bounds, or the
    value itself (a zero-width, invisible rule) where the row has none. A field that is null in
    every row of a layer or of a facet panel makes Vega warn "Infinite extent" (and draws
    nothing); the bounds themselves stay null in the data, and the tooltip says why."""
    for column in (low, high):
        if column not in frame.columns:
            frame = frame.with_columns(pl.lit(None, pl.Float64).alias(column))
    both = pl.col(low).is_not_null() & pl.col(high).is_not_null()
    return frame.with_columns(
        *(
            pl.when(both).then(pl.col(c)).otherwise(pl.col(at)).cast(pl.Float64).alias(f"{prefix}_{end}")
            for c, end in ((low, "low"), (high, "high"))
        )
    )


def band_height(n_categories: int) -> int:
    return max(MIN_HEIGHT, min(MAX_HEIGHT, ROW_HEIGHT * max(n_categories, 1)))


def panel_height(frame: pl.DataFrame, category: str, facet_by: str | None = None) -> int:
    """The band height of the fullest panel: each facet panel lists only its own categories."""
    if category not in frame.columns or frame.height == 0:
        return band_height(1)
    if facet_by is None or facet_by not in frame.columns:
        return band_height(frame[category].n_unique())
    return band_height(frame.group_by(facet_by).agg(pl.col(category).n_unique())[category].max())


EXACT = ".6~g"  # tooltips show the value itself, not an axis' rounding
INTERVAL = "interval"  # the text column of a row's interval (with_interval_text), for tooltips


def _interval_words(low: object, high: object, level: object, n: object, note: object) -> str:
    if low is not None and high is not None and math.isfinite(low) and math.isfinite(high):
        return f"[{low:.6g}, {high:.6g}]" + (f" ({level * 100:g} %)" if isinstance(level, float) else "")
    if isinstance(note, str) and note:
        return f"none: {note}"
    if isinstance(n, int) and n < 2:
        return f"none: n = {n} (an interval needs at least 2)"
    return "none"


def with_interval_text(
    frame: pl.DataFrame, low: str = "ci_low", high: str = "ci_high", name: str = INTERVAL
) -> pl.DataFrame:
    """`frame` with a text column `name`: "[low, high] (95 %)", or "none: why" (the row's note,
    else its n) where the row has no interval. Tooltips show it next to the exact value."""
    columns = [c if c in frame.columns else None for c in (low, high, "level", "n", "note")]
    rows = frame.select(
        *(pl.col(c) if c else pl.lit(None).alias(f"_{i}") for i, c in enumerate(columns))
    ).rows()
    return frame.with_columns(pl.Series(name, [_interval_words(*row) for row in rows], dtype=pl.String))


def interval_tooltip(*fields: str, value: str = "estimate", title: str | None = None) -> list[alt.Tooltip]:
    """The group fields, then the exact value, its interval (as with_interval_text wrote it)
    and what it rests on."""
    return [
        *(alt.Tooltip(f"{f}:N") for f in fields),
        alt.Tooltip(f"{value}:Q", format=EXACT, title=title or value),
        alt.Tooltip(f"{INTERVAL}:N"),
        alt.Tooltip("n:Q"),
    ]


# -- colours: distinguishable up to 20 categories, then shapes or dashes too ---------------------

PALETTE = 20
SHAPES = [
    "circle",
    "square",
    "triangle-up",
    "diamond",
    "cross",
    "triangle-down",
    "triangle-right",
]  # 7: coprime with 20
DASHES = [[1, 0], [6, 3], [2, 2]]  # 3: coprime with 20


def category_scheme(n: int) -> str:
    """tableau10 up to 10 categories, tableau20 beyond (it repeats after 20)."""
    return "tableau10" if n <= 10 else "tableau20"


def category_encoding(
    field: str, n: int, *, title: str | None = None, mark: str = "point", sort: list[str] | None = None
) -> dict:
    """Colour by `field` from a palette with as many colours as categories (up to 20); beyond
    20 the same field also picks a shape (points) or a dash (lines) from a range whose length is
    coprime with 20, so every category keeps its own (colour, shape) pair (up to 140), in one legend."""
    legend = alt.Legend(labelLimit=LABEL_LIMIT, symbolLimit=0, symbolOpacity=1)
    common = {"title": title if title is not None else field, **({"sort": sort} if sort is not None else {})}
    out = {
        "color": alt.Color(f"{field}:N", scale=alt.Scale(scheme=category_scheme(n)), legend=legend, **common)
    }
    if n > PALETTE and mark == "line":
        out["strokeDash"] = alt.StrokeDash(
            f"{field}:N", scale=alt.Scale(range=DASHES), legend=legend, **common
        )
    elif n > PALETTE:
        out["shape"] = alt.Shape(f"{field}:N", scale=alt.Scale(range=SHAPES), legend=legend, **common)
    return out


def facet(
    chart: alt.LayerChart | alt.Chart,
    frame: pl.DataFrame,
    column: str | None,
    *,
    columns: int = 2,
    independent_x: bool = False,
):
    """Small multiples by `column` (data moves to the top level, as faceting a layer requires).
    Each panel lists only its own categories; `independent_x` for quantities that differ by
    orders of magnitude between panels (a Raspberry Pi's seconds next to a server's)."""
    if column is None:
        return chart.properties(data=frame) if isinstance(chart, alt.LayerChart) else chart
    faceted = chart.properties(data=frame).facet(
        facet=alt.Facet(f"{column}:N", title=column), columns=columns
    )
    return faceted.resolve_scale(y="independent", **({"x": "independent"} if independent_x else {}))


def estimate_interval_chart(
    frame: pl.DataFrame,
    *,
    category: str,
    x_title: str,
    color: str | None = None,
    log_x: bool = False,
    facet_by: str | None = None,
    offset_order: list[str] | None = None,
    min_height: int = 0,
) -> alt.FacetChart | alt.LayerChart:
    """A dot at each estimate and a rule across its interval, one row per category. With
    `offset_order`, each category's band holds a row per value of `color` (yOffset, in that order),
    the colour legend on top: several figures of one configuration side by side."""
    if frame.height == 0:
        return no_data_chart("nothing to draw: no row has an estimate")
    frame = drawn_bounds(with_interval_text(frame))
    scale = alt.Scale(type="log") if log_x else alt.Scale(zero=False)
    axis = LOG_AXIS if log_x else alt.Undefined
    y = alt.Y(f"{category}:N", title=None, sort=alt.EncodingSortField("estimate", op="min"))
    height = panel_height(frame, category, facet_by)
    offset = {}
    if offset_order is not None and color:
        colour = category_encoding(color, len(offset_order), title=None, sort=offset_order)
        top = alt.Legend(orient="top", title=None) if len(offset_order) > 1 else None
        colour["color"] = colour["color"].legend(top)
        offset = {"yOffset": alt.YOffset(f"{color}:N", sort=offset_order)}
        height = height * max(1, len(offset_order)) // 2
    elif color:
        colour = category_encoding(color, frame[color].n_unique())
    else:
        colour = {"color": alt.value("#1f77b4")}
    tooltip = interval_tooltip(category, *([color] if color else []))
    rules = (
        alt.Chart()
        .mark_rule(strokeWidth=2)
        .encode(
            x=alt.X("bar_low:Q", title=x_title, scale=scale, axis=axis),
            x2="bar_high:Q",
            y=y,
            **offset,
            tooltip=tooltip,
            color=colour["color"],
        )
    )
    dots = (
        alt.Chart()
        .mark_point(filled=True, size=45)
        .encode(x=alt.X("estimate:Q", scale=scale), y=y, **offset, tooltip=tooltip, **colour)
    )
    layer = alt.layer(rules, dots).properties(
        width=WIDTH if facet_by is None else WIDTH // 2, height=max(min_height, height)
    )
    return facet(layer, frame, facet_by)


def no_data_chart(message: str) -> alt.Chart:
    """A small chart that says why there is nothing to draw (a section keeps its place)."""
    return (
        alt.Chart(pl.DataFrame({"text": [message]}))
        .mark_text(align="left", baseline="middle", fontSize=13, color="#666")
        .encode(text="text:N", x=alt.value(0), y=alt.value(15))
        .properties(width=WIDTH, height=30)
    )


# Columns of an estimate row that are not group keys.
ESTIMATE_COLUMNS = {"estimate", "ci_low", "ci_high", "level", "n", "n_unit", "method", "note"}


def group_columns(frame: pl.DataFrame, also_not: set[str] = frozenset()) -> list[str]:
    """The group keys of a tidy result frame: whatever is not an estimate column."""
    return [c for c in frame.columns if c not in ESTIMATE_COLUMNS and c not in also_not]


def wide_range(values: pl.Series, ratio: float = 30.0) -> bool:
    """True when positive values span more than `ratio`x: such an axis reads better in log."""
    positive = values.drop_nulls().filter(values.drop_nulls() > 0)
    return positive.len() > 1 and positive.max() / positive.min() > ratio


def coefficient_chart(frame: pl.DataFrame, title: str = "correlation coefficient") -> alt.LayerChart:
    """Labelled coefficients in [-1, 1] (column `config`), dot and interval, 0 marked."""
    frame = frame.with_columns(
        *(pl.col(c).cast(pl.Float64) for c in ("estimate", "ci_low", "ci_high"))
    ).filter(pl.col("estimate").is_not_null())
    if frame.height == 0:
        return no_data_chart(f"no {title} to draw: every coefficient needs at least 3 points")
    y = alt.Y("config:N", title=None, axis=alt.Axis(labelLimit=LABEL_LIMIT))
    scale = alt.Scale(domain=[-1, 1])
    tooltip = interval_tooltip("config", title=title)
    zero = alt.Chart().mark_rule(color="#aaa").encode(x=alt.datum(0))
    rules = (
        alt.Chart()
        .mark_rule(strokeWidth=2)
        .encode(x=alt.X("bar_low:Q", scale=scale, title=title), x2="bar_high:Q", y=y, tooltip=tooltip)
    )
    dots = (
        alt.Chart()
        .mark_point(filled=True, size=45)
        .encode(x=alt.X("estimate:Q", scale=scale), y=y, tooltip=tooltip)
    )
    data = drawn_bounds(
        with_interval_text(
            frame.select(*filter_fields(frame, "config"), "estimate", "ci_low", "ci_high", "level", "n")
        )
    )
    return alt.layer(zero, rules, dots, data=data).properties(width=WIDTH, height=band_height(data.height))


# (interval end, the triangle pointing out of the plot) for an interval a chart stops drawing
CUT_ENDS = (("low", "triangle-left"), ("high", "triangle-right"))


def cut_end_marks(
    drawn: str,
    cut: str,
    scale: alt.Scale,
    y: alt.Y,
    tooltip: Callable[[str], list[alt.Tooltip]],
    *,
    colour: alt.Color | None = None,
    size: int = 80,
    mark_colour: str | None = None,
    valid: str | None = None,
) -> list[alt.Chart]:
    """An arrowhead at each end of an interval the chart cut: at `{drawn}_{end}`, of `size` where
    `datum.{cut}_{end}` holds and 0 elsewhere (every row has a mark: a layer a filter left empty makes
    Vega warn "Infinite extent"). `tooltip(end)` says where the interval really goes; `valid`, a
    Vega expression, keeps only rows that have an interval."""
    marks = []
    for end, shape in CUT_ENDS:
        chart = alt.Chart().mark_point(
            shape=shape, filled=True, opacity=1, **({"color": mark_colour} if mark_colour else {})
        )
        if valid:
            chart = chart.transform_filter(valid)
        channels = {"color": colour} if colour is not None else {}
        marks.append(
            chart.encode(
                x=alt.X(f"{drawn}_{end}:Q", scale=scale),
                y=y,
                size=alt.condition(f"datum.{cut}_{end}", alt.value(size), alt.value(0)),
                tooltip=tooltip(end),
                **channels,
            )
        )
    return marks
