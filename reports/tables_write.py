"""`analyze --out DIR --tables latex|markdown|csv`: the paper tables, one file each under DIR/tables/.

The tables (tables_wide.py, tables_answers_env.py): the answers first, the summary (one row per
configuration, a column per metric), every other figure frame of the analyses (pivoted wide where
that shortens it) and the environment (devices, software versions). Printed as

- LaTeX: a booktabs `table` float to `\\input` into a paper (the preamble needs
  `\\usepackage{booktabs}`, nothing else); every string escaped, symbols (×, ±, –) as LaTeX's own
  commands; footnote numbers as superscripts, the notes in a minipage under the tabular;
- Markdown: a pipe table, its caption as pandoc's "Table:" line, the notes as a numbered list under
  it; columns padded so the source reads as a table too;
- CSV: the numbers as the analysis wrote them (bounds and notes in columns of their own, bytes):
  for programs. The wide tables' CSV has one row per configuration as well.
"""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import polars as pl

from edgestats.reports.tables import (
    TABLE_FORMATS,
    TABLE_SUFFIX,
    TableFormatError,
    latex_escape,
    markdown_escape,
    to_csv,
)
from edgestats.reports.tables_answers_env import answers_tables, environment_tables
from edgestats.reports.tables_wide import Cell, PaperTable, paper_table, summary_paper_table

SUPERSCRIPT = str.maketrans("0123456789", "⁰¹²³⁴⁵⁶⁷⁸⁹")
HEADER_WIDTH = 12  # characters per line of a LaTeX header
NOTE_WIDTH = 100  # characters: the notes and lines under a Markdown table are wrapped (the table is not)
HIDDEN_COLUMNS = ("run_idx",)  # an analysis' row index, not a figure (as on the page)


# -- which tables -------------------------------------------------------------------------------


def analysis_tables(name: str, result: Any) -> list[PaperTable]:
    """The paper tables of one analysis result: its figure frames, not those for charts only."""
    if not getattr(result, "available", True):
        return []
    if name == "answers":
        return answers_tables(result)
    frames = {k: f for k, f in result.frames.items() if f is not None and f.height}
    tables = []
    for key, frame in frames.items():
        if key in getattr(result, "chart_only", ()):
            continue
        frame = frame.drop([c for c in HIDDEN_COLUMNS if c in frame.columns])
        if name == "summary" and key == "metrics":
            tables.append(summary_paper_table(frame))
        else:
            tables.append(paper_table(f"{name}-{key}", f"{name}: {key.replace('_', ' ')}", frame))
    return tables


def paper_tables(
    results: dict[str, Any], environment: dict[str, pl.DataFrame] | None = None
) -> list[PaperTable]:
    """Every paper table of `results` (answers and summary first), then the environment's."""
    order = sorted(results, key=lambda n: (n != "answers", n != "summary"))
    return [t for name in order for t in analysis_tables(name, results[name])] + environment_tables(
        environment
    )


# -- LaTeX --------------------------------------------------------------------------------------


def _latex_cell(cell: Cell, right: bool = True) -> str:
    """The estimate with its marks; its interval on a second, smaller line (a paper's column is
    narrow), stacked in a tabular of LaTeX itself (no package)."""
    marks = rf"\textsuperscript{{{','.join(map(str, cell.notes))}}}" if cell.notes else ""
    text = latex_escape(cell.text) + marks
    if not cell.interval:
        return text
    spec = "@{}r@{}" if right else "@{}l@{}"
    interval = rf"{{\scriptsize {latex_escape(cell.interval)}}}"
    return rf"\begin{{tabular}}[t]{{{spec}}}{text}\\ {interval}\end{{tabular}}"


def _stacked(lines: list[str], right: bool) -> str:
    spec = "@{}r@{}" if right else "@{}l@{}"
    return rf"\begin{{tabular}}[b]{{{spec}}}" + r"\\ ".join(lines) + r"\end{tabular}"


def _latex_header(cell: Cell, right: bool) -> str:
    """A header over lines of at most HEADER_WIDTH characters, its unit on a line of its own:
    "median latency (ms)" takes the width of "median latency", not of the whole label."""
    label, _, unit = cell.text.partition(" (")
    lines = [latex_escape(line) for line in textwrap.wrap(label, HEADER_WIDTH, break_long_words=False)]
    if unit:
        lines.append(latex_escape(f"({unit}"))
    if cell.notes:
        lines[-1] += rf"\textsuperscript{{{','.join(map(str, cell.notes))}}}"
    return _stacked(lines, right) if len(lines) > 1 else lines[0]


