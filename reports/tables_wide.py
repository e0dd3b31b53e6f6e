"""Paper tables (`analyze --tables`): wide, one row per configuration, one column per metric.

Each cell is "estimate [low, high]" in the unit its header names ("median latency (ms)"; memory in
MiB); a cell never holds a note: a row's note (why p99 has no interval), a column's method and
the verdict's explanation become numbered footnotes under the table, each distinct text once.
Columns with one value in every row are said once under the table ("for all rows: batch 1 ·
threads 2"), so the table keeps only what tells its rows apart. A `PaperTable` is the table in
words; tables_write.py prints it as LaTeX, Markdown or CSV (the CSV keeps the numbers: `data`).

An analysis frame is long (one row per configuration and metric, phase, quantity); it is pivoted
as the page's tables are (page_tables.pivot_column), and shown as it is when pivoting would not
shorten it. The summary's table keeps the metrics of the page's "At a glance" table
(PAPER_METRICS); its CSV has them all.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import polars as pl

from edgestats.formatting import is_missing
from edgestats.reports.headline import HEADLINE_METRICS
from edgestats.reports.page_tables import (
    NOTE_COLUMNS,
    PER_ROW_UNIT,
    PIVOT_UNITS,
    VALUE_COLUMNS,
    key_columns,
    pivot_column,
    pivot_names,
    split_constant,
)
from edgestats.reports.tables import confidence_level, interval_columns
from edgestats.reports.units import interval_parts, label_of, number_cell

# The summary's columns in a paper: those of the page's "At a glance" table (median latency, p99,
# throughput, peak memory, energy per inference), each with its interval here. The other metrics
# (p90, mean latency, mean memory, the typical run's tails) are in the CSV.
PAPER_METRICS = HEADLINE_METRICS


@dataclass(frozen=True)
class Cell:
    text: str  # the estimate, or the cell's text
    notes: tuple[int, ...] = ()  # footnote numbers, shown as superscripts after the text
    interval: str = ""  # "[11.9, 12.8]": LaTeX sets it under the estimate, Markdown beside it

    @property
    def full(self) -> str:
        return f"{self.text} {self.interval}" if self.interval else self.text


@dataclass
class Notes:
    """A table's footnotes: `ref(text)` numbers each distinct text once (1, 2, ...)."""

    texts: list[str] = field(default_factory=list)

    def ref(self, *texts: object) -> tuple[int, ...]:
        numbers = []
        for text in texts:
            if is_missing(text) or not str(text).strip():
                continue
            if str(text) not in self.texts:
                self.texts.append(str(text))
            numbers.append(self.texts.index(str(text)) + 1)
        return tuple(dict.fromkeys(numbers))


@dataclass
class PaperTable:
    key: str  # the file name: tables/<key>.tex
    caption: str
    columns: list[Cell]  # the header: labels with units
    right: list[bool]  # right-aligned (numbers)
    rows: list[list[Cell]]
    data: pl.DataFrame  # the numbers, one row per table row: the CSV
    lines: list[str] = field(default_factory=list)  # under the table: "for all rows: ...", the level
    notes: list[str] = field(default_factory=list)  # the footnotes, numbered from 1


def level_line(frame: pl.DataFrame) -> list[str]:
    level = confidence_level(frame)
    return [f"[low, high]: {level * 100:g} % confidence interval"] if level is not None else []


def common_line(common: list[str]) -> list[str]:
    return ["for all rows: " + " · ".join(common)] if common else []


def text_cell(value: object, name: str) -> Cell:
    return Cell(number_cell(value, name))


def interval_cell(
    estimate: object, low: object, high: object, name: str, notes: tuple[int, ...] = ()
) -> Cell:
    value, bracket = interval_parts(estimate, low, high, name)
    return Cell(value, notes, bracket)


def is_numeric(frame: pl.DataFrame, column: str) -> bool:
    return frame.schema[column].is_numeric() and frame.schema[column] != pl.Boolean


# -- wide: one row per configuration ------------------------------------------------------------


def _groups(frame: pl.DataFrame, index: list[str], by: str) -> dict[tuple, dict[str, dict]]:
    groups: dict[tuple, dict[str, dict]] = {}
    for row in frame.to_dicts():
        groups.setdefault(tuple(row[c] for c in index), {})[row[by]] = row
    return groups


def _runs(cells: dict[str, dict]) -> int | None:
    """A configuration's run count: the most any of its figures rests on."""
    counts = [r["n_runs"] for r in cells.values() if r.get("n_runs") is not None]
    return max(counts) if counts else None


def wide_data(frame: pl.DataFrame, index: list[str], by: str) -> pl.DataFrame:
    """The CSV of a wide table: the keys, then per value of `by` its estimate, bounds and note."""
    names = frame[by].unique(maintain_order=True).to_list()
    runs = "n_runs" in frame.columns
    columns: dict[str, list] = {c: [] for c in [*index, *(["n_runs"] if runs else [])]}
    for name in names:
        for suffix in ("", "_ci_low", "_ci_high", "_note"):
            columns[f"{name}{suffix}"] = []
    for keys, cells in _groups(frame, index, by).items():
        for column, value in zip(index, keys):
            columns[column].append(value)
        if runs:
            columns["n_runs"].append(_runs(cells))
        for name in names:
            row = cells.get(name, {})
            for suffix, source in (("", "estimate"), ("_ci_low", "ci_low"), ("_ci_high", "ci_high")):
                columns[f"{name}{suffix}"].append(row.get(source))
            columns[f"{name}_note"].append(next((row[c] for c in NOTE_COLUMNS if row.get(c)), None))
    data = pl.DataFrame(columns, strict=False)
    return data.drop([c for c in data.columns if c.endswith("_note") and data[c].null_count() == data.height])


