"""The table at the top of the page: one row per configuration, the figures a reader wants first.

median latency [interval], p99, throughput, peak memory (MiB), energy per inference (J), and what
they rest on (runs × latencies per run), and where the median's interval is wider than ±25 % or
rests on fewer than 3 runs, a "next step" cell: how many runs would make it ±5 % (summary's
`next_step`, edgestats.analysis.estimators.hierarchical.next_step). Built from the summary analysis'
`metrics` and `distribution` frames and its entries; configurations with collected latencies come
first, each block fastest first. A figure that is missing says why in a footnote.
"""

from __future__ import annotations

from typing import Any

import polars as pl

from edgestats.formatting import MISSING
from edgestats.reports.page_tables import (
    VALUE_COLUMNS,
    Cell,
    Footnotes,
    PageTable,
    esc,
    filter_values,
    key_columns,
    split_constant,
    text_cell,
    value_cell,
)
from edgestats.reports.tables import confidence_level, to_csv
from edgestats.reports.units import label_of

HEADLINE_METRICS = (
    "latency_median_ms",
    "latency_p99_ms",
    "throughput_per_s",
    "rss_peak_bytes",
    "energy_per_inference_j",
)
WITH_INTERVAL = {"latency_median_ms"}  # the others as estimates: the long table has their intervals
NEXT_STEP_COLUMN = "next step"
NEXT_STEP_NOTE = (
    "The median's interval is wider than ±25 % or rests on fewer than 3 runs: about this many runs "
    "would make it ±5 % at the measured between-run spread (at least 3). "
    "Collect them with: edgestats collect --until-precise 5%"
)


def runs_cell(dist: dict[str, Any] | None, n_runs: object, notes: Footnotes) -> Cell:
    """ "3 × 30": runs × latencies per run; an imported run has no single latencies."""
    runs = (dist or {}).get("n_runs", n_runs)
    if dist is None or runs is None:
        return Cell(f"{runs if runs is not None else MISSING}", runs)
    if dist.get("n_unit") != "latencies":
        return Cell(f"{runs:,} × {MISSING}{notes.ref(dist.get('note'))}", runs)
    n = dist.get("n") or 0
    per_run = f"{n // runs:,}" if runs and n % runs == 0 else f"{n / runs:,.0f} (mean)"
    return Cell(f"{runs:,} × {per_run}", runs)


def next_steps(summary: Any, keys: list[str]) -> dict[tuple, dict]:
    """{configuration's key values: the median's `next_step`} of summary's entries that have one."""
    steps = {}
    for entry in getattr(summary, "entries", None) or []:
        median = next((m for m in entry.get("metrics", []) if m["metric"] == "latency_median_ms"), {})
        if median.get("next_step"):
            steps[tuple(entry["group"].get(c) for c in keys)] = median["next_step"]
    return steps


def next_step_cell(step: dict | None, notes: Footnotes) -> Cell:
    """ "12 runs for ±5 %", its full reason as the cell's title, the shared footnote; empty without one."""
    if step is None:
        return Cell("", None)
    runs = step["runs_needed"]
    if runs is not None:
        short = f"{runs:,} runs for ±{step['target_rel_half_width'] * 100:g} %"
    elif step["n_runs"] < 2:
        short = "3 runs or more"
    else:
        short = "too many runs: find the noise"
    return Cell(f'<span title="{esc(step["text"])}">{esc(short)}</span>{notes.ref(NEXT_STEP_NOTE)}', runs)


def headline_frame(metrics: pl.DataFrame) -> pl.DataFrame:
    """One row per configuration: each headline metric's estimate and bounds, as numbers (the CSV)."""
    keys = key_columns(metrics, VALUE_COLUMNS | {"metric"})
    wide = metrics.select(keys).unique(maintain_order=True)
    for name in HEADLINE_METRICS:
        part = metrics.filter(pl.col("metric") == name).select(
            *keys,
            pl.col("estimate").alias(name),
            pl.col("ci_low").alias(f"{name}_ci_low"),
            pl.col("ci_high").alias(f"{name}_ci_high"),
            pl.col("note").alias(f"{name}_note"),
        )
        wide = wide.join(part, on=keys, how="left", nulls_equal=True)
    return wide


def _order(wide: pl.DataFrame, dist: dict[tuple, dict], keys: list[str]) -> pl.DataFrame:
    collected = [
        dist.get(tuple(r[c] for c in keys), {}).get("n_unit") == "latencies"
        for r in wide.iter_rows(named=True)
    ]
    return (
        wide.with_columns(pl.Series("_collected", collected))
        .sort(["_collected", "latency_median_ms"], descending=[True, False], nulls_last=True)
        .drop("_collected")
    )


def headline_table(summary: Any, notes: Footnotes) -> PageTable | None:
    """The headline PageTable of a summary result; None when it has no metrics."""
    frames = getattr(summary, "frames", {}) or {}
    metrics = frames.get("metrics")
    if metrics is None or metrics.height == 0 or "metric" not in metrics.columns:
        return None
    keys = key_columns(metrics, VALUE_COLUMNS | {"metric", "n_runs"})
    distribution = frames.get("distribution")
    dist = {tuple(r[c] for c in keys): r for r in distribution.to_dicts()} if distribution is not None else {}
    wide = _order(headline_frame(metrics), dist, keys)
    shown, common = split_constant(wide, keys, wide.height)
    present = [n for n in HEADLINE_METRICS if wide[n].null_count() < wide.height]
    steps = next_steps(summary, keys)
    rows, filters = [], []
    for r in wide.iter_rows(named=True):
        filters.append(filter_values(r))
        row = [text_cell(r[c], c) for c in shown]
        for name in present:
            low, high = (r[f"{name}_ci_low"], r[f"{name}_ci_high"]) if name in WITH_INTERVAL else (None, None)
            explain = r[name] is None or (name in WITH_INTERVAL and low is None)
            row.append(value_cell(r[name], low, high, name, notes.ref(r[f"{name}_note"]) if explain else ""))
        row.append(runs_cell(dist.get(tuple(r[c] for c in keys)), r.get("n_runs"), notes))
        if steps:
            row.append(next_step_cell(steps.get(tuple(r[c] for c in keys)), notes))
        rows.append(row)
    columns = [label_of(c) for c in shown] + [label_of(n) for n in present] + ["runs × latencies"]
    columns += [NEXT_STEP_COLUMN] if steps else []
    numeric = [wide.schema[c].is_numeric() for c in shown] + [True] * (len(columns) - len(shown))
    csv = to_csv(wide.drop([c for c in wide.columns if c.endswith("_note")]))
    table = PageTable(
        "headline",
        "Per configuration",
        columns,
        numeric,
        rows,
        csv,
        common,
        confidence_level(metrics),
        f"{len(rows):,} configurations",
    )
    table.absent = [
        label_of(n) + "".join(dict.fromkeys(notes.ref(x) for x in wide[f"{n}_note"].to_list()))
        for n in HEADLINE_METRICS
        if n not in present
    ]
    table.filters = filters
    return table
