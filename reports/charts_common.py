"""What every chart builder shares: the interval marks, faceting, labels, sizes.

Builders receive frames that are already aggregated (one row per plotted point, with
estimate/ci_low/ci_high/level/n), so a chart embeds tens or hundreds of rows whether the DB
holds 1 run or 10,000. Nothing here touches a DB.
"""

from __future__ import annotations

from collections.abc import Sequence

import altair as alt
import polars as pl

WIDTH = 520
LABEL_LIMIT = 280          # px of a category label before it is cut with an ellipsis
ROW_HEIGHT = 18            # per category on a band axis
MIN_HEIGHT, MAX_HEIGHT = 60, 900
FACET_CANDIDATES = ("device", "framework")
MAX_FACETS = 12            # more panels than this are unreadable; the chart colours by it instead


def label_column(frame: pl.DataFrame, columns: Sequence[str], name: str = "config", sep: str = " · ") -> pl.DataFrame:
    """A text label joining the given columns (only those present), nulls skipped."""
    present = [c for c in columns if c in frame.columns]
    if not present:
        return frame.with_columns(pl.lit("all").alias(name))
    parts = [pl.col(c).cast(pl.String) for c in present]
    return frame.with_columns(pl.concat_str(parts, separator=sep, ignore_nulls=True).fill_null("all").alias(name))


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
    """True when some row has both bounds. A layer whose fields are all null makes Vega warn
    "Infinite extent" (and draws nothing), so a builder leaves such a layer out; rows without an
    interval are filtered out of the layer (VALID_INTERVAL) where others have one."""
    return low in frame.columns and high in frame.columns and frame.select(
        (pl.col(low).is_not_null() & pl.col(high).is_not_null()).any()).item()


def valid_interval(low: str = "ci_low", high: str = "ci_high") -> str:
    """The Vega expression of a row that has both bounds."""
    return f"isValid(datum.{low}) && isValid(datum.{high})"


def band_height(n_categories: int) -> int:
    return max(MIN_HEIGHT, min(MAX_HEIGHT, ROW_HEIGHT * max(n_categories, 1)))


def interval_tooltip(*fields: str) -> list[alt.Tooltip]:
    """The group fields, then the estimate with its interval and what it rests on."""
    return [*(alt.Tooltip(f"{f}:N") for f in fields),
            alt.Tooltip("estimate:Q", format=".4~g"), alt.Tooltip("ci_low:Q", format=".4~g"),
            alt.Tooltip("ci_high:Q", format=".4~g"), alt.Tooltip("level:Q"), alt.Tooltip("n:Q")]


def facet(chart: alt.LayerChart | alt.Chart, frame: pl.DataFrame, column: str | None, *, columns: int = 2,
          independent_x: bool = False):
    """Small multiples by `column` (data moves to the top level, as faceting a layer requires).
    Each panel lists only its own categories; `independent_x` for quantities that differ by
    orders of magnitude between panels (a Raspberry Pi's seconds next to a server's)."""
    if column is None:
        return chart.properties(data=frame) if isinstance(chart, alt.LayerChart) else chart
    faceted = chart.properties(data=frame).facet(facet=alt.Facet(f"{column}:N", title=column), columns=columns)
    return faceted.resolve_scale(y="independent", **({"x": "independent"} if independent_x else {}))


def estimate_interval_chart(frame: pl.DataFrame, *, category: str, x_title: str, color: str | None = None,
                            log_x: bool = False, facet_by: str | None = None) -> alt.FacetChart | alt.LayerChart:
    """A dot at each estimate and a rule across its interval, one row per category."""
    scale = alt.Scale(type="log") if log_x else alt.Scale(zero=False)
    y = alt.Y(f"{category}:N", title=None, sort=alt.EncodingSortField("estimate", op="min"))
    colour = alt.Color(f"{color}:N") if color else alt.value("#1f77b4")
    rules = alt.Chart().mark_rule(strokeWidth=2).encode(
        x=alt.X("ci_low:Q", title=x_title, scale=scale), x2="ci_high:Q", y=y, color=colour)
    dots = alt.Chart().mark_point(filled=True, size=45).encode(
        x=alt.X("estimate:Q", scale=scale), y=y, color=colour,
        tooltip=interval_tooltip(category, *([color] if color else [])))
    n_rows = frame[category].n_unique() if category in frame.columns else 1
    layer = alt.layer(rules, dots).properties(width=WIDTH if facet_by is None else WIDTH // 2,
                                              height=band_height(n_rows))
    return facet(layer, frame, facet_by)


def no_data_chart(message: str) -> alt.Chart:
    """A small chart that says why there is nothing to draw (a section keeps its place)."""
    return (alt.Chart(pl.DataFrame({"text": [message]})).mark_text(align="left", fontSize=13, color="#666")
            .encode(text="text:N").properties(width=WIDTH, height=30))


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
    frame = frame.with_columns(*(pl.col(c).cast(pl.Float64) for c in ("estimate", "ci_low", "ci_high")))
    y = alt.Y("config:N", title=None, axis=alt.Axis(labelLimit=LABEL_LIMIT))
    scale = alt.Scale(domain=[-1, 1])
    zero = alt.Chart().mark_rule(color="#aaa").encode(x=alt.datum(0))
    rules = alt.Chart().mark_rule(strokeWidth=2).encode(x=alt.X("ci_low:Q", scale=scale, title=title), x2="ci_high:Q", y=y)
    dots = alt.Chart().mark_point(filled=True, size=45).encode(x=alt.X("estimate:Q", scale=scale), y=y,
                                                               tooltip=interval_tooltip("config"))
    data = frame.select("config", "estimate", "ci_low", "ci_high", "level", "n")
    return alt.layer(zero, rules, dots, data=data).properties(width=WIDTH, height=band_height(data.height))
