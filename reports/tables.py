"""Tables of an analysis' figures with their intervals: for the HTML page and for papers.

An analysis result frame carries each estimate next to its interval, either as `X`,
`X_ci_low`, `X_ci_high`, or as one value column with bare `ci_low`/`ci_high` (and `level`,
`n`). Here each estimate and its interval become one cell, "12.3 [11.9, 12.8]", so a table
never shows a figure without its uncertainty; edgestats.formatting writes the cells, as it does
for the page's sentences and the terminal. CSV keeps the numbers as they are (for programs).
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from edgestats.errors import EdgestatsError
from edgestats.formatting import MISSING, format_interval, format_number

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


def _is_plain(dtype: pl.DataType) -> bool:
    """Columns a table cell can show: numbers, text, booleans, dates (not lists or structs)."""
    return not isinstance(dtype, (pl.List, pl.Array, pl.Struct, pl.Object))


# -- the formatted table ------------------------------------------------------------------------


MIB = 1024 * 1024
PER_ROW_VALUES = ("estimate", "ci_low", "ci_high", "runner_up_estimate")


def in_mib(frame: pl.DataFrame) -> pl.DataFrame:
    """Memory for reading: `X_bytes` columns become `X_mib`, and rows whose metric is `X_bytes`
    have their estimate and bounds in MiB under the metric `X_mib` (CSV keeps bytes)."""
    renames = {
        c: c.replace("_bytes", "_mib")
        for c in frame.columns
        if "_bytes" in c and frame.schema[c].is_numeric()
    }
    frame = frame.with_columns(pl.col(c) / MIB for c in renames).rename(renames)
    if "metric" in frame.columns and frame.schema["metric"] == pl.String:
        is_bytes = pl.col("metric").str.ends_with("_bytes")
        frame = frame.with_columns(
            *(
                pl.when(is_bytes).then(pl.col(c) / MIB).otherwise(pl.col(c)).alias(c)
                for c in PER_ROW_VALUES
                if c in frame.columns and frame.schema[c].is_numeric()
            ),
            pl.col("metric").str.replace(r"_bytes$", "_mib"),
        )
    return frame


def report_table(frame: pl.DataFrame) -> pl.DataFrame:
    """Every cell as text, each estimate merged with its interval; bounds and a shared level
    are folded into the header ("latency_median_ms [95 % CI]"); memory in MiB (`in_mib`)."""
    frame = in_mib(frame.select([c for c, t in frame.schema.items() if _is_plain(t)]))
    pairs = interval_columns(frame.columns)
    level = confidence_level(frame)
    bounds = {c for low_high in pairs.values() for c in low_high}
    drop = bounds | ({"level"} if level is not None else set())
    label = f" [{level * 100:g} % CI]" if level is not None else " [CI]"
    cells: dict[str, list[str]] = {}
    for column in frame.columns:
        if column in drop:
            continue
        values = frame[column].to_list()
        if column in pairs:
            low, high = (frame[c].to_list() for c in pairs[column])
            cells[column + label] = [format_interval(v, lo, hi) for v, lo, hi in zip(values, low, high)]
        else:
            cells[column] = [
                format_number(v) if isinstance(v, (int, float)) else (MISSING if v is None else str(v))
                for v in values
            ]
    return pl.DataFrame(cells, schema={c: pl.String for c in cells})


def numeric_columns(frame: pl.DataFrame) -> set[str]:
    """Columns to right-align: numbers and estimates with intervals."""
    pairs = interval_columns(frame.columns)
    return {c for c, t in frame.schema.items() if t.is_numeric()} | set(pairs)


def right_aligned(frame: pl.DataFrame, formatted: pl.DataFrame) -> list[bool]:
    numeric = numeric_columns(in_mib(frame.select([c for c, t in frame.schema.items() if _is_plain(t)])))
    return [column.split(" [")[0] in numeric for column in formatted.columns]


# -- writers ------------------------------------------------------------------------------------


def markdown_escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ")


def to_markdown(frame: pl.DataFrame) -> str:
    formatted = report_table(frame)
    align = right_aligned(frame, formatted)
    header = "| " + " | ".join(markdown_escape(c) for c in formatted.columns) + " |"
    rule = "|" + "|".join("---:" if right else "---" for right in align) + "|"
    rows = ["| " + " | ".join(markdown_escape(cell) for cell in row) + " |" for row in formatted.iter_rows()]
    return "\n".join([header, rule, *rows]) + "\n"


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
}


def latex_escape(text: str) -> str:
    return "".join(LATEX_SPECIALS.get(ch, ch) for ch in text.replace("\n", " "))


def to_latex(frame: pl.DataFrame, *, caption: str, label: str) -> str:
    """A booktabs table (\\usepackage{booktabs}) ready to \\input into a paper."""
    formatted = report_table(frame)
    spec = "".join("r" if right else "l" for right in right_aligned(frame, formatted))
    lines = [
        r"\begin{table}[ht]",
        r"\centering",
        rf"\caption{{{latex_escape(caption)}}}",
        rf"\label{{{latex_escape(label)}}}",
        rf"\begin{{tabular}}{{{spec}}}",
        r"\toprule",
        " & ".join(latex_escape(c) for c in formatted.columns) + r" \\",
        r"\midrule",
        *(" & ".join(latex_escape(cell) for cell in row) + r" \\" for row in formatted.iter_rows()),
        r"\bottomrule",
        r"\end{tabular}",
        r"\end{table}",
    ]
    return "\n".join(lines) + "\n"


def to_csv(frame: pl.DataFrame) -> str:
    """The figures as numbers, bounds in their own columns: for programs, not for reading."""
    return frame.select([c for c, t in frame.schema.items() if _is_plain(t)]).write_csv()


def render_table(frame: pl.DataFrame, fmt: str, *, caption: str, label: str) -> str:
    if fmt == "latex":
        return to_latex(frame, caption=caption, label=label)
    if fmt == "markdown":
        return to_markdown(frame)
    if fmt == "csv":
        return to_csv(frame)
    raise TableFormatError(f"unknown table format {fmt!r}: use one of {', '.join(TABLE_FORMATS)}")


def write_tables(tables: dict[str, tuple[str, pl.DataFrame]], out_dir: Path, fmt: str) -> list[Path]:
    """One file per table: `tables/<key>.<suffix>`. `tables` maps key -> (caption, frame)."""
    if fmt not in TABLE_FORMATS:
        raise TableFormatError(f"unknown table format {fmt!r}: use one of {', '.join(TABLE_FORMATS)}")
    folder = out_dir / "tables"
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for key, (caption, frame) in tables.items():
        path = folder / f"{key}{TABLE_SUFFIX[fmt]}"
        path.write_text(
            render_table(frame, fmt, caption=caption, label=f"tab:edgestats-{key}"), encoding="utf-8"
        )
        written.append(path)
    return written
