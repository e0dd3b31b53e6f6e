"""The page's tables: wide, with units, intervals inline, notes as footnotes, and a CSV of each.

An analysis frame is long: one row per configuration *and* metric (or phase, quantity, ratio).
On the page it is pivoted wide: one row per configuration, a column per metric, each cell the
estimate with its interval ("12.3 [11.9, 12.8]", the bracket on a line of its own when the column
is narrow). A frame that does not shrink by pivoting is shown as it is. Columns that hold one
value in every row move to a line under the table ("for all rows: batch 1 · threads 2"). A note
becomes a numbered footnote (`Footnotes`), each distinct note once on the page. Every table
carries its frame as CSV in a data: URL, so "Download CSV" works offline.
"""

from __future__ import annotations

import html
import urllib.parse
from dataclasses import dataclass, field

import polars as pl

from edgestats.formatting import MISSING, is_missing
from edgestats.reports.tables import confidence_level, interval_columns, to_csv
from edgestats.reports.units import interval_parts, label_of, number_cell

# Columns that describe a figure, never which configuration a row is.
VALUE_COLUMNS = {
    "estimate",
    "ci_low",
    "ci_high",
    "level",
    "n",
    "n_unit",
    "method",
    "note",
    "reason",
    "share_of_total",
    "load_exceeds_steady",
    "confident",
}
LONG_TEXT = 16  # characters: longer text may break anywhere, shorter text only between words
PIVOT_BY = ("metric", "quantity", "phase", "ratio")
PIVOT_UNITS = {"phase": "s"}  # a phase's estimate is seconds, its name says no unit
NOTE_COLUMNS = ("note", "reason")
METRIC_ORDER = (
    "latency_median_ms",
    "latency_p90_ms",
    "latency_p90_typical_run_ms",
    "latency_p99_ms",
    "latency_p99_typical_run_ms",
    "latency_mean_ms",
    "throughput_per_s",
    "rss_peak_bytes",
    "rss_mean_bytes",
    "energy_per_inference_j",
    "import",
    "load_model",
    "compile",
    "load_first_input",
    "first_inference",
    "steady",
    "other",
)
# Columns whose unit is that of the row's metric (tradeoff winners: "rss_peak_bytes" is in MiB).
PER_ROW_UNIT = ("estimate", "runner_up_estimate")


def esc(value: object) -> str:
    return html.escape("" if value is None else str(value), quote=True)


class Footnotes:
    """Numbered notes of a page: `ref(note)` gives the marker of a cell, `html()` the list."""

    def __init__(self) -> None:
        self.numbers: dict[str, int] = {}

    def ref(self, note: object) -> str:
        if is_missing(note) or not str(note).strip():
            return ""
        number = self.numbers.setdefault(str(note), len(self.numbers) + 1)
        return f'<sup class=fn><a href="#note-{number}" title="{esc(note)}">{number}</a></sup>'

    def html(self) -> str:
        if not self.numbers:
            return ""
        items = "".join(f'<li id="note-{n}">{esc(note)}</li>' for note, n in self.numbers.items())
        return f'<section id="notes"><h2>Notes</h2><ol class=notes>{items}</ol></section>'


@dataclass
class Cell:
    html: str
    sort: float | str | None = None


@dataclass
class PageTable:
    key: str
    caption: str
    columns: list[str]
    numeric: list[bool]
    rows: list[list[Cell]]
    csv: str
    common: list[str] = field(default_factory=list)  # "batch 1": columns with one value in every row
    level: float | None = None
    shape: str = ""
    absent: list[str] = field(default_factory=list)  # html: columns left out because no row has a figure
    filters: list[dict[str, str]] = field(
        default_factory=list
    )  # per row: its FILTER_KEYS values (page filter)


# What the page's filter bar selects on: a row carries its values as data-f-* attributes, a chart
# its data rows' fields of these names.
FILTER_KEYS = ("device", "framework", "runtime", "model")


def filter_values(record: dict) -> dict[str, str]:
    """The row's filter fields it has a column for; an unknown value is "" (the row is about that
    field but cannot match a choice), a column it lacks is left out (the row stays under any)."""
    return {k: "" if record[k] is None else str(record[k]) for k in FILTER_KEYS if k in record}


def value_cell(estimate: object, low: object, high: object, name: str, marker: str = "") -> Cell:
    value, bracket = interval_parts(estimate, low, high, name)
    inner = f"<span class=v>{esc(value)}</span>"
    if bracket:
        inner += f" <span class=ci>{esc(bracket)}</span>"
    sort = None if is_missing(estimate) else float(estimate)
    return Cell(inner + marker, sort)


def text_cell(value: object, name: str) -> Cell:
    text = number_cell(value, name)
    sort = (
        float(value)
        if isinstance(value, (int, float)) and not is_missing(value) and not isinstance(value, bool)
        else text
    )
    return Cell(esc(text) if len(text) < LONG_TEXT else f"<span class=long>{esc(text)}</span>", sort)


