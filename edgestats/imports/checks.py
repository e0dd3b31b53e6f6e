"""Checks and notes of `edgestats import` on the staged file, before the DB is opened. Values that
cannot be stored are errors naming the row and column; what the import decides for the user
(fractional epochs, thread counts left at the default, a column that looks like a measure, rows
without a measurement) becomes a note. docs/cli/import.md.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import duckdb

from edgestats.contracts import (
    CONFIG_RANGES,
    CONTROL_CHARACTERS,
    MAX_DEVICE_NAME_CHARS,
    control_character,
    device_name_problem,
)
from edgestats.errors import ImportFileError
from edgestats.formatting import counted
from edgestats.imports.columns import (
    BIGINT_COLUMNS,
    BIGINT_MAX,
    CANONICAL,
    INT_MAX,
    Canonical,
    resolve,
    suggest,
)
from edgestats.store.database import first_row
from edgestats.store.results import quote_ident
from edgestats.store.userpaths import shorten

RUN_STATUSES = ("ok", "error", "timeout", "killed", "diverged")


# Thousands separators as in published tables ("1,114.34"); only this unambiguous shape.
THOUSANDS = r"^[+-]?\d{1,3}(,\d{3})+(\.\d*)?$"


NONNEGATIVE_FAMILIES = ("time", "memory", "energy", "power", "pct")


@dataclass
class SourceColumn:
    """One column of the file and what it becomes."""

    original: str
    canonical: Canonical | None = None
    factor: float = 1.0


def numeric_expr(column: str) -> str:
    """SQL turning a text cell into DOUBLE (NULL when empty), accepting 1,234.5 thousands."""
    c = f"trim({quote_ident(column)})"
    return (
        f"TRY_CAST(CASE WHEN regexp_full_match({c}, '{THOUSANDS}') THEN replace({c}, ',', '') "
        f"ELSE {c} END AS DOUBLE)"
    )


def fail_at(
    con: duckdb.DuckDBPyConnection, path: Path, column: SourceColumn, condition: str, what: str
) -> None:
    """Raise naming the first row where `condition` holds."""
    row = first_row(
        con,
        f"SELECT _row, {quote_ident(column.original)} FROM staged WHERE {condition} ORDER BY _row LIMIT 1",
    )
    if row:
        line = f" (line {row[0] + 1})" if path.suffix.lower() in (".csv", ".tsv", ".txt") else ""
        raise ImportFileError(
            f"{path}: row {row[0]}{line}, column {column.original!r}: {row[1]!r} {what}; nothing was imported"
        )


def check_values(con: duckdb.DuckDBPyConnection, path: Path, plan: list[SourceColumn], kind: str) -> None:
    """Every value of a column edgestats knows can be stored as it; an error names the first row
    that cannot be (checks in order: a number, a whole count, its size, its range)."""
    for column in plan:
        spec = column.canonical
        if spec is None:
            continue
        raw = quote_ident(column.original)
        present = f"{raw} IS NOT NULL AND trim({raw}) <> ''"
        if spec.type in ("int", "float"):
            _check_numbers(con, path, column, present)
            continue
        fail_at(
            con,
            path,
            column,
            f"{raw} IS NOT NULL AND regexp_matches({raw}, '{CONTROL_CHARACTERS}')",
            f"contains a control character (NUL, tab, newline, escape, ...); {spec.name} must be "
            "printable text: fix the cell",
        )
        if spec.name == "status":
            allowed = ", ".join(f"'{s}'" for s in RUN_STATUSES)
            fail_at(
                con,
                path,
                column,
                f"{present} AND lower(trim({raw})) NOT IN ({allowed})",
                f"is not a run status (one of {', '.join(RUN_STATUSES)})",
            )
        elif spec.name == "kind":
            fail_at(
                con,
                path,
                column,
                f"{present} AND lower(trim({raw})) <> '{kind}'",
                f"disagrees with --kind {kind}",
            )


def _check_numbers(con: duckdb.DuckDBPyConnection, path: Path, column: SourceColumn, present: str) -> None:
    """A numeric column: each value a number, a count whole and within its integer type, and
    finite once converted to the canonical unit; then the column's range."""
    spec = column.canonical
    number = numeric_expr(column.original)
    fail_at(
        con,
        path,
        column,
        f"{present} AND {number} IS NULL",
        f"is not a number ({spec.name} is numeric)",
    )
    finite = f"{present} AND isfinite({number})"
    if spec.type == "int":
        _check_counts(con, path, column, finite, number)
    fail_at(
        con,
        path,
        column,
        f"{finite} AND NOT isfinite({number} * {column.factor})",
        f"is too large to store once converted to {spec.name}",
    )
    _check_range(con, path, column, finite, number)


