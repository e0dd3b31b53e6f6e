"""Chart builders of energy and power: a run's power trace, energy against latency, energy per phase
and the correlations. The power trace is one run's (pCAMP Figures 1 and 3); energy per inference is
drawn against latency with the fitted line and its band; the correlations are the time-energy ones.
Pure: an analysis frame (or the loaded PowerTrace) in, a chart out; the fitted line and its band are
computed by the energy analysis (its `band` frame), never here.
"""

from __future__ import annotations

import altair as alt
import polars as pl

from edgestats.analysis.load.power_trace import PowerTrace
from edgestats.reports.charts_breakdown import PHASE_ORDER
from edgestats.reports.charts_common import (
    EXACT,
    WIDTH,
    band_height,
    category_encoding,
    coefficient_chart,
    drawn_bounds,
    facet,
    facet_column,
    filter_fields,
    group_columns,
    interval_tooltip,
    label_column,
    no_data_chart,
    varying,
    with_interval_text,
)
from edgestats.reports.charts_common import (
    FACET_CANDIDATES as FACETABLE,
)

# -- energy: power over time of one run ----------------------------------------------------------


def power_over_time_chart(trace: PowerTrace) -> alt.LayerChart:
    """The run's power (bucket means) over its phase windows, shaded and coloured by phase,
    with the idle baseline as a dashed line: the area between the two is the energy that
    `phase_energy` attributes to each phase."""

    def tagged(frame: pl.DataFrame) -> pl.DataFrame:  # the run's device, framework ... for the page filter
        return frame.with_columns(*(pl.lit(v, pl.String).alias(k) for k, v in trace.filters.items()))

    phases = (
        alt.Chart(tagged(trace.phases))
        .mark_rect(opacity=0.18)
        .encode(
            x=alt.X("start_s:Q", title="time since first power sample (s)"),
            x2="end_s:Q",
            color=alt.Color("phase:N", title="phase", sort=trace.phases["phase"].to_list()),
            tooltip=["phase:N", alt.Tooltip("start_s:Q", format=EXACT), alt.Tooltip("end_s:Q", format=EXACT)],
        )
    )
    power = (
        alt.Chart(tagged(trace.power))
        .mark_line(color="#222", strokeWidth=1.4)
        .encode(
            x="t_s:Q",
            y=alt.Y("power_w:Q", title="power (W)", scale=alt.Scale(zero=True)),
            tooltip=[
                alt.Tooltip("t_s:Q", title="time (s)", format=EXACT),
                alt.Tooltip("power_w:Q", title="mean power in the bucket (W)", format=EXACT),
            ],
        )
    )
    layers = [phases, power]
    if trace.idle_power_w is not None:
        idle = tagged(
            pl.DataFrame(
                {"idle_power_w": [trace.idle_power_w], "label": [f"idle {trace.idle_power_w:.2f} W"]}
            )
        )
        idle_tip = [alt.Tooltip("idle_power_w:Q", title="idle baseline (W)", format=EXACT)]
        layers.append(
            alt.Chart(idle)
            .mark_rule(strokeDash=[6, 4], color="#d62728")
            .encode(y="idle_power_w:Q", tooltip=idle_tip)
        )
        layers.append(
            alt.Chart(idle)
            .mark_text(align="left", dx=4, dy=-6, color="#d62728")
            .encode(y="idle_power_w:Q", x=alt.value(0), text="label:N", tooltip=idle_tip)
        )
    return alt.layer(*layers).properties(width=WIDTH + 120, height=240, title=trace.label)


# -- energy: time vs energy, with the fitted line and its band -----------------------------------

# Columns of energy's `band` frame that are not its fit group keys.
BAND_VALUES = ("x", "fit", "band_low", "band_high", "level")