def key_columns(frame: pl.DataFrame, exclude: set[str]) -> list[str]:
    """The columns that name a row: plain, not a figure, not wholly null."""
    return [
        c
        for c, t in frame.schema.items()
        if c not in exclude
        and not isinstance(t, (pl.List, pl.Array, pl.Struct, pl.Object))
        and frame[c].null_count() < frame.height
    ]


def split_constant(frame: pl.DataFrame, columns: list[str], n_rows: int) -> tuple[list[str], list[str]]:
    """(columns that vary, "label value" of those with one value): only when there are rows to compare."""
    if n_rows < 2:
        return columns, []
    constant = [c for c in columns if frame[c].n_unique() == 1]
    common = [f"{label_of(c)} {number_cell(frame[c][0], c)}" for c in constant]
    return [c for c in columns if c not in constant], common


def pivot_column(frame: pl.DataFrame) -> str | None:
    by = next((c for c in PIVOT_BY if c in frame.columns and frame.schema[c] == pl.String), None)
    if by is None or "estimate" not in frame.columns:
        return None
    index = key_columns(frame, VALUE_COLUMNS | {by})
    groups = frame.select(index).unique().height if index else 1
    if frame.height < 2 * groups or frame.select([*index, by]).unique().height != frame.height:
        return None  # pivoting would not shorten it, or a configuration has a metric twice
    return by


# Figures a wide table leaves to its CSV link (and analysis.json): the typical run's tails answer a
# narrower question than the configuration's across processes, and two more columns push the summary
# past a laptop screen's width.
IN_CSV_ONLY = ("latency_p90_typical_run_ms", "latency_p99_typical_run_ms")


def pivot_names(frame: pl.DataFrame, by: str) -> list[str]:
    names = [n for n in frame[by].unique(maintain_order=True).to_list() if n not in IN_CSV_ONLY]
    return sorted(names, key=lambda n: METRIC_ORDER.index(n) if n in METRIC_ORDER else len(METRIC_ORDER))


def n_text(rows: list[dict]) -> Cell:
    best = max(rows, key=lambda r: r.get("n") or 0)
    n = best.get("n")
    text = esc(f"{n:,} {best.get('n_unit') or ''}".strip()) if n is not None else MISSING
    return Cell(f"<span class=v>{text}</span>", n)


def absent_columns(
    groups: dict[tuple, dict[str, dict]], names: list[str], notes: Footnotes
) -> dict[str, str]:
    """Pivot values with no estimate in any row -> the footnote markers of why (they get no column)."""
    absent = {}
    for name in names:
        cells = [g[name] for g in groups.values() if name in g]
        if all(is_missing(c.get("estimate")) for c in cells):
            absent[name] = "".join(dict.fromkeys(notes.ref(c.get("note")) for c in cells))
    return absent


def wide_table(key: str, caption: str, frame: pl.DataFrame, by: str, notes: Footnotes) -> PageTable:
    """One row per configuration, a column per value of `by`, each cell an estimate [interval]."""
    index = key_columns(frame, VALUE_COLUMNS | {by})
    groups: dict[tuple, dict[str, dict]] = {}
    for row in frame.to_dicts():
        groups.setdefault(tuple(row[c] for c in index), {})[row[by]] = row
    unit_name = {n: (f"{n}_{PIVOT_UNITS[by]}" if by in PIVOT_UNITS else n) for n in pivot_names(frame, by)}
    absent = absent_columns(groups, list(unit_name), notes)
    names = [n for n in unit_name if n not in absent]
    shown, common = split_constant(frame, index, len(groups))
    with_n = "n" in frame.columns and "n_runs" not in index
    rows, filters = [], []
    for keys, cells in groups.items():
        named = dict(zip(index, keys))
        filters.append(filter_values(named))
        row = [text_cell(named[c], c) for c in shown]
        for name in names:
            r = cells.get(name)
            row.append(
                value_cell(
                    r["estimate"],
                    r.get("ci_low"),
                    r.get("ci_high"),
                    unit_name[name],
                    notes.ref(r.get("note")),
                )
                if r
                else Cell(MISSING)
            )
        rows.append(row + ([n_text(list(cells.values()))] if with_n else []))
    columns = (
        [label_of(c) for c in shown] + [label_of(unit_name[n]) for n in names] + (["n"] if with_n else [])
    )
    numeric = [frame.schema[c].is_numeric() for c in shown] + [True] * (len(columns) - len(shown))
    table = PageTable(
        key,
        caption,
        columns,
        numeric,
        rows,
        to_csv(frame),
        common,
        confidence_level(frame),
        f"{len(rows):,} rows × {len(names)} {by}s, from {frame.height:,} figures",
    )
    table.absent = [f"{esc(label_of(unit_name[n]))}{marks}" for n, marks in absent.items()]
    table.filters = filters
    return table