def _check_counts(
    con: duckdb.DuckDBPyConnection, path: Path, column: SourceColumn, finite: str, number: str
) -> None:
    """An integer column: whole and ≥ 0, and within the integer type it is stored as."""
    spec = column.canonical
    # a count in another unit (dataset_gb -> dataset_bytes) is whole once converted
    scaled = f"{number} * {column.factor}"
    fail_at(
        con,
        path,
        column,
        f"{finite} AND ({scaled} <> round({scaled}) OR {number} < 0)"
        if column.factor == 1
        else f"{finite} AND {number} < 0",
        f"is not a whole number ≥ 0 ({spec.name} counts)",
    )
    bits, limit = (64, BIGINT_MAX) if spec.name in BIGINT_COLUMNS else (32, INT_MAX)
    fail_at(
        con,
        path,
        column,
        f"{finite} AND {scaled} > {limit}",
        f"is too large ({spec.name} is stored as a {bits}-bit integer, at most {limit})",
    )


def _check_range(
    con: duckdb.DuckDBPyConnection, path: Path, column: SourceColumn, finite: str, number: str
) -> None:
    """The values a measure cannot take: below 0 for times, memory, energy, power and percentages,
    above 100 % for an accuracy; and a configuration outside the range collect takes it in
    (edgestats/contracts.py, CONFIG_RANGES: a batch size or thread count of 0, ...)."""
    spec = column.canonical
    if spec.name in CONFIG_RANGES:
        _check_config_range(con, path, column, finite, number)
    if spec.family in NONNEGATIVE_FAMILIES or spec.name.endswith("_per_s"):
        fail_at(con, path, column, f"{finite} AND {number} < 0", f"is negative ({spec.name} cannot be)")
    if spec.name == "accuracy_pct":
        scaled = f"{number} * {column.factor}"
        fail_at(
            con,
            path,
            column,
            f"{finite} AND {scaled} > 100",
            "is above 100 % (accuracy_pct is a percentage; for a fraction name the column accuracy_frac)",
        )
    if spec.name == "epochs_run":
        fail_at(con, path, column, f"{finite} AND {number} < 0", "is negative (epochs_run counts epochs)")


# What a cell outside a configuration's range means, where a table often writes it so.
RANGE_HINTS = {
    "threads": "; for the framework's own default leave the cell empty or write 'default'",
}


def _check_config_range(
    con: duckdb.DuckDBPyConnection, path: Path, column: SourceColumn, finite: str, number: str
) -> None:
    """A configuration column within the range `collect` takes it in (one table for both)."""
    name = column.canonical.name
    low, high = CONFIG_RANGES[name]
    shown = f"{low:,}" if isinstance(low, int) else f"{low:g}"
    bounded = math.isfinite(high)
    allowed = f"{shown} to {high:,}" if bounded else f"{shown} or more"
    outside = f"{number} < {low!r}" + (f" OR {number} > {high!r}" if bounded else "")
    fail_at(
        con,
        path,
        column,
        f"{finite} AND ({outside})",
        f"is out of range for {name} (range {allowed}, as collect takes it){RANGE_HINTS.get(name, '')}",
    )


def check_name_option(option: str, value: str | None) -> None:
    """A name given on the command line (--device) without control characters, as in a cell, and
    named as collect's --device-name takes it (contracts.device_name_problem: 1 to 64 characters)."""
    found = control_character(value) if value else None
    if found:
        raise ImportFileError(
            f"{option} {shorten(value)}: contains a control character ({found}); give printable text; "
            "nothing was imported"
        )
    why = device_name_problem(value) if value and option == "--device" else None
    if why:
        raise ImportFileError(
            f"{option} {shorten(value)} {why}: give a printable name of 1 to {MAX_DEVICE_NAME_CHARS} "
            "characters, as collect's --device-name takes it; nothing was imported"
        )


def fractional_epochs(
    con: duckdb.DuckDBPyConnection, path: Path, plan: list[SourceColumn], notes: list[str]
) -> None:
    """A column giving `epochs` with a fractional value holds the epochs actually run (published
    tables derive them as iterations x batch / dataset size): it goes to epochs_run, as given,
    rather than being refused; a table that also has an epochs_run column keeps both."""
    column = next((c for c in plan if c.canonical and c.canonical.name == "epochs"), None)
    if column is None:
        return
    number = numeric_expr(column.original)
    row = first_row(
        con,
        f"SELECT _row, {quote_ident(column.original)} FROM staged WHERE isfinite({number}) "
        f"AND {number} <> round({number}) ORDER BY _row LIMIT 1",
    )
    if row is None:
        return
    taken = next((c.original for c in plan if c.canonical and c.canonical.name == "epochs_run"), None)
    if taken is not None:
        raise ImportFileError(
            f"{path}: row {row[0]}, column {column.original!r}: {row[1]!r} is not a whole number, and column "
            f"{taken!r} already gives epochs_run; map one of them elsewhere with --map; nothing was imported"
        )
    column.canonical = CANONICAL["epochs_run"]
    notes.append(
        f"column {column.original!r} has fractional epochs (row {row[0]}: {row[1]}): stored as given in "
        f"epochs_run (the epochs run); epochs (the whole epochs set) is left empty"
    )


UNSET_THREADS = ("unset", "default", "")


THREADS_AS_WRITTEN = "threads_as_written"


