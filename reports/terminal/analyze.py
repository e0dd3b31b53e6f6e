"""The terminal output of `edgestats analyze`. The answers first, one sentence per group wrapped at
word boundaries, then each other result frame as a table that fits the width.

Rich wraps a cell at its spaces, but a table whose columns cannot all hold their longest word
gets words cut in the middle ("FogNo│de"). So columns are left out, least needed first, until
every column holds its longest word, and a line says which and how to see them (--json, a wider
terminal). Rows of the devices collected on (not imported) come first, so a user's own runs are
not cut off by --limit behind published tables. Numbers use the report's formatter. After the
tables, or the JSON, the lines saying where `--out` wrote the report (report_lines).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from edgestats.formatting import format_interval, format_number

DEFAULT_LIMIT = 40  # rows per table; --limit N, --all; --json has everything
PIPED_WIDTH = 200  # piped without COLUMNS: whole rows in logs, wrapped by no one
# Kept longest when the width is short, most needed first: the figure and what a row is. Other
# columns go first, right to left; then these, from the end of this list.
KEY_COLUMNS = ("estimate [ci]", "metric", "model", "framework", "device", "note", "runtime")


@dataclass
class TextOptions:
    limit: int | None = DEFAULT_LIMIT  # None: every row
    collected_devices: frozenset[str] = frozenset()


def console_for_output():
    """A console as wide as the terminal, or COLUMNS; piped without COLUMNS, PIPED_WIDTH."""
    from rich.console import Console

    console = Console()
    if not console.is_terminal and "COLUMNS" not in os.environ:
        console = Console(width=max(console.width, PIPED_WIDTH))
    return console


def cell_text(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return format_number(value)
    if isinstance(value, dict):
        return ", ".join(f"{k}={cell_text(v)}" for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return ", ".join(cell_text(v) for v in value)
    return str(value)


def readable(frame):
    """A frame as the terminal shows it: estimate and interval in one column, columns that hold
    nothing dropped, each distinct note replaced by a footnote number. Returns (frame, notes)."""
    import polars as pl

    frame = bytes_as_mib(frame)
    if {"estimate", "ci_low", "ci_high"} <= set(frame.columns):
        shown = [
            format_interval(e, lo, hi)
            for e, lo, hi in frame.select("estimate", "ci_low", "ci_high").iter_rows()
        ]
        frame = frame.with_columns(pl.Series("estimate [ci]", shown, dtype=pl.String))
        frame = frame.drop("estimate", "ci_low", "ci_high", "level", "method", strict=False)
    frame = frame.select([c for c in frame.columns if frame[c].null_count() < frame.height])
    notes: list[str] = []
    if "note" in frame.columns:
        notes = [n for n in dict.fromkeys(frame["note"].to_list()) if n]
        marks = [f"[{notes.index(n) + 1}]" if n else "" for n in frame["note"].to_list()]
        frame = frame.drop("note").with_columns(pl.Series("note", marks, dtype=pl.String))
    return frame, notes


def bytes_as_mib(frame):
    """Memory in MiB, as the report's charts and tables show it: a `*_bytes` metric's figures
    divided by 2^20 and the metric renamed `*_mib`, and `*_bytes` columns likewise."""
    import polars as pl

    mib = 1024.0 * 1024.0
    if "metric" in frame.columns and {"estimate", "ci_low", "ci_high"} <= set(frame.columns):
        is_bytes = pl.col("metric").cast(pl.String).str.ends_with("_bytes").fill_null(False)
        frame = frame.with_columns(
            *(
                pl.when(is_bytes).then(pl.col(c) / mib).otherwise(pl.col(c)).alias(c)
                for c in ("estimate", "ci_low", "ci_high")
            ),
            pl.when(is_bytes)
            .then(pl.col("metric").cast(pl.String).str.replace(r"_bytes$", "_mib"))
            .otherwise(pl.col("metric").cast(pl.String))
            .alias("metric"),
        )
    byte_columns = [c for c in frame.columns if c.endswith("_bytes") and frame[c].dtype.is_numeric()]
    return frame.with_columns(
        *((pl.col(c) / mib).alias(c.removesuffix("_bytes") + "_mib") for c in byte_columns)
    ).drop(byte_columns)


def collected_first(frame, collected_devices: frozenset[str]):
    """Rows of devices with collected runs first, the order otherwise kept (a stable sort)."""
    import polars as pl

    if not collected_devices or "device" not in frame.columns:
        return frame
    imported = ~pl.col("device").cast(pl.String).is_in(list(collected_devices))
    return frame.with_row_index("_order").sort([imported.fill_null(True), pl.col("_order")]).drop("_order")


def longest_word(texts: list[str]) -> int:
    return max((len(word) for text in texts for word in text.split()), default=0)


def drop_order(header: list[str], labels: set[str]) -> list[int]:
    """The order columns are left out in when the width is short. Counts (n, n_runs) first; then,
    in a table with an estimate column, the other figures, then runtime; in a table of figures
    (quantiles), runtime before the figures, medians last; then the labels that say what a row
    is, right to left. Never the estimate, the metric or the note marks."""
    right_to_left = list(reversed(range(len(header))))
    counts = [
        i
        for i in right_to_left
        if header[i] not in labels and (header[i] == "n" or header[i].startswith("n_"))
    ]
    figures = [
        i
        for i in right_to_left
        if header[i] not in labels and i not in counts and header[i] != "estimate [ci]"
    ]
    figures.sort(key=lambda i: "median" in header[i])  # stable: right to left, medians last
    minor = [i for i, h in enumerate(header) if h == "runtime"]
    kept = ("estimate [ci]", "metric", "note")  # note: its marks are what the footnotes below refer to
    rest = [i for i in right_to_left if header[i] in labels and i not in minor and header[i] not in kept]
    if "estimate [ci]" in header:
        return counts + figures + minor + rest
    return counts + minor + figures + rest


def fit_columns(
    header: list[str], rows: list[list[str]], width: int, labels: set[str]
) -> tuple[list[int], bool]:
    """Indices of the columns to show, and whether the estimate column stays on one line: all
    columns that fit, each at least as wide as its longest word (rich's minimum), leaving out
    columns in drop_order. The interval is kept whole if that costs no label but runtime; else
    it wraps at its spaces."""
    words = [max(longest_word([h]), longest_word([r[i] for r in rows]), 1) + 3 for i, h in enumerate(header)]
    whole = [
        max([len(h)] + [len(r[i]) for r in rows]) + 3 if h == "estimate [ci]" else words[i]
        for i, h in enumerate(header)
    ]
    order = drop_order(header, labels)
    shown: list[int] = []
    for need, one_line in ((whole, True), (words, False)):
        shown = list(range(len(header)))
        for i in order:
            if sum(need[j] for j in shown) + 1 <= width or len(shown) <= 2:
                break
            if one_line and header[i] in labels and header[i] != "runtime":
                break
            shown.remove(i)
        if sum(need[j] for j in shown) + 1 <= width:
            return shown, one_line
    return shown, False


def constants_in_title(title: str, header: list[str], rows: list[list[str]]):
    """A column with one value in every row shown goes into the title (", device vm"): room
    for the others. Returns (title, header, rows) without those columns."""
    same = [
        i
        for i, h in enumerate(header)
        if len(rows) > 1 and h not in ("estimate [ci]", "metric", "note") and len({r[i] for r in rows}) == 1
    ]
    if not same:
        return title, header, rows
    title += " — " + ", ".join(f"{header[i]} {rows[0][i]}" for i in same if rows[0][i])
    return (
        title,
        [h for i, h in enumerate(header) if i not in same],
        [[c for i, c in enumerate(r) if i not in same] for r in rows],
    )


def print_footnotes(console, notes: list[str]) -> None:
    """[k] note, as a grid: a note that wraps keeps its indent under its text, not under [k]."""
    from rich.table import Table
    from rich.text import Text

    if not notes:
        return
    footnotes = Table.grid(padding=(0, 1))
    footnotes.add_column(justify="right", no_wrap=True)
    footnotes.add_column()
    for k, note in enumerate(notes, start=1):
        footnotes.add_row(Text(f"  [{k}]"), Text(note))
    console.print(footnotes)


def print_frame(console, title: str, frame, options: TextOptions) -> None:
    """One table, fitted to the console's width, with its footnotes and what it left out."""
    import polars as pl
    from rich.padding import Padding
    from rich.table import Table
    from rich.text import Text

    frame = collected_first(frame, options.collected_devices)
    total = frame.height
    if options.limit is not None:
        frame = frame.head(options.limit)
    frame, notes = readable(frame)  # after the limit: footnotes for the rows shown only
    header = list(frame.columns)
    from edgestats.analysis.load.frames import CONFIG_COLUMNS  # here: the CLI imports this module at start

    # what a row is: its text columns and the configuration's axes, numbers included (threads,
    # prompt_tokens): left out last at a narrow width, or rows would read as duplicates
    labels = {c for c in header if frame[c].dtype in (pl.String, pl.Categorical) or c in CONFIG_COLUMNS}
    rows = [[cell_text(v) for v in row] for row in frame.iter_rows()]
    title, header, rows = constants_in_title(title, header, rows)
    shown, interval_whole = fit_columns(header, rows, console.width, labels)
    console.print(Text(title, style="bold"))  # the console's width, not the table's
    table = Table()
    for i in shown:  # Text: DB strings and "[low, high]" are never read as markup
        cells = [row[i] for row in rows]
        # rich squeezes the widest wrapable column first, below its longest word if it must:
        # a column of single words is kept whole (no_wrap); fit_columns made room for it
        estimate = header[i] == "estimate [ci]"
        table.add_column(
            Text(header[i]),
            justify="right" if estimate or header[i] not in labels else "left",
            min_width=longest_word(cells + [header[i]]),
            no_wrap=all(" " not in c for c in cells) or (estimate and interval_whole),
        )
    for row in rows:
        table.add_row(*(Text(row[i]) for i in shown))
    console.print(table)
    print_footnotes(console, notes)
    left_out = [header[i] for i in range(len(header)) if i not in shown]
    if left_out:
        console.print(
            Padding(
                Text(
                    f"not shown at {console.width} columns: {', '.join(left_out)} (--json, or a wider "
                    "terminal)"
                ),
                (0, 0, 0, 2),
            )
        )
    if total > frame.height:
        console.print(
            Padding(
                Text(
                    f"… {total - frame.height} more rows: --all shows them, --json has everything, or "
                    "narrow with --where / --only"
                ),
                (0, 0, 0, 2),
            )
        )


def print_sentences(console, name: str, result) -> bool:
    """An analysis whose entries each say their answer in a sentence (answers): the sentences,
    one per group, wrapped at word boundaries (never inside a word) with a hanging indent; False
    when it has none."""
    import textwrap

    from rich.text import Text

    sentences = [e["sentence"] for e in result.entries if e.get("sentence")]
    if not sentences:
        return False
    console.print(Text(f"{name} (level {result.level:g})", style="bold"))
    width = max(console.width, 40)
    for text in sentences:
        lines = textwrap.wrap(
            text,
            width,
            initial_indent=" - ",
            subsequent_indent="   ",
            break_long_words=False,
            break_on_hyphens=False,
        )
        console.print(Text("\n".join(lines)), soft_wrap=True)  # wrapped here: rich must not re-wrap
    return True


MAX_REASONS = 5  # per analysis: the reasons some groups got no figures (--json has all)


def print_results(results: dict[str, Any], options: TextOptions, console=None) -> None:
    """Each analysis' tables; one that the data supports nowhere is one "skipped" line, but one
    with figures for some parts (hyperparams' per-level means where no model could be fitted)
    shows them, with the reasons for the rest as notes."""
    from rich.text import Text

    console = console or console_for_output()
    for name, result in results.items():
        shown = {k: f for k, f in result.frames.items() if f.height and k not in result.chart_only}
        if not result.available and not shown:
            reason = (
                result.entries[0].get("reason", "not enough data") if result.entries else "not enough data"
            )
            console.print(Text.assemble((name, "bold"), f": skipped — {reason}"))
            continue
        if not print_sentences(console, name, result):  # answers: one sentence per group, no tables
            for part, frame in shown.items():
                print_frame(console, f"{name}: {part} (level {result.level:g})", frame, options)
        reasons = list(dict.fromkeys(entry_reason(e) for e in result.entries if "reason" in e))
        for line in reasons[:MAX_REASONS]:
            console.print(Text(f"note: {name}: {line}"))
        if len(reasons) > MAX_REASONS:
            console.print(
                Text(f"note: {name}: {len(reasons) - MAX_REASONS} more such notes (--json has them)")
            )
        for note in dict.fromkeys(result.notes):
            console.print(Text(f"note: {note}"))


def entry_reason(entry: dict) -> str:
    """ "(dataset MNIST, training_time_s) not enough data: ...": which group a reason is for."""
    where = [f"{k} {v}" for k, v in (entry.get("group") or {}).items()] + (
        [entry["response"]] if entry.get("response") else []
    )
    return f"({', '.join(where)}) {entry['reason']}" if where else entry["reason"]


def report_lines(files, tables: str | None) -> list[str]:
    """What `analyze --out` says about the report it wrote (on stderr: stdout may be JSON): where
    it is, its images and tables, and each chart that could not be drawn."""
    lines = [f"report: {files.index} (open it in a browser; it needs no network) and {files.analysis_json}"]
    if files.images:
        lines.append(f"  {len(files.images)} images in {files.images[0].parent}")
    if files.tables:
        lines.append(f"  {len(files.tables)} {tables} tables in {files.tables[0].parent}")
    lines += [
        f"  warning: a chart could not be drawn (please report it): {error.splitlines()[0]}"
        for error in files.chart_errors
    ]
    return lines