def to_latex(table: PaperTable) -> str:
    """A booktabs table float; it needs only \\usepackage{booktabs}."""
    spec = "@{}" + "".join("r" if right else "l" for right in table.right) + "@{}"
    below = [latex_escape(line) + r"\par" for line in table.lines]
    below += [rf"\textsuperscript{{{n}}}\,{latex_escape(text)}\par" for n, text in enumerate(table.notes, 1)]
    lines = [
        r"% edgestats paper table; the preamble needs \usepackage{booktabs}",
        r"\begin{table}[htbp]",
        r"\centering",
        r"\small",
        rf"\caption{{{latex_escape(table.caption)}}}",
        rf"\label{{tab:edgestats-{table.key}}}",
        rf"\begin{{tabular}}{{{spec}}}",
        r"\toprule",
        " & ".join(_latex_header(c, r) for c, r in zip(table.columns, table.right)) + r" \\",
        r"\midrule",
        *(" & ".join(_latex_cell(c, r) for c, r in zip(row, table.right)) + r" \\" for row in table.rows),
        r"\bottomrule",
        r"\end{tabular}",
    ]
    if below:
        lines += [
            r"\par\smallskip",
            r"\begin{minipage}{\linewidth}\footnotesize\raggedright",
            *below,
            r"\end{minipage}",
        ]
    return "\n".join([*lines, r"\end{table}"]) + "\n"


# -- Markdown -----------------------------------------------------------------------------------


def _markdown_cell(cell: Cell) -> str:
    marks = ",".join(str(n).translate(SUPERSCRIPT) for n in cell.notes)
    return (
        markdown_escape(cell.text) + marks + (f" {markdown_escape(cell.interval)}" if cell.interval else "")
    )


def to_markdown(table: PaperTable) -> str:
    """A pipe table with its caption, the lines and numbered notes under it."""
    header = [_markdown_cell(c) for c in table.columns]
    body = [[_markdown_cell(c) for c in row] for row in table.rows]
    widths = [max(len(r[i]) for r in [header, *body]) for i in range(len(header))]

    def line(cells: list[str]) -> str:
        padded = (c.rjust(w) if right else c.ljust(w) for c, w, right in zip(cells, widths, table.right))
        return "| " + " | ".join(padded) + " |"

    rule = (
        "|"
        + "|".join(("-" * (w + 1) + ":") if right else "-" * (w + 2) for w, right in zip(widths, table.right))
        + "|"
    )
    parts = [f"Table: {markdown_escape(table.caption)}", "", line(header), rule, *(line(r) for r in body)]
    if table.lines:
        for text in table.lines:  # each its own paragraph
            parts += ["", *textwrap.wrap(markdown_escape(text), NOTE_WIDTH)]
    if table.notes:
        parts += [
            "",
            "Notes:",
            "",
            *(f"{n}. {markdown_escape(text)}" for n, text in enumerate(table.notes, 1)),
        ]
    return "\n".join(parts).rstrip() + "\n"


# -- files --------------------------------------------------------------------------------------


def render(table: PaperTable, fmt: str) -> str:
    if fmt == "latex":
        return to_latex(table)
    if fmt == "markdown":
        return to_markdown(table)
    if fmt == "csv":
        return to_csv(table.data)
    raise TableFormatError(f"unknown table format {fmt!r}: use one of {', '.join(TABLE_FORMATS)}")


def write_tables(
    results: dict[str, Any],
    out_dir: Path,
    fmt: str,
    *,
    environment: dict[str, pl.DataFrame] | None = None,
) -> list[Path]:
    """One file per paper table: `out_dir/tables/<key>.<tex|md|csv>`."""
    if fmt not in TABLE_FORMATS:
        raise TableFormatError(f"unknown table format {fmt!r}: use one of {', '.join(TABLE_FORMATS)}")
    folder = Path(out_dir) / "tables"
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for table in paper_tables(results, environment):
        path = folder / f"{table.key}{TABLE_SUFFIX[fmt]}"
        path.write_text(render(table, fmt), encoding="utf-8")
        written.append(path)
    return written