def unset_threads(con: duckdb.DuckDBPyConnection, plan: list[SourceColumn], notes: list[str]) -> None:
    """Published tables write 'unset' or 'default' (or nothing) for a run left at the framework's
    own thread count: that is no number of threads, so threads is NULL, the words are kept in
    extra (threads_as_written) and the import says so."""
    column = next((c for c in plan if c.canonical and c.canonical.name == "threads"), None)
    if column is None:
        return
    raw = quote_ident(column.original)
    words = ", ".join(sql_str(w) for w in UNSET_THREADS)
    unset = f"coalesce(lower(trim({raw})), '') IN ({words})"
    found = con.execute(f"SELECT _row, {raw} FROM staged WHERE {unset} ORDER BY _row").fetchall()
    if not found:
        return
    said = sorted({(value or "").strip() for _, value in found})
    if any(said):
        con.execute(f"ALTER TABLE staged ADD COLUMN {THREADS_AS_WRITTEN} VARCHAR")
        con.execute(
            f"UPDATE staged SET {THREADS_AS_WRITTEN} = trim({raw}), {raw} = NULL "
            f"WHERE {unset} AND trim({raw}) <> ''"
        )
        plan.append(SourceColumn(THREADS_AS_WRITTEN))
    shown = ", ".join(str(r) for r, _ in found[:10]) + (", ..." if len(found) > 10 else "")
    words_seen = " or ".join(repr(w) if w else "empty" for w in said)
    notes.append(
        f"column {column.original!r} is {words_seen} in {counted(len(found), 'rows')} (rows {shown}): "
        "threads stored as NULL (the framework's own default)"
        + (f", the words kept in extra as {THREADS_AS_WRITTEN}" if any(said) else "")
    )


def measure_hints(con: duckdb.DuckDBPyConnection, plan: list[SourceColumn]) -> list[str]:
    """A note for each column kept as extra that looks like a column edgestats has and the file
    does not give otherwise, with the --map that would import it."""
    given = {c.canonical.name for c in plan if c.canonical}
    hints = []
    for column in plan:
        if column.canonical is not None:
            continue
        raw = quote_ident(column.original)
        present = f"{raw} IS NOT NULL AND trim({raw}) <> ''"
        n_present, n_numeric = con.execute(
            f"SELECT count(*) FILTER (WHERE {present}), count(*) FILTER (WHERE {present} AND "
            f"{numeric_expr(column.original)} IS NOT NULL) FROM staged"
        ).fetchall()[0]
        target = suggest(column.original, numeric=n_present > 0 and n_numeric == n_present)
        if target is None or resolve(target)[0].name in given:
            continue
        hints.append(
            f"column {column.original!r} looks like {resolve(target)[0].name} but is kept as extra: "
            f"if it is, import it with --map '{column.original}={target}'"
        )
    return hints


def check_measured(
    path: Path,
    plan: list[SourceColumn],
    con: duckdb.DuckDBPyConnection,
    hints: list[str],
    notes: list[str],
    long: bool = False,
    empty_why: str | None = None,
) -> None:
    """Refuse a file whose rows carry no measurement (a long-format table read as one row per
    run, or a measure under a name edgestats does not know): it would import as runs with no
    figures. Rows that all say they failed (status) are runs without figures, and import. Reads
    the converted rows (table `converted`, importer.py) in SQL: none passes through Python."""
    measured = [c.canonical.name for c in plan if c.canonical and c.canonical.table == "run_results"]
    empty = " AND ".join(f"{quote_ident(name)} IS NULL" for name in measured) or "true"
    status = "status" if any(c.canonical and c.canonical.name == "status" for c in plan) else "NULL"
    n_rows, n_without, failed = first_row(
        con,
        f"SELECT count(*), count(*) FILTER (WHERE {empty}), "
        f"coalesce(bool_and(coalesce({status}, 'ok') <> 'ok' OR len(_nan_columns) > 0), true) FROM converted",
    )
    if n_without == n_rows and not failed:
        hint = f" ({hints[0]})" if hints else ""
        what = (
            f"its measured columns ({', '.join(measured)}) are empty"
            if measured
            else "none of its columns is a measure (latency_ms, training_time_s, accuracy_pct, ...)"
        )
        if long:
            what = what.replace("columns", "metrics")
            advice = (
                "Name the metrics that are measures with --map METRIC=DST (e.g. --map total=total_time_s)"
            )
        else:
            advice = (
                "A long-format table (one row per metric or phase, the figure in a 'value' column) imports "
                "with --long; else name the measured column with --map SRC=DST"
            )
        raise ImportFileError(
            f"{path}: no row carries a measurement: {what}{hint}. {advice}; nothing was imported"
        )
    notes.extend(hints)
    if n_without and not failed:
        without = con.execute(f"SELECT _row FROM converted WHERE {empty} ORDER BY _row LIMIT 10").fetchall()
        shown = ", ".join(str(r[0]) for r in without) + (", ..." if n_without > 10 else "")
        notes.append(
            f"{counted(n_without, 'rows')} {'carries' if n_without == 1 else 'carry'} no measurement "
            f"(rows {shown}): imported as runs with empty figures" + (f" ({empty_why})" if empty_why else "")
        )


def sql_str(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"
