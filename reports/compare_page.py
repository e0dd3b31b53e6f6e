"""The page of `edgestats compare --out DIR`: DIR/index.html and DIR/compare.json. The HTML draws
the ratios B/A with their intervals against the threshold band, with the table of every figure; the
JSON is the same document as `compare --format json`.

It reuses the report's page (page.render_page: offline, escaped, one self-contained file) with
one section; the header is the overview of the DB(s) compared, which the caller loaded (nothing
here opens a DB).
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import altair as alt
import polars as pl

from edgestats.analysis.compare.cautions import HEADLINE
from edgestats.analysis.compare.comparison import METRICS
from edgestats.analysis.compare.detect import HOPELESS_FACTOR, change_text
from edgestats.analysis.load.overview import Overview
from edgestats.formatting import counted, format_interval
from edgestats.reports.charts_common import (
    LABEL_LIMIT,
    WIDTH,
    band_height,
    cut_end_marks,
    label_column,
    varying,
)
from edgestats.reports.page import Figure, Section, render_page
from edgestats.reports.report import _write_atomic, prepare_out_dir

VERDICT_COLOURS = {
    "slower": "#d62728",
    "higher": "#d62728",
    "faster": "#2ca02c",
    "lower": "#2ca02c",
    "same": "#1f77b4",
    "inconclusive": "#7f7f7f",
}
# Verdicts beside which the minimum detectable effect is shown: what a "no" could have found.
UNSETTLED = ("same", "inconclusive")
# The table's columns, renamed for people: "ratio" keeps ci_low/ci_high beside it (tables.py).
TABLE_COLUMNS = {
    "quantity": "metric",
    "a_estimate": "A",
    "b_estimate": "B",
    "estimate": "ratio",
    "ci_low": "ci_low",
    "ci_high": "ci_high",
    "level": "level",
    "p_value": "p",
    "p_holm": "p (Holm)",
    "verdict": "verdict",
    "could_detect": "could detect (80% power)",
    "next_step": "next step",
    "n_a": "runs A",
    "n_b": "runs B",
    "note": "note",
}
BYTES_PER_MIB = 1048576.0
# How far (a factor, on the log axis) an interval may reach beyond a panel's estimates and band
# before it is cut at the edge, with an arrow: one interval of 1e-3 to 2e4 would otherwise squash
# every other mark of its panel into a few pixels.
REACH = 4.0
# What the ratio chart draws and its tooltips show.
CHART_COLUMNS = (
    "config",
    "quantity",
    "estimate",
    "ci_low",
    "ci_high",
    "shown_low",
    "shown_high",
    "beyond_low",
    "beyond_high",
    "p_holm",
    "verdict",
    "could_detect",
    "n_a",
    "n_b",
)


def merged_overview(overviews: list[Overview]) -> Overview:
    """One header for the DBs of both sides: their devices, runs and dates together. Each device
    row says its side, "pi5 (A)", "pi5 (B)": a before/after of one device would otherwise show
    two identical rows."""
    if len(overviews) == 1:
        return overviews[0]
    counts: dict[tuple[str, str], int] = {}
    sources: dict[str, int] = {}
    for o in overviews:
        for k, n in o.runs_by_kind_status.items():
            counts[k] = counts.get(k, 0) + n
        for k, n in o.sources.items():
            sources[k] = sources.get(k, 0) + n
    firsts = [o.first_started for o in overviews if o.first_started]
    lasts = [o.last_started for o in overviews if o.last_started]
    devices = [replace(d, name=f"{d.name} ({side})") for side, o in zip("AB", overviews) for d in o.devices]
    return Overview(
        " vs ".join(o.db_name for o in overviews),
        devices,
        counts,
        min(firsts) if firsts else None,
        max(lasts) if lasts else None,
        list(dict.fromkeys(p for o in overviews for p in o.power_sources)),
        sources,
    )


def chart_frame(comparison: Any) -> pl.DataFrame:
    """One row per configuration and metric with an estimate: label, metric title, interval."""
    frame = comparison.frame()
    if frame.height == 0:
        return frame
    frame = frame.filter(pl.col("estimate").is_not_null())
    frame = label_column(frame, varying(frame, comparison.key) or comparison.key)
    titles = {m: title for m, (title, *_) in METRICS.items()}
    frame = with_could_detect(frame).with_columns(
        pl.col("metric").replace_strict(titles, default=pl.col("metric")).alias("quantity")
    )
    return with_drawn_ends(frame, comparison.threshold)


def with_drawn_ends(frame: pl.DataFrame, threshold: float) -> pl.DataFrame:
    """Where each interval is drawn: shown_low/shown_high are its bounds, cut to the panel's
    reach (REACH times beyond the panel's estimates and the ±threshold band, on the log axis),
    and beyond_low/beyond_high say which end was cut (the chart draws an arrow there). Where a
    row has no interval, the shown bounds are its estimate (a zero-width rule) and nothing is cut."""
    low_edge = pl.min_horizontal(pl.col("estimate").min().over("quantity"), pl.lit(1 / (1 + threshold)))
    high_edge = pl.max_horizontal(pl.col("estimate").max().over("quantity"), pl.lit(1 + threshold))
    has = pl.col("ci_low").is_not_null() & pl.col("ci_high").is_not_null()
    return frame.with_columns(
        (has & (pl.col("ci_low") < low_edge / REACH)).alias("beyond_low"),
        (has & (pl.col("ci_high") > high_edge * REACH)).alias("beyond_high"),
        pl.when(has)
        .then(pl.max_horizontal(pl.col("ci_low"), low_edge / REACH))
        .otherwise(pl.col("estimate"))
        .alias("shown_low"),
        pl.when(has)
        .then(pl.min_horizontal(pl.col("ci_high"), high_edge * REACH))
        .otherwise(pl.col("estimate"))
        .alias("shown_high"),
    )


def with_could_detect(frame: pl.DataFrame) -> pl.DataFrame:
    """could_detect: the minimum detectable effect in words ("≥ 7.9%", "only a change ≥ 3.1×",
    "no change below 100×": detect.detect_text) where the verdict is same or inconclusive
    (beside faster or slower it answers no question), else null."""
    shown = pl.col("verdict").is_in(UNSETTLED) & pl.col("min_detectable_text").is_not_null()
    return frame.with_columns(
        pl.when(shown)
        .then(pl.col("min_detectable_text").cast(pl.Utf8).str.strip_prefix("could detect "))
        .otherwise(None)
        .alias("could_detect")
    )


def cut_end_tooltip(end: str) -> list[alt.Tooltip]:
    """The interval goes on to ci_{end}, beyond the edge its rule stops at."""
    return [
        alt.Tooltip("config:N"),
        alt.Tooltip(f"ci_{end}:Q", title=f"interval goes on to ({end} end)", format=".4~g"),
    ]


def ratio_chart(frame: pl.DataFrame, threshold: float) -> alt.FacetChart:
    """B/A per configuration on a log axis, one panel per metric: the band where a change counts
    as the same, 1 marked, each interval coloured by its verdict; an interval that reaches beyond
    the panel (with_drawn_ends) stops at its edge with an arrowhead, never silently cut."""
    band = pl.DataFrame({"low": [1 / (1 + threshold)], "high": [1 + threshold]})
    y = alt.Y("config:N", title=None, axis=alt.Axis(labelLimit=LABEL_LIMIT))
    scale = alt.Scale(type="log", nice=False)  # (zero is meaningless on a log scale: Vega warns)
    colour = alt.Color(
        "verdict:N", scale=alt.Scale(domain=list(VERDICT_COLOURS), range=list(VERDICT_COLOURS.values()))
    )
    shade = (
        alt.Chart(band)
        .mark_rect(opacity=0.15, color="#1f77b4")
        .encode(x=alt.X("low:Q", scale=scale), x2="high:Q")
    )
    one = alt.Chart().mark_rule(strokeDash=[4, 3], color="#888").encode(x=alt.datum(1))
    rules = (
        alt.Chart()
        .mark_rule(strokeWidth=2)
        .transform_filter("isValid(datum.ci_low) && isValid(datum.ci_high)")
        .encode(x=alt.X("shown_low:Q", scale=scale, title="ratio B/A"), x2="shown_high:Q", y=y, color=colour)
    )
    arrows = cut_end_marks("shown", "beyond", scale, y, cut_end_tooltip, colour=colour, size=90)
    dots = (
        alt.Chart()
        .mark_point(filled=True, size=50)
        .encode(
            x=alt.X("estimate:Q", scale=scale),
            y=y,
            color=colour,
            tooltip=[
                alt.Tooltip("config:N"),
                alt.Tooltip("quantity:N"),
                alt.Tooltip("estimate:Q", format=".4~g"),
                alt.Tooltip("ci_low:Q", format=".4~g"),
                alt.Tooltip("ci_high:Q", format=".4~g"),
                alt.Tooltip("p_holm:Q", format=".2g"),
                alt.Tooltip("verdict:N"),
                alt.Tooltip("could_detect:N", title="could detect (80% power)"),
                alt.Tooltip("n_a:Q"),
                alt.Tooltip("n_b:Q"),
            ],
        )
    )
    data = frame.select(CHART_COLUMNS)
    layer = alt.layer(shade, one, rules, *arrows, dots).properties(
        width=WIDTH, height=band_height(data["config"].n_unique())
    )
    return (
        alt.layer(layer, data=data)
        .facet(row=alt.Row("quantity:N", title=None))
        .resolve_scale(x="independent", y="independent")
    )


def sentence(comparison: Any) -> str:
    """What the chart shows, with the gate's figures."""
    t = comparison.threshold
    latency = [(c, x) for c, tests in comparison.matched for x in tests if x.metric == "latency_median_ms"]
    counts = {
        v: sum(1 for _, x in latency if x.verdict == v) for v in ("slower", "faster", "same", "inconclusive")
    }
    worst = max((x for _, x in latency if x.estimate is not None), key=lambda x: x.estimate, default=None)
    text = (
        f"B ({comparison.b.label}) against A ({comparison.a.label}) over "
        f"{counted(len(comparison.matched), 'matched configurations')}"
        f": median latency is slower in {counts['slower']}, faster in {counts['faster']}, the same "
        f"within ±{t:.0%} in {counts['same']} and inconclusive in {counts['inconclusive']}"
    )
    if worst is not None:
        text += f"; the largest ratio B/A is {format_interval(worst.estimate, worst.ci_low, worst.ci_high)}"
    text += detectable_clause([x for _, x in latency if x.verdict in UNSETTLED and x.min_detectable_text])
    overall = next((o for o in comparison.overall if o.metric == "latency_median_ms"), None)
    if overall is not None:
        text += (
            f"; overall, the geometric mean of B/A over {counted(overall.n_configurations, 'configurations')}"
            f" is {format_interval(overall.estimate, overall.ci_low, overall.ci_high)}"
        )
    return (
        text
        + f" ({comparison.level:.0%} intervals over runs, Welch t on log per-run figures, Holm-adjusted)."
    )


def detectable_clause(unsettled: list[Any]) -> str:
    """Where same or inconclusive: the range of the smallest slowdowns found with 80 % power, in
    words a reader can use (detect.change_text: "7.9%", "3.1×"), and how many verdicts
    could find no slowdown below 100× at all (2 noisy runs a side), with the runs that would settle
    them (their next step's runs_needed)."""
    found = sorted(x.min_detectable_pct for x in unsettled if change_text(x.min_detectable_pct))
    texts = list(dict.fromkeys(change_text(pct) for pct in found))
    clause = ""
    if texts:
        span = texts[0] if len(texts) == 1 else f"{texts[0]} to {texts[-1]}"
        clause = f"; where same or inconclusive, the smallest slowdown found with 80% power is {span}"
    hopeless = [x for x in unsettled if change_text(x.min_detectable_pct) is None]
    if not hopeless:
        return clause
    clause += f"; {counted(len(hopeless), 'verdicts')} could find no slowdown below {HOPELESS_FACTOR:g}×"
    steps = [x.next_step for x in hopeless if x.next_step and x.next_step["runs_needed"]]
    if steps:
        low, high = min(s["runs_needed"] for s in steps), max(s["runs_needed"] for s in steps)
        runs = f"{low:,}" if low == high else f"{low:,} to {high:,}"
        target = max(s["target_rel_half_width"] for s in steps)
        clause += f" at this spread (about {runs} runs a side would resolve ±{target * 100:g}%)"
    return clause


def overall_table(comparison: Any) -> pl.DataFrame:
    """The geometric mean of B/A across the matched configurations, one row per metric."""
    titles = {m: title for m, (title, *_) in METRICS.items()}
    return pl.DataFrame(
        [
            {
                "metric": titles.get(o.metric, o.metric),
                "ratio": o.estimate,
                "ci_low": o.ci_low,
                "ci_high": o.ci_high,
                "level": o.level,
                "configurations": o.n_configurations,
                "note": o.note,
            }
            for o in comparison.overall
        ],
        schema_overrides={"ci_low": pl.Float64, "ci_high": pl.Float64, "note": pl.Utf8},
    )


def warning_section(comparison: Any) -> Section:
    """The banner above the comparison: pyperf's "the result may be unstable", each cause (the
    sentence), what to do about each, and that the verdicts stand as they are (the notes)."""
    causes = " ".join(f"{w.message[:1].upper()}{w.message[1:]}." for w in comparison.warnings)
    return Section(
        "compare-warning",
        f"Warning: {HEADLINE}",
        causes,
        notes=[
            *[f"Next: {w.next_step}." for w in comparison.warnings],
            "The warning changes no verdict and not the exit status: it says how far to trust them.",
        ],
    )


def figures_table(comparison: Any) -> pl.DataFrame:
    """Every matched configuration and metric, with units in the metric's name (memory in MiB)."""
    full = comparison.frame()
    if full.height == 0:
        return full
    units = {m: f"{title} ({'MiB' if unit == 'bytes' else unit})" for m, (title, unit, *_) in METRICS.items()}
    mib = pl.col("metric") == "rss_peak_bytes"
    full = with_could_detect(full).with_columns(
        pl.col("metric").replace_strict(units, default=pl.col("metric")).alias("quantity"),
        *[
            pl.when(mib).then(pl.col(c) / BYTES_PER_MIB).otherwise(pl.col(c)).alias(c)
            for c in ("a_estimate", "b_estimate")
        ],
    )
    # a next step only beside an inconclusive verdict: no empty column where none is
    present = {
        c: name
        for c, name in TABLE_COLUMNS.items()
        if c in full.columns and (c != "next_step" or full[c].null_count() < full.height)
    }
    return full.select([*comparison.key, *present]).rename(present)


def compare_section(comparison: Any) -> Section:
    frame = chart_frame(comparison)
    figures = (
        [
            Figure(
                "ratios",
                "Ratio B/A with its interval; the shaded band is ±threshold; a triangle marks an interval "
                "that goes on beyond the panel",
                ratio_chart(frame, comparison.threshold).to_dict(),
            )
        ]
        if frame.height
        else []
    )
    table = figures_table(comparison)
    notes = [
        f"only in {u['side'].upper()} (not compared): "
        + ", ".join(f"{k}={v}" for k, v in u["config"].items())
        + f" ({u['n_runs']} runs)"
        for u in comparison.unmatched
    ]
    return Section(
        "compare",
        "Compare: B against A",
        sentence(comparison),
        figures,
        [
            ("Every matched configuration and metric", table),
            (
                "Overall: the geometric mean of B/A across the matched configurations",
                overall_table(comparison),
            ),
        ],
        notes + list(comparison.notes),
    )


def write_compare_page(out_dir: str | Path, comparison: Any, overviews: list[Overview]) -> tuple[Path, Path]:
    """Write DIR/index.html and DIR/compare.json; returns their paths."""
    out_dir = Path(out_dir)
    prepare_out_dir(out_dir)
    index, document = out_dir / "index.html", out_dir / "compare.json"
    sections = [warning_section(comparison)] if comparison.warnings else []
    _write_atomic(index, render_page(merged_overview(overviews), [*sections, compare_section(comparison)]))
    _write_atomic(document, json.dumps(comparison.to_json(), indent=2, allow_nan=False) + "\n")
    return index, document
