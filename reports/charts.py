"""Chart builders: one pure function per figure, an aggregated frame in, an Altair chart out.

Each takes the tidy frame an analysis returns (group keys, then estimate/ci_low/ci_high/level/n,
see edgestats.analysis.result) and draws every estimate with its interval. Nothing here reads a
DB or an analysis' options; the report (reports/report.py) picks the frames. The training
analyses' charts (hyperparams, pipeline) are in charts_training.py.
"""

from __future__ import annotations

import math

import altair as alt
import numpy as np
import polars as pl

from edgestats.reports.charts_common import (
    FACET_CANDIDATES as FACETABLE, LABEL_LIMIT, WIDTH, any_interval, band_height, facet, facet_column, group_columns,
    interval_tooltip, label_column, valid_interval, varying, wide_range,
)
from edgestats.reports.power import PowerTrace

# -- summary: latency per configuration ----------------------------------------------------------

LATENCY_METRICS = {"latency_median_ms": "median", "latency_p90_ms": "p90", "latency_p99_ms": "p99"}


def latency_quantile_frame(metrics: pl.DataFrame) -> tuple[pl.DataFrame, str | None]:
    """One row per configuration: median with its interval, p90 and p99 (which may be null for
    imported one-figure-per-run results), a config label, and the facet column if any."""
    keys = group_columns(metrics, {"metric", "n_runs"})
    facet_by = facet_column(metrics.select(keys))
    labelled = label_column(metrics, [c for c in varying(metrics, keys) if c != facet_by] or keys)
    index = ["config", *([facet_by] if facet_by else [])]
    median = (labelled.filter(pl.col("metric") == "latency_median_ms")
              .select(*index, "estimate", "ci_low", "ci_high", "level", "n", "n_unit"))
    tails = (labelled.filter(pl.col("metric").is_in(["latency_p90_ms", "latency_p99_ms"]))
             .select(*index, pl.col("metric").replace_strict(LATENCY_METRICS), "estimate")
             .pivot(on="metric", index=index, values="estimate"))
    for column in ("p90", "p99"):
        if column not in tails.columns:
            tails = tails.with_columns(pl.lit(None, pl.Float64).alias(column))
    return median.join(tails, on=index, how="left").sort(index), facet_by


# Columns of summary's `distribution` frame (ms) that are not group keys.
DISTRIBUTION_COLUMNS = {"n_runs", "n", "n_unit", "note", "min_ms", "q01_ms", "q05_ms", "q25_ms", "median_ms", "q75_ms",
                        "q95_ms", "q99_ms", "max_ms"}


def latency_box_frame(metrics: pl.DataFrame, distribution: pl.DataFrame) -> tuple[pl.DataFrame, str | None]:
    """One row per configuration: the quantiles of `distribution` next to the median's interval
    from `metrics` (null where the median has none), a config label and the facet column."""
    keys = [c for c in distribution.columns if c not in DISTRIBUTION_COLUMNS]
    median = (metrics.filter(pl.col("metric") == "latency_median_ms")
              .select(*keys, *(pl.col(c).cast(pl.Float64) for c in ("ci_low", "ci_high")), "level"))
    joined = distribution.join(median, on=keys, how="left", nulls_equal=True)
    facet_by = facet_column(joined.select(keys))
    labelled = label_column(joined, [c for c in varying(joined, keys) if c != facet_by] or keys)
    index = ["config", *([facet_by] if facet_by else [])]
    quantiles = ["min_ms", "q05_ms", "q25_ms", "median_ms", "q75_ms", "q95_ms", "q99_ms", "max_ms"]
    return labelled.select(*index, "n", "n_unit", *(pl.col(c).cast(pl.Float64) for c in quantiles),
                           "ci_low", "ci_high", "level").sort(index), facet_by


