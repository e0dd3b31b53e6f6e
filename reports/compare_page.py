"""The page of `edgestats compare --out DIR`: DIR/index.html (the ratios B/A with their intervals,
drawn against the threshold band, and the table of every figure) and DIR/compare.json (the same
document as `compare --format json`).

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

from edgestats.analysis.compare import METRICS
from edgestats.analysis.load_overview import Overview
from edgestats.formatting import counted, format_interval, format_number
from edgestats.reports.charts_common import LABEL_LIMIT, WIDTH, band_height, label_column, varying
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
    "could_detect_pct": "could detect ≥ (%)",
    "n_a": "runs A",
    "n_b": "runs B",
    "note": "note",
}
BYTES_PER_MIB = 1048576.0
# What the ratio chart draws and its tooltips show.
CHART_COLUMNS = (
    "config",
    "quantity",
    "estimate",
    "ci_low",
    "ci_high",
    "p_holm",
    "verdict",
    "could_detect_pct",
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
    return with_could_detect(frame).with_columns(
        pl.col("metric").replace_strict(titles, default=pl.col("metric")).alias("quantity")
    )


def with_could_detect(frame: pl.DataFrame) -> pl.DataFrame:
    """could_detect_pct: the minimum detectable effect where the verdict is same or inconclusive
    (beside faster or slower it answers no question), else null."""
    shown = pl.col("verdict").is_in(UNSETTLED) & pl.col("min_detectable_pct").is_not_null()
    return frame.with_columns(
        pl.when(shown)
        .then(pl.col("min_detectable_pct"))
        .otherwise(None)
        .cast(pl.Float64)
        .alias("could_detect_pct")
    )


def ratio_chart(frame: pl.DataFrame, threshold: float) -> alt.FacetChart:
    """B/A per configuration on a log axis, one panel per metric: the band where a change counts
    as the same, 1 marked, each interval coloured by its verdict."""
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
        .encode(x=alt.X("ci_low:Q", scale=scale, title="ratio B/A"), x2="ci_high:Q", y=y, color=colour)
    )
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
                alt.Tooltip("could_detect_pct:Q", title="could detect ≥ (%)", format=".2~f"),
                alt.Tooltip("n_a:Q"),
                alt.Tooltip("n_b:Q"),
            ],
        )
    )
    data = frame.select(CHART_COLUMNS)
    layer = alt.layer(shade, one, rules, dots).properties(
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
    detectable = [x.min_detectable_pct for _, x in latency if x.verdict in UNSETTLED and x.min_detectable_pct]
    if detectable:
        low, high = min(detectable), max(detectable)
        low_text, high_text = format_number(low), format_number(high)
        span = f"{low_text}%" if low_text == high_text else f"{low_text}% to {high_text}%"
        text += f"; where same or inconclusive, the smallest slowdown found with 80% power is {span}"
    return (
        text
        + f" ({comparison.level:.0%} intervals over runs, Welch t on log per-run figures, Holm-adjusted)."
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
    present = {c: name for c, name in TABLE_COLUMNS.items() if c in full.columns}
    return full.select([*comparison.key, *present]).rename(present)


def compare_section(comparison: Any) -> Section:
    frame = chart_frame(comparison)
    figures = (
        [
            Figure(
                "ratios",
                "Ratio B/A with its interval; the shaded band is ±threshold",
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
        [("Every matched configuration and metric", table)],
        notes + list(comparison.notes),
    )


def write_compare_page(out_dir: str | Path, comparison: Any, overviews: list[Overview]) -> tuple[Path, Path]:
    """Write DIR/index.html and DIR/compare.json; returns their paths."""
    out_dir = Path(out_dir)
    prepare_out_dir(out_dir)
    index, document = out_dir / "index.html", out_dir / "compare.json"
    _write_atomic(index, render_page(merged_overview(overviews), [compare_section(comparison)]))
    _write_atomic(document, json.dumps(comparison.to_json(), indent=2, allow_nan=False) + "\n")
    return index, document
