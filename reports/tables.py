"""What the page's tables and the paper tables (`--tables`) share: a frame's intervals and level,
CSV, and escaping. They find where a frame's intervals are and its confidence level, write CSV, and
escape for Markdown and LaTeX.

An analysis result frame carries each estimate next to its interval, either as `X`,
`X_ci_low`, `X_ci_high`, or as one value column with bare `ci_low`/`ci_high` (and `level`,
`n`). The tables show each estimate and its interval as one cell, "12.3 [11.9, 12.8]", so a
table never shows a figure without its uncertainty (page_tables.py, tables_wide.py); CSV keeps
the numbers as they are (for programs).
"""

from __future__ import annotations

import unicodedata

import polars as pl

from edgestats.errors import EdgestatsError

TABLE_FORMATS = ("latex", "markdown", "csv")
TABLE_SUFFIX = {"latex": ".tex", "markdown": ".md", "csv": ".csv"}

# Which column a bare ci_low/ci_high pair belongs to, in order of preference.
BARE_VALUE_COLUMNS = ("estimate", "value", "statistic", "median", "mean", "slope", "ratio", "effect")


class TableFormatError(EdgestatsError):
    """An unknown --tables format."""


# -- finding the intervals ----------------------------------------------------------------------


def interval_columns(columns: list[str]) -> dict[str, tuple[str, str]]:
    """Value column -> (low column, high column), for every estimate that has an interval."""
    pairs: dict[str, tuple[str, str]] = {}
    for column in columns:
        if column.endswith("_ci_low"):
            base = column[: -len("_ci_low")]
            if base in columns and f"{base}_ci_high" in columns:
                pairs[base] = (column, f"{base}_ci_high")
    if "ci_low" in columns and "ci_high" in columns:
        value = next((c for c in BARE_VALUE_COLUMNS if c in columns), None)
        if value is not None:
            pairs[value] = ("ci_low", "ci_high")
    return pairs


def confidence_level(frame: pl.DataFrame) -> float | None:
    """The interval level when the whole table shares one (the usual case), else None."""
    if "level" not in frame.columns or frame.height == 0:
        return None
    levels = frame["level"].drop_nulls().unique()
    return float(levels[0]) if levels.len() == 1 else None


def is_plain(dtype: pl.DataType) -> bool:
    """Columns a table cell can show: numbers, text, booleans, dates (not lists or structs)."""
    return not isinstance(dtype, (pl.List, pl.Array, pl.Struct, pl.Object))


# -- escaping ----------------------------------------------------------------------------------


def markdown_escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ")


LATEX_SPECIALS = {
    "\\": r"\textbackslash{}",
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
    # OT1-encoded text fonts print these three as other glyphs
    "|": r"\textbar{}",
    "<": r"\textless{}",
    ">": r"\textgreater{}",
    # what edgestats' own text uses beyond ASCII, in commands of LaTeX itself (no package)
    "\u2013": "--",  # en dash: formatting.MISSING, ranges
    "\u2014": "---",
    "\u2212": "$-$",
    "\u00d7": r"$\times$",
    "\u00b1": r"$\pm$",
    "\u00b7": r"$\cdot$",
    "\u2026": r"\dots{}",
    "\u2264": r"$\leq$",
    "\u2265": r"$\geq$",
    "\u2248": r"$\approx$",
    "\u2192": r"$\rightarrow$",
    "\u00f7": r"$\div$",
    "\u00b5": r"$\mu$",
    "\u03bc": r"$\mu$",
    "\u00b0": r"$^{\circ}$",
    "\u00a0": "~",
    "\u2018": "`",
    "\u2019": "'",
    "\u201c": "``",
    "\u201d": "''",
    "\u00df": r"{\ss}",
    "\u00f8": r"{\o}",
    "\u00d8": r"{\O}",
    "\u00e6": r"{\ae}",
    "\u00c6": r"{\AE}",
}
# Combining accents (after NFD) -> LaTeX's accent commands, for accented Latin letters in names.
LATEX_ACCENTS = {
    "\u0300": "`",
    "\u0301": "'",
    "\u0302": "^",
    "\u0303": "~",
    "\u0308": '"',
    "\u0327": "c",
    "\u030c": "v",
    "\u030a": "r",
    "\u0304": "=",
}


def _latex_char(ch: str) -> str:
    """One character as pdflatex reads it with no package: specials escaped, known symbols as
    commands, an accented letter as its accent command, anything else as "?" (a DB string may
    hold any script; an unknown character would stop the document from compiling)."""
    if ch in LATEX_SPECIALS:
        return LATEX_SPECIALS[ch]
    if ch.isascii():
        return ch
    base, *marks = unicodedata.normalize("NFD", ch)
    if base.isascii() and base.isalpha() and marks and all(m in LATEX_ACCENTS for m in marks):
        text = base
        for mark in marks:
            text = f"\\{LATEX_ACCENTS[mark]}{{{text}}}"
        return "{" + text + "}"
    return "?"


def latex_escape(text: str) -> str:
    """Text from a table (names from the DB, units, notes) safe inside a LaTeX cell or caption."""
    return "".join(_latex_char(ch) for ch in text.replace("\n", " "))


def to_csv(frame: pl.DataFrame) -> str:
    """The figures as numbers, bounds in their own columns: for programs, not for reading."""
    return frame.select([c for c, t in frame.schema.items() if is_plain(t)]).write_csv()