def long_table(key: str, caption: str, frame: pl.DataFrame, notes: Footnotes) -> PageTable:
    """The frame as it is: estimates with their intervals, units in the headers, notes as footnotes."""
    pairs = interval_columns(frame.columns)
    bounds = {c for pair in pairs.values() for c in pair} | {"level", "n_unit"} | set(NOTE_COLUMNS)
    plain = key_columns(frame, bounds)
    candidates = [c for c in plain if c not in pairs and frame.schema[c] != pl.Float64]
    varying, common = split_constant(frame, candidates, frame.height)
    shown = [c for c in plain if c not in candidates or c in varying]
    unit = frame["n_unit"].drop_nulls().unique().to_list() if "n_unit" in frame.columns else []
    rows = []
    for r in frame.to_dicts():
        row = [long_cell(r, c, pairs) for c in shown]
        marks = "".join(notes.ref(r.get(c)) for c in NOTE_COLUMNS if c in frame.columns)
        if marks and row:
            row[0] = Cell(row[0].html + marks, row[0].sort)
        rows.append(row)
    columns = [f"n ({unit[0]})" if c == "n" and len(unit) == 1 else label_of(c) for c in shown]
    numeric = [c in pairs or frame.schema[c].is_numeric() for c in shown]
    return PageTable(
        key,
        caption,
        columns,
        numeric,
        rows,
        to_csv(frame),
        common,
        confidence_level(frame),
        f"{len(rows):,} rows",
        filters=[filter_values(r) for r in frame.to_dicts()],
    )


def long_cell(r: dict, column: str, pairs: dict[str, tuple[str, str]]) -> Cell:
    """A cell of a long table; an estimate takes its unit from the row's metric when it has one."""
    metric = r.get("metric")
    name = metric if column in PER_ROW_UNIT and isinstance(metric, str) else column
    if column in pairs:
        return value_cell(r[column], r[pairs[column][0]], r[pairs[column][1]], name)
    if column == "metric" and isinstance(metric, str):
        return Cell(esc(label_of(metric)), metric)
    return text_cell(r[column], name)


def page_table(key: str, caption: str, frame: pl.DataFrame, notes: Footnotes) -> PageTable:
    by = pivot_column(frame)
    return wide_table(key, caption, frame, by, notes) if by else long_table(key, caption, frame, notes)


def csv_link(table: PageTable) -> str:
    href = "data:text/csv;charset=utf-8," + urllib.parse.quote(table.csv, safe="")
    return f'<a class=csv download="{esc(table.key)}.csv" href="{href}">CSV</a>'


def table_markup(table: PageTable, max_rows: int) -> str:
    head = "".join(
        f"<th{' class=num' if num else ''} scope=col>{esc(c)}</th>"
        for c, num in zip(table.columns, table.numeric)
    )
    keys = table.filters or [{}] * len(table.rows)
    body = "".join(
        f"<tr{filter_attrs(k)}>"
        + "".join(
            f"<td{' class=num' if num else ''}{sort_attr(cell)}>{cell.html}</td>"
            for cell, num in zip(row, table.numeric)
        )
        + "</tr>"
        for row, k in zip(table.rows[:max_rows], keys)
    )
    foot = []
    if table.common:
        foot.append("for all rows: " + " · ".join(esc(c) for c in table.common))
    if table.absent:
        foot.append("no figure in any row, so no column: " + ", ".join(table.absent))
    if table.level is not None:
        foot.append(f"[…]: {table.level * 100:g} % confidence interval")
    if len(table.rows) > max_rows:
        foot.append(f"first {max_rows} of {len(table.rows):,} rows shown; the CSV has them all")
    foot_html = f"<p class=tablefoot>{'; '.join(foot)}.</p>" if foot else ""
    return (
        f'<div class=table-wrap><table class=sortable id="table-{esc(table.key)}">'
        f"<thead><tr>{head}</tr></thead>"
        f"<tbody>{body}</tbody></table></div>{foot_html}"
    )


def filter_attrs(values: dict[str, str]) -> str:
    return "".join(f' data-f-{k}="{esc(v)}"' for k, v in values.items())


def sort_attr(cell: Cell) -> str:
    return "" if cell.sort is None else f' data-sort="{esc(cell.sort)}"'


def collapsed_html(table: PageTable, max_rows: int) -> str:
    """A table folded under its caption, its size and its CSV: open it to read it."""
    return (
        f"<details class=table><summary><span class=cap>{esc(table.caption)}</span> "
        f"<span class=shape>{esc(table.shape)}</span> {csv_link(table)}</summary>"
        f"{table_markup(table, max_rows)}</details>"
    )