def time_energy_chart(points: pl.DataFrame, band: pl.DataFrame) -> alt.FacetChart | alt.LayerChart:
    """Energy per inference against mean latency (median where the runs have no mean), one dot
    per configuration (its means over runs, with n_runs), with the OLS line through those dots
    and its confidence band per fit group (device by default), faceted by it. Both frames come
    from the energy analysis (its `points` and `band`): the band is fitted there, through the
    very points drawn here."""
    x = "latency_mean_ms" if "latency_mean_ms" in points.columns else "latency_median_ms"
    x_title = f"{'mean' if x == 'latency_mean_ms' else 'median'} latency (ms)"
    y = "energy_per_inference_j"
    fit_keys = [c for c in band.columns if c not in BAND_VALUES]
    keys = [c for c in points.columns if c not in ("run_idx", "n_runs", x, y)]
    drawn = label_column(points, [c for c in varying(points, keys) if c not in fit_keys] or keys)
    facet_by = next((k for k in fit_keys if k in FACETABLE and drawn[k].n_unique() > 1), None)
    layers = [
        *_band_layers(band, x_title),
        alt.Chart()
        .mark_point(filled=True, opacity=0.7)
        .transform_filter("isValid(datum.n_runs)")
        .encode(
            x=alt.X(f"{x}:Q", title=x_title),
            y=alt.Y(f"{y}:Q", title="energy per inference (J)"),
            **category_encoding("config", drawn["config"].n_unique(), title="configuration"),
            tooltip=[
                alt.Tooltip("config:N"),
                alt.Tooltip(f"{x}:Q", title=x_title, format=EXACT),
                alt.Tooltip(f"{y}:Q", title="energy per inference (J)", format=EXACT),
                alt.Tooltip("n_runs:Q", title="runs"),
            ],
        ),
    ]
    kept = filter_fields(drawn, "config", *fit_keys, *keys)  # a point's configuration, for the page filter
    data = pl.concat(
        [drawn.select(*kept, x, y, "n_runs"), band.drop("level", strict=False)],
        how="diagonal_relaxed",
    )
    layer = alt.layer(*layers).properties(width=WIDTH if facet_by is None else WIDTH // 2, height=280)
    return facet(layer, data, facet_by)


def _band_layers(band: pl.DataFrame, x_title: str) -> list[alt.Chart]:
    """The confidence band (an area) and the fitted line, each where the band frame has a value: a
    layer with no value at all would make Vega warn "Infinite extent", so it is left out."""
    band_tip = [
        alt.Tooltip("x:Q", title=x_title, format=EXACT),
        alt.Tooltip("fit:Q", title="fitted energy (J)", format=EXACT),
        alt.Tooltip("band_low:Q", title="band low (J)", format=EXACT),
        alt.Tooltip("band_high:Q", title="band high (J)", format=EXACT),
    ]
    has = {c: c in band.columns and band[c].is_not_null().any() for c in ("band_low", "fit")}
    area = (
        alt.Chart()
        .mark_area(opacity=0.2, color="#1f77b4")
        .transform_filter("isValid(datum.band_low)")
        .encode(
            x=alt.X("x:Q", title=x_title),
            y=alt.Y("band_low:Q", title="energy per inference (J)"),
            y2="band_high:Q",
            tooltip=band_tip,
        )
    )
    line = (
        alt.Chart()
        .mark_line(color="#1f77b4")
        .transform_filter("isValid(datum.fit)")
        .encode(
            x=alt.X("x:Q", title=x_title),
            y=alt.Y("fit:Q", title="energy per inference (J)"),
            tooltip=band_tip,
        )
    )
    return [*([area] if has["band_low"] else []), *([line] if has["fit"] else [])]


def phase_energy_chart(phases: pl.DataFrame, quantity: str = "energy_j") -> alt.FacetChart | alt.LayerChart:
    """Mean energy (or mean power) of each phase per configuration, with its interval."""
    frame = phases.filter((pl.col("quantity") == quantity) & pl.col("estimate").is_not_null())
    keys = group_columns(frame, {"part", "phase", "quantity"})
    facet_by = facet_column(frame.select(keys))
    frame = label_column(frame, [c for c in varying(frame, keys) if c != facet_by] or keys)
    if frame.height == 0:
        return no_data_chart(f"No {quantity} per phase to draw: no run has power samples.")
    frame = drawn_bounds(
        with_interval_text(
            frame.select(
                *filter_fields(frame, "config", "phase", *([facet_by] if facet_by else [])),
                "estimate",
                "ci_low",
                "ci_high",
                "level",
                "n",
                *(["note"] if "note" in frame.columns else []),
            )
        )
    )
    title = {"energy_j": "energy above idle (J)", "mean_power_w": "mean power (W)"}.get(quantity, quantity)
    y = alt.Y("phase:N", title=None, sort=PHASE_ORDER + ["total"])
    colour = category_encoding("config", frame["config"].n_unique(), title="configuration")
    offset = alt.YOffset("config:N")
    tooltip = interval_tooltip("config", "phase", title=title)
    rules = (
        alt.Chart()
        .mark_rule(strokeWidth=2)
        .encode(
            x=alt.X("bar_low:Q", title=title),
            x2="bar_high:Q",
            y=y,
            yOffset=offset,
            color=colour["color"],
            tooltip=tooltip,
        )
    )
    dots = (
        alt.Chart()
        .mark_point(filled=True, size=40)
        .encode(x="estimate:Q", y=y, yOffset=offset, tooltip=tooltip, **colour)
    )
    height = band_height(frame["phase"].n_unique() * max(frame["config"].n_unique(), 1))
    layer = alt.layer(rules, dots).properties(width=WIDTH if facet_by is None else WIDTH // 2, height=height)
    return facet(layer, frame, facet_by)


def correlation_chart(correlation: pl.DataFrame) -> alt.LayerChart:
    """Pearson and Spearman coefficients with their intervals, on the full [-1, 1] axis."""
    keys = [c for c in group_columns(correlation, {"part", "p_value"}) if c != "method"]
    return coefficient_chart(label_column(correlation, ["method", *varying(correlation, keys)]))