def _column_notes(frame: pl.DataFrame, by: str, name: str, label: str, notes: Notes) -> tuple[int, ...]:
    """The method behind a column, as its header's footnote ("median latency (ms): run-level t ...")."""
    if "method" not in frame.columns:
        return ()
    methods = frame.filter(pl.col(by) == name)["method"].drop_nulls().unique(maintain_order=True)
    return notes.ref(*(f"{label}: {m}" for m in methods.to_list()))


def wide_paper_table(
    key: str, caption: str, frame: pl.DataFrame, by: str, only: tuple[str, ...] | None = None
) -> PaperTable:
    """One row per configuration, one column per value of `by` (those in `only`, when given)."""
    # n_runs belongs to the figures: a configuration is one row even where they rest on different runs
    index = key_columns(frame, VALUE_COLUMNS | {by, "n_runs"})
    groups = _groups(frame, index, by)
    names = [n for n in pivot_names(frame, by) if only is None or n in only]
    unit_name = {n: f"{n}_{PIVOT_UNITS[by]}" if by in PIVOT_UNITS else n for n in names}
    notes = Notes()
    absent = [n for n in names if all(is_missing(g.get(n, {}).get("estimate")) for g in groups.values())]
    names = [n for n in names if n not in absent]
    shown, common = split_constant(frame, index, len(groups))
    header = [Cell(label_of(c)) for c in shown]
    header += [
        Cell(label_of(unit_name[n]), _column_notes(frame, by, n, label_of(unit_name[n]), notes))
        for n in names
    ]
    runs = "n_runs" in frame.columns
    rows = []
    for key_values, cells in groups.items():
        named = dict(zip(index, key_values))
        row = [text_cell(named[c], c) for c in shown]
        for name in names:
            r = cells.get(name, {})
            note = notes.ref(*(r.get(c) for c in NOTE_COLUMNS))
            row.append(
                interval_cell(r.get("estimate"), r.get("ci_low"), r.get("ci_high"), unit_name[name], note)
            )
        rows.append(row + ([text_cell(_runs(cells), "n_runs")] if runs else []))
    lines = common_line(common) + level_line(frame)
    if absent:
        why = notes.ref(*(g.get(n, {}).get(c) for n in absent for g in groups.values() for c in NOTE_COLUMNS))
        said = f" (note{'s' if len(why) > 1 else ''} {', '.join(map(str, why))})" if why else ""
        lines.append(
            "no figure in any row, so no column: " + ", ".join(label_of(unit_name[n]) for n in absent) + said
        )
    return PaperTable(
        key,
        caption,
        header + ([Cell("runs")] if runs else []),
        [is_numeric(frame, c) for c in shown] + [True] * (len(names) + runs),
        rows,
        wide_data(frame, index, by),
        lines,
        notes.texts,
    )


# -- long: the frame as it is -------------------------------------------------------------------


def _long_cell(r: dict, column: str, pairs: dict[str, tuple[str, str]]) -> Cell:
    """A cell of a long table; an estimate takes its unit from the row's metric when it has one."""
    metric = r.get("metric")
    name = metric if column in PER_ROW_UNIT and isinstance(metric, str) else column
    if column in pairs:
        return interval_cell(r[column], r[pairs[column][0]], r[pairs[column][1]], name)
    if column == "metric" and isinstance(metric, str):
        return Cell(label_of(metric))
    return text_cell(r[column], name)


def long_paper_table(key: str, caption: str, frame: pl.DataFrame) -> PaperTable:
    """The frame's rows as they are: estimates with their intervals, units in the headers; notes,
    reasons and methods as footnotes, columns with one value said once."""
    pairs = interval_columns(frame.columns)
    hidden = {c for pair in pairs.values() for c in pair} | {"level", "n_unit", "method", *NOTE_COLUMNS}
    plain = key_columns(frame, hidden)
    candidates = [c for c in plain if c not in pairs and frame.schema[c] != pl.Float64]
    varying, common = split_constant(frame, candidates, frame.height)
    shown = [c for c in plain if c not in candidates or c in varying]
    notes = Notes()
    methods = frame["method"].drop_nulls().unique().to_list() if "method" in frame.columns else []
    rows = []
    for r in frame.to_dicts():
        row = [_long_cell(r, c, pairs) for c in shown]
        per_row = [r.get(c) for c in NOTE_COLUMNS] + ([f"method: {r['method']}"] if len(methods) > 1 else [])
        marks = notes.ref(*per_row)
        if marks and row:
            row[0] = Cell(row[0].text, row[0].notes + marks, row[0].interval)
        rows.append(row)
    unit = frame["n_unit"].drop_nulls().unique().to_list() if "n_unit" in frame.columns else []
    header = [Cell(f"n ({unit[0]})" if c == "n" and len(unit) == 1 else label_of(c)) for c in shown]
    lines = common_line(common) + level_line(frame) + ([f"method: {methods[0]}"] if len(methods) == 1 else [])
    data = frame.select([c for c in frame.columns if c in plain or c in hidden])
    right = [c in pairs or is_numeric(frame, c) for c in shown]
    return PaperTable(key, caption, header, right, rows, data, lines, notes.texts)


def paper_table(key: str, caption: str, frame: pl.DataFrame) -> PaperTable:
    """A frame as a paper table: pivoted wide when that shortens it, else as it is."""
    by = pivot_column(frame)
    return wide_paper_table(key, caption, frame, by) if by else long_paper_table(key, caption, frame)


def summary_paper_table(metrics: pl.DataFrame) -> PaperTable:
    """The summary: one row per configuration, a column per metric a paper reports; the CSV has
    every metric of the summary (mean latency, mean memory, the typical run's tails too)."""
    return wide_paper_table("summary", "Per configuration", metrics, "metric", PAPER_METRICS)