def latency_distribution_chart(metrics: pl.DataFrame, distribution: pl.DataFrame | None = None
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
    y = alt.Y("config:N", title=None, axis=alt.Axis(labelLimit=LABEL_LIMIT), sort=alt.EncodingSortField("median_ms", op="min"))
    x_title = "steady-state latency (ms)" + (", log scale" if log else "")
    fmt = ".4~g"
    tooltip = [alt.Tooltip("config:N"), alt.Tooltip("n:Q"), alt.Tooltip("n_unit:N"),
               *(alt.Tooltip(f"{c}:Q", title=c.removesuffix("_ms"), format=fmt)
                 for c in ("min_ms", "q05_ms", "q25_ms", "median_ms", "q75_ms", "q95_ms", "q99_ms", "max_ms")),
               alt.Tooltip("ci_low:Q", title="median ci_low", format=fmt), alt.Tooltip("ci_high:Q", title="median ci_high", format=fmt),
               alt.Tooltip("level:Q")]
    tail = alt.Chart().mark_rule(color="#9aa7b5", strokeDash=[2, 2]).encode(
        x=alt.X("q95_ms:Q", scale=scale, title=x_title), x2="q99_ms:Q", y=y)
    whisker = alt.Chart().mark_rule(color="#6b7b8c").encode(x=alt.X("q05_ms:Q", scale=scale), x2="q95_ms:Q", y=y)
    box = alt.Chart().mark_bar(size=12, color="#c6dbef", stroke="#6baed6", strokeWidth=1).encode(
        x=alt.X("q25_ms:Q", scale=scale), x2="q75_ms:Q", y=y, tooltip=tooltip)
    interval = alt.Chart().mark_bar(size=5, color="#08519c").transform_filter(valid_interval()).encode(
        x=alt.X("ci_low:Q", scale=scale), x2="ci_high:Q", y=y, tooltip=tooltip)
    median = alt.Chart().mark_tick(color="#08306b", thickness=2, size=14).encode(
        x=alt.X("median_ms:Q", scale=scale), y=y, tooltip=tooltip)
    n_rows = frame["config"].n_unique()
    layers = [tail, whisker, box, *([interval] if any_interval(frame, "ci_low", "ci_high") else []), median]
    layer = alt.layer(*layers).properties(
        width=WIDTH if facet_by is None else WIDTH // 2, height=band_height(n_rows))
    return facet(layer, frame, facet_by)


def latency_ecdf_chart(ecdf: pl.DataFrame) -> alt.FacetChart | alt.LayerChart:
    """The ECDF of each configuration's latencies: its quantile function on a grid (summary's
    `ecdf` frame, 51 points per configuration) joined by lines, one line per configuration, per
    device when several; a log axis when configurations span decades."""
    keys = [c for c in ecdf.columns if c not in {"p", "latency_ms", "n", "n_unit"}]
    facet_by = facet_column(ecdf.select(keys))
    frame = label_column(ecdf, [c for c in varying(ecdf, keys) if c != facet_by] or keys)
    frame = frame.select("config", *([facet_by] if facet_by else []), "p", "latency_ms", "n", "n_unit").sort(
        ["config", *([facet_by] if facet_by else []), "p"])
    log = wide_range(frame["latency_ms"])
    x = alt.X("latency_ms:Q", title="steady-state latency (ms)" + (", log scale" if log else ""),
              scale=alt.Scale(type="log") if log else alt.Scale(zero=False))
    line = alt.Chart().mark_line(strokeWidth=1.5).encode(
        x=x, y=alt.Y("p:Q", title="fraction of latencies at or below", scale=alt.Scale(domain=[0, 1])),
        color=alt.Color("config:N", title="configuration", legend=alt.Legend(labelLimit=LABEL_LIMIT)),
        order="p:Q", tooltip=[alt.Tooltip("config:N"), alt.Tooltip("p:Q", format=".2f"),
                              alt.Tooltip("latency_ms:Q", format=".4~g"), alt.Tooltip("n:Q"), alt.Tooltip("n_unit:N")])
    layer = alt.layer(line).properties(width=WIDTH if facet_by is None else WIDTH // 2, height=220)
    return facet(layer, frame, facet_by)


def latency_quantile_chart(metrics: pl.DataFrame) -> alt.FacetChart | alt.LayerChart:
    """Per configuration: the median with its interval (thick rule and dot), the spread to the
    p90 (bar) and the tail to the p99 (thin rule). Log axis when configurations span decades."""
    frame, facet_by = latency_quantile_frame(metrics)
    log = wide_range(pl.concat([frame["estimate"], frame["p99"]]))
    scale = alt.Scale(type="log") if log else alt.Scale(zero=False)
    y = alt.Y("config:N", title=None, axis=alt.Axis(labelLimit=LABEL_LIMIT), sort=alt.EncodingSortField("estimate", op="min"))
    x_title = "latency (ms)" + (", log scale" if log else "")
    tail = alt.Chart().mark_rule(color="#9aa7b5").encode(x=alt.X("estimate:Q", scale=scale, title=x_title), x2="p99:Q", y=y)
    spread = alt.Chart().mark_bar(size=9, color="#c6dbef").encode(x=alt.X("estimate:Q", scale=scale), x2="p90:Q", y=y)
    interval = alt.Chart().mark_rule(strokeWidth=3, color="#08519c").transform_filter(valid_interval()).encode(
        x=alt.X("ci_low:Q", scale=scale), x2="ci_high:Q", y=y)
    median = alt.Chart().mark_point(filled=True, size=50, color="#08519c").encode(
        x=alt.X("estimate:Q", scale=scale), y=y,
        tooltip=[alt.Tooltip("config:N"), alt.Tooltip("estimate:Q", title="median ms", format=".4~g"),
                 alt.Tooltip("ci_low:Q", format=".4~g"), alt.Tooltip("ci_high:Q", format=".4~g"),
                 alt.Tooltip("p90:Q", format=".4~g"), alt.Tooltip("p99:Q", format=".4~g"),
                 alt.Tooltip("level:Q"), alt.Tooltip("n:Q"), alt.Tooltip("n_unit:N")])
    n_rows = frame["config"].n_unique()
    layers = [tail, spread, *([interval] if any_interval(frame, "ci_low", "ci_high") else []), median]
    layer = alt.layer(*layers).properties(
        width=WIDTH if facet_by is None else WIDTH // 2, height=band_height(n_rows))
    return facet(layer, frame, facet_by)


# -- energy: power over time of one run ----------------------------------------------------------

def power_over_time_chart(trace: PowerTrace) -> alt.LayerChart:
    """The run's power (bucket means) over its phase windows, shaded and coloured by phase,
    with the idle baseline as a dashed line: the area between the two is the energy that
    `phase_energy` attributes to each phase."""
    phases = alt.Chart(trace.phases).mark_rect(opacity=0.18).encode(
        x=alt.X("start_s:Q", title="time since first power sample (s)"), x2="end_s:Q",
        color=alt.Color("phase:N", title="phase", sort=trace.phases["phase"].to_list()),
        tooltip=["phase:N", alt.Tooltip("start_s:Q", format=".3f"), alt.Tooltip("end_s:Q", format=".3f")])
    power = alt.Chart(trace.power).mark_line(color="#222", strokeWidth=1.4).encode(
        x="t_s:Q", y=alt.Y("power_w:Q", title="power (W)", scale=alt.Scale(zero=True)),
        tooltip=[alt.Tooltip("t_s:Q", format=".2f"), alt.Tooltip("power_w:Q", format=".3f")])
    layers = [phases, power]
    if trace.idle_power_w is not None:
        idle = pl.DataFrame({"idle_power_w": [trace.idle_power_w], "label": [f"idle {trace.idle_power_w:.2f} W"]})
        layers.append(alt.Chart(idle).mark_rule(strokeDash=[6, 4], color="#d62728").encode(y="idle_power_w:Q"))
        layers.append(alt.Chart(idle).mark_text(align="left", dx=4, dy=-6, color="#d62728").encode(
            y="idle_power_w:Q", x=alt.value(0), text="label:N"))
    return alt.layer(*layers).properties(width=WIDTH + 120, height=240, title=trace.label)


# -- breakdown: where a run's time goes (pCAMP Table 3) ------------------------------------------

PHASE_ORDER = ["import", "load_model", "first_inference", "steady", "other"]


def stacked_phase_frame(phases: pl.DataFrame) -> tuple[pl.DataFrame, str | None]:
    """Mean seconds per configuration and phase, stacked in pCAMP's order: each segment's start
    and end, and its interval drawn at the segment's end (low/high = end ∓ the CI half-widths)."""
    keys = group_columns(phases, {"phase", "share_of_total"})
    facet_by = facet_column(phases.select(keys))
    labelled = label_column(phases, [c for c in varying(phases, keys) if c != facet_by] or keys)
    index = ["config", *([facet_by] if facet_by else [])]
    order = pl.col("phase").replace_strict({p: i for i, p in enumerate(PHASE_ORDER)}, default=len(PHASE_ORDER))
    seconds = pl.col("estimate").clip(lower_bound=0.0)  # "other" may dip below 0 by rounding
    stacked = (labelled.with_columns(order.alias("phase_order"), seconds.alias("seconds"))
               .sort([*index, "phase_order"])
               .with_columns(pl.col("seconds").cum_sum().over(index).alias("stack_end"))
               .with_columns((pl.col("stack_end") - pl.col("seconds")).alias("stack_start"),
                             (pl.col("stack_end") - (pl.col("estimate") - pl.col("ci_low"))).alias("err_low"),
                             (pl.col("stack_end") + (pl.col("ci_high") - pl.col("estimate"))).alias("err_high")))
    return stacked.select(*index, "phase", "phase_order", "estimate", "ci_low", "ci_high", "level", "n",
                          "share_of_total", "stack_start", "stack_end", "err_low", "err_high"), facet_by


def phase_breakdown_chart(phases: pl.DataFrame) -> alt.FacetChart | alt.LayerChart:
    """Stacked bars of mean seconds per phase and configuration, each segment's interval as an
    error bar at its end."""
    frame, facet_by = stacked_phase_frame(phases)
    y = alt.Y("config:N", title=None, axis=alt.Axis(labelLimit=LABEL_LIMIT))
    present = [p for p in PHASE_ORDER if p in frame["phase"].to_list()]
    bars = alt.Chart().mark_bar(size=14).encode(
        x=alt.X("stack_start:Q", title="mean seconds per run"), x2="stack_end:Q", y=y,
        color=alt.Color("phase:N", sort=present, scale=alt.Scale(domain=present, scheme="tableau10")),
        order=alt.Order("phase_order:Q"),
        tooltip=[alt.Tooltip("config:N"), alt.Tooltip("phase:N"), alt.Tooltip("estimate:Q", title="mean s", format=".4~g"),
                 alt.Tooltip("ci_low:Q", format=".4~g"), alt.Tooltip("ci_high:Q", format=".4~g"),
                 alt.Tooltip("share_of_total:Q", format=".1%"), alt.Tooltip("n:Q")])
    errors = alt.Chart().mark_rule(color="#333").encode(x="err_low:Q", x2="err_high:Q", y=y)
    layer = alt.layer(bars, errors).properties(width=WIDTH if facet_by is None else WIDTH // 2,
                                               height=band_height(frame["config"].n_unique()))
    return facet(layer, frame, facet_by, independent_x=True)


def ratio_chart(ratios: pl.DataFrame, *, ratio_name: str, title: str) -> alt.FacetChart | alt.LayerChart:
    """One ratio per configuration with its interval, on a log axis, with 1 (break-even) marked."""
    frame = ratios.filter((pl.col("ratio") == ratio_name) & pl.col("estimate").is_not_null())
    keys = group_columns(frame, {"ratio", "load_exceeds_steady", "confident"})
    facet_by = facet_column(frame.select(keys))
    frame = label_column(frame, [c for c in varying(frame, keys) if c != facet_by] or keys)
    frame = frame.select("config", *([facet_by] if facet_by else []), "estimate", "ci_low", "ci_high", "level", "n")
    log = bool(frame.height) and frame["estimate"].min() > 0 and (frame["ci_low"].min() or 0) > 0
    scale = alt.Scale(type="log") if log else alt.Scale(zero=False)
    y = alt.Y("config:N", title=None, axis=alt.Axis(labelLimit=LABEL_LIMIT), sort=alt.EncodingSortField("estimate", op="min"))
    one = alt.Chart().mark_rule(strokeDash=[4, 3], color="#888").encode(x=alt.datum(1))
    rules = alt.Chart().mark_rule(strokeWidth=2).encode(x=alt.X("ci_low:Q", scale=scale, title=title), x2="ci_high:Q", y=y)
    dots = alt.Chart().mark_point(filled=True, size=45).encode(
        x=alt.X("estimate:Q", scale=scale), y=y,
        tooltip=[alt.Tooltip("config:N"), alt.Tooltip("estimate:Q", format=".4~g"), alt.Tooltip("ci_low:Q", format=".4~g"),
                 alt.Tooltip("ci_high:Q", format=".4~g"), alt.Tooltip("level:Q"), alt.Tooltip("n:Q")])
    layer = alt.layer(one, rules, dots).properties(width=WIDTH if facet_by is None else WIDTH // 2,
                                                   height=band_height(frame["config"].n_unique()))
    return facet(layer, frame, facet_by)


# -- energy: time vs energy, with the fitted line and its band -----------------------------------

MAX_SCATTER_POINTS = 2000   # above this, one point per configuration (its means) instead of per run
BAND_STEPS = 40


def ols_band(x: np.ndarray, y: np.ndarray, level: float, steps: int = BAND_STEPS) -> pl.DataFrame:
    """The OLS line y = a + b·x on a grid over x's range, with the confidence band of the mean
    response: ŷ ± t·s·sqrt(1/n + (x − x̄)² / Sxx). Empty when no line can be fitted (n < 3 or x
    constant), so a chart then shows the points alone."""
    from scipy import stats

    n = len(x)
    sxx = float(((x - x.mean()) ** 2).sum()) if n else 0.0
    if n < 3 or sxx == 0:
        return pl.DataFrame(schema={"x": pl.Float64, "fit": pl.Float64, "band_low": pl.Float64, "band_high": pl.Float64})
    slope = float(((x - x.mean()) * (y - y.mean())).sum()) / sxx
    intercept = float(y.mean()) - slope * float(x.mean())
    residual_sd = math.sqrt(float(((y - intercept - slope * x) ** 2).sum()) / (n - 2))
    t = float(stats.t.ppf(0.5 + level / 2, n - 2))
    grid = np.linspace(float(x.min()), float(x.max()), steps)
    fit = intercept + slope * grid
    half = t * residual_sd * np.sqrt(1.0 / n + (grid - x.mean()) ** 2 / sxx)
    return pl.DataFrame({"x": grid, "fit": fit, "band_low": fit - half, "band_high": fit + half})


def scatter_points(points: pl.DataFrame, x: str, y: str, keys: list[str]) -> pl.DataFrame:
    """Per-run points, or per-configuration means when there are too many runs to draw."""
    if points.height <= MAX_SCATTER_POINTS:
        return points.with_columns(pl.lit(1).alias("n_runs"))
    return points.group_by(keys).agg(pl.col(x).mean(), pl.col(y).mean(), pl.len().alias("n_runs"))


def time_energy_chart(points: pl.DataFrame, fit: pl.DataFrame, level: float) -> alt.FacetChart | alt.LayerChart:
    """Energy per inference against median latency, one dot per run (or configuration), with
    the OLS line and its confidence band per fit group (device by default), faceted by it."""
    x, y = "latency_median_ms", "energy_per_inference_j"
    fit_keys = group_columns(fit, {"part", "term", "p_value", "r_squared"}) if fit.height else []
    keys = [c for c in points.columns if c not in ("run_idx", x, y)]
    drawn = label_column(scatter_points(points, x, y, keys), [c for c in varying(points, keys) if c not in fit_keys] or keys)
    facet_by = next((k for k in fit_keys if k in FACETABLE and drawn[k].n_unique() > 1), None)
    bands = []
    for _, sub in (drawn.group_by(fit_keys, maintain_order=True) if fit_keys else [((), drawn)]):
        band = ols_band(sub[x].to_numpy().astype(float), sub[y].to_numpy().astype(float), level)
        bands.append(band.with_columns(*(pl.lit(sub[k][0]).alias(k) for k in fit_keys)))
    band = pl.concat(bands, how="diagonal_relaxed") if bands else pl.DataFrame()
    layers = [
        alt.Chart().mark_area(opacity=0.2, color="#1f77b4").transform_filter("isValid(datum.band_low)").encode(
            x=alt.X("x:Q", title="median latency (ms)"), y=alt.Y("band_low:Q", title="energy per inference (J)"), y2="band_high:Q"),
        alt.Chart().mark_line(color="#1f77b4").transform_filter("isValid(datum.fit)").encode(x="x:Q", y="fit:Q"),
        alt.Chart().mark_point(filled=True, opacity=0.7).transform_filter("isValid(datum.n_runs)").encode(
            x=alt.X(f"{x}:Q"), y=alt.Y(f"{y}:Q"), color=alt.Color("config:N", title="configuration"),
            tooltip=[alt.Tooltip("config:N"), alt.Tooltip(f"{x}:Q", format=".4~g"), alt.Tooltip(f"{y}:Q", format=".4~g"),
                     alt.Tooltip("n_runs:Q")]),
    ]
    data = pl.concat([drawn.select(*({"config", x, y, "n_runs"} | set(fit_keys))), band], how="diagonal_relaxed")
    layer = alt.layer(*layers).properties(width=WIDTH if facet_by is None else WIDTH // 2, height=280)
    return facet(layer, data, facet_by)


def phase_energy_chart(phases: pl.DataFrame, quantity: str = "energy_j") -> alt.FacetChart | alt.LayerChart:
    """Mean energy (or mean power) of each phase per configuration, with its interval."""
    frame = phases.filter((pl.col("quantity") == quantity) & pl.col("estimate").is_not_null())
    keys = group_columns(frame, {"part", "phase", "quantity"})
    facet_by = facet_column(frame.select(keys))
    frame = label_column(frame, [c for c in varying(frame, keys) if c != facet_by] or keys)
    frame = frame.select("config", "phase", *([facet_by] if facet_by else []), "estimate", "ci_low", "ci_high", "level", "n")
    title = {"energy_j": "energy above idle (J)", "mean_power_w": "mean power (W)"}.get(quantity, quantity)
    y = alt.Y("phase:N", title=None, sort=PHASE_ORDER + ["total"])
    colour = alt.Color("config:N", title="configuration")
    offset = alt.YOffset("config:N")
    rules = alt.Chart().mark_rule(strokeWidth=2).encode(x=alt.X("ci_low:Q", title=title), x2="ci_high:Q", y=y,
                                                        yOffset=offset, color=colour)
    dots = alt.Chart().mark_point(filled=True, size=40).encode(
        x="estimate:Q", y=y, yOffset=offset, color=colour, tooltip=interval_tooltip("config", "phase"))
    height = band_height(frame["phase"].n_unique() * max(frame["config"].n_unique(), 1))
    layer = alt.layer(rules, dots).properties(width=WIDTH if facet_by is None else WIDTH // 2, height=height)
    return facet(layer, frame, facet_by)


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


def correlation_chart(correlation: pl.DataFrame) -> alt.LayerChart:
    """Pearson and Spearman coefficients with their intervals, on the full [-1, 1] axis."""
    keys = [c for c in group_columns(correlation, {"part", "p_value"}) if c != "method"]
    return coefficient_chart(label_column(correlation, ["method", *varying(correlation, keys)]))


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
