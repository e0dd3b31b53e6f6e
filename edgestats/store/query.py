"""`edgestats sql`: run a user's query and write its result, batch by batch.

Without --write the query runs in the sandbox of edgestats/store/sandbox.py: the DuckDB connection is
opened read-only (any statement that would change the DB fails inside DuckDB) and locked down
so that it reads no file but the DB and those named with --read, writes none, loads no
extension and reaches no network. With --write the connection is a plain writable one.

The result is read from DuckDB as a stream of Arrow batches of BATCH_ROWS rows, and each batch is
written out before the next is fetched, whatever the format: the command's memory does not grow
with the result. The aligned `table` format measures its column widths on the first batch; a
longer value further down runs past its column. A DuckDB error met mid-result (a damaged block)
ends the output where it stands, with the one-line error.
"""

from __future__ import annotations

import csv
import datetime as dt
import decimal
import io
import json
import math
import os
import shutil
import sys
import textwrap
import uuid
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from itertools import chain
from json.encoder import encode_basestring_ascii
from pathlib import Path
from typing import Any, TextIO

import duckdb
import pyarrow as pa

from edgestats.errors import QueryError
from edgestats.store.results import Store
from edgestats.store.sandbox import HINT, refuse_writes, sandboxed_store

# auto: a table, or one field per line (`line`) when a row is wider than the terminal
FORMATS = ("auto", "table", "line", "csv", "json", "markdown")
# Rows fetched, converted and written at a time: the output's memory is that of one batch.
BATCH_ROWS = 10_000
NO_RESULT_SET = "(statement ran; no result set)"


@dataclass
class QueryResult:
    columns: list[str]
    rows: list[tuple]


class StreamedResult:
    """A result set as DuckDB streams it: `batches()` yields each batch as a list of columns
    (Python values), so at most one batch is held in Python at a time."""

    def __init__(self, columns: list[str], reader: Any, *, write: bool):
        self.columns = columns  # by position: names may repeat
        self._reader = reader
        self._write = write

    def batches(self) -> Iterator[list[list]]:
        try:
            for batch in self._reader:
                if batch.num_rows:
                    yield [column.to_pylist() for column in batch.columns]
        except duckdb.Error as exc:
            raise _query_error(exc, write=self._write) from exc
        except (pa.ArrowException, OSError) as exc:
            # DuckDB's error met mid-result comes through Arrow's stream as an OSError with DuckDB's
            # text: the same error again, so it is worded (and a damaged block named) as at the start
            error = as_duckdb_error(exc)
            raise _query_error(error, write=self._write) from error


def as_duckdb_error(exc: BaseException) -> duckdb.Error:
    """The DuckDB error whose text an Arrow stream carried ("Invalid Input Error: ..."), of the
    type that text names where it is one a caller tells apart."""
    text = str(exc)
    kind = {
        "Out of Memory Error": duckdb.OutOfMemoryException,
        "Permission Error": duckdb.PermissionException,
        "INTERRUPT Error": duckdb.InterruptException,
        "Invalid Input Error": duckdb.InvalidInputException,
        "IO Error": duckdb.IOException,
        "Serialization Error": duckdb.SerializationException,
        "Conversion Error": duckdb.ConversionException,
    }.get(text.split(":", 1)[0].strip(), duckdb.Error)
    return kind(text)


@contextmanager
def query_result(
    db_path: str | Path, query: str, *, write: bool = False, read: Sequence[str | Path] = ()
) -> Iterator[StreamedResult | None]:
    """Run `query` on the DB, sandboxed (reading the DB and `read` only) unless `write`; the
    result set to read while the DB is open, None for a statement without one."""
    if write and read:
        raise QueryError(
            "--read is for the sandboxed (default) mode; with --write the connection is not sandboxed "
            "and reads any file, so drop --read"
        )
    if write:
        with Store.open(db_path) as store:
            yield _start(store.con, query, write=True)
        return
    refuse_writes(query)
    with sandboxed_store(db_path, read) as store:
        yield _start(store.con, query, write=False)


def run_query(
    db_path: str | Path, query: str, *, write: bool = False, read: Sequence[str | Path] = ()
) -> QueryResult:
    """The whole result of `query` in memory (the Python API; the CLI streams: print_query)."""
    with query_result(db_path, query, write=write, read=read) as result:
        if result is None:
            return QueryResult([], [])
        return QueryResult(result.columns, [row for columns in result.batches() for row in zip(*columns)])


def print_query(
    db_path: str | Path,
    query: str,
    fmt: str,
    *,
    write: bool = False,
    read: Sequence[str | Path] = (),
    width: int | None = None,
    out: TextIO | None = None,
) -> None:
    """Run `query` and write its result to `out` (stdout) in `fmt`, one batch at a time."""
    if fmt not in FORMATS:
        raise QueryError(f"--format {fmt!r}: use one of {', '.join(FORMATS)}")
    with query_result(db_path, query, write=write, read=read) as result:
        columns, batches = (result.columns, result.batches()) if result is not None else ([], iter(()))
        write_result(out or sys.stdout, columns, batches, fmt, width=width)


def _start(con: duckdb.DuckDBPyConnection, query: str, *, write: bool) -> StreamedResult | None:
    try:
        # The relation API runs a statement at once and returns None when it has no result set;
        # results come back through Arrow, which needs no pytz for TIMESTAMPTZ values.
        relation = con.sql(query)
        if relation is None:
            return None
        reader = relation.to_arrow_reader(BATCH_ROWS)
    except duckdb.Error as exc:
        raise _query_error(exc, write=write) from exc
    return StreamedResult(list(reader.schema.names), reader, write=write)


def _query_error(exc: duckdb.Error, *, write: bool) -> QueryError:
    text = _first_line(str(exc))
    if not write and ("read-only" in text.lower() or "read only" in text.lower()):
        return QueryError(f"{text} The DB is opened read-only; pass --write to change it.")
    if not write and isinstance(exc, duckdb.PermissionException):
        return QueryError(f"{text}. {HINT}.")
    if isinstance(exc, duckdb.OutOfMemoryException):
        return QueryError(
            f"{text}. edgestats lets DuckDB use half of the memory available (its memory_limit, "
            "docs/cli/sql.md): narrow the query (a WHERE, fewer columns, an aggregate) or free memory"
        )
    return QueryError(text)


def _first_line(text: str) -> str:
    """DuckDB's message without the lines it adds below (a caret under the query, hints)."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[0] if lines else text


def _plain(value: Any) -> Any:
    """JSON-friendly value: UUIDs, times and decimals as text/number, nested values kept."""
    if isinstance(value, (dt.datetime, dt.date, dt.time)):
        return value.isoformat()
    if isinstance(value, (uuid.UUID, dt.timedelta)):
        return str(value)
    if isinstance(value, decimal.Decimal):
        return float(value)
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, bytes):
        return value.hex()
    return value


def _cell(value: Any) -> str:
    kind = type(value)
    if kind is str:
        return value
    if kind is int:
        return str(value)
    if value is None:
        return ""
    if kind is float:
        return repr(value)
    plain = _plain(value)
    return json.dumps(plain) if isinstance(plain, (dict, list)) else str(plain)


def _json_float(value: float) -> str:
    if math.isfinite(value):
        return repr(value)
    return "NaN" if value != value else ("Infinity" if value > 0 else "-Infinity")


# A value as json.dumps(..., indent=2) writes it inside a row object; the common scalars by the
# C encoder's own functions, everything else through _plain and json.dumps, re-indented.
_JSON_SCALARS: dict[type, Callable[[Any], str]] = {
    str: encode_basestring_ascii,
    int: int.__repr__,
    float: _json_float,
    bool: lambda v: "true" if v else "false",
    type(None): lambda _: "null",
}


def _json_value(value: Any) -> str:
    convert = _JSON_SCALARS.get(type(value))
    if convert is not None:
        return convert(value)
    return json.dumps(_plain(value), indent=2, default=str).replace("\n", "\n    ")


def terminal_columns() -> int | None:
    """The width to fit: $COLUMNS when set, else the terminal's when stdout is one; None when
    the output goes to a file or a pipe (nothing to fit, and scripts expect one layout)."""
    columns = os.environ.get("COLUMNS", "")
    if columns.isdigit() and int(columns) > 0:
        return int(columns)
    return shutil.get_terminal_size().columns if sys.stdout.isatty() else None


def format_result(result: QueryResult, fmt: str, *, width: int | None = None) -> str:
    """`result` as text in `fmt`; `auto` picks `line` when a table row would be wider than `width`."""
    if fmt not in FORMATS:
        raise QueryError(f"--format {fmt!r}: use one of {', '.join(FORMATS)}")
    out = io.StringIO()
    batches = [[list(column) for column in zip(*result.rows)]] if result.rows else []
    write_result(out, result.columns, iter(batches), fmt, width=width)
    return out.getvalue().removesuffix("\n")


def write_result(
    out: TextIO, columns: list[str], batches: Iterator[list[list]], fmt: str, *, width: int | None = None
) -> None:
    """Write the result, batch by batch (each a list of columns), to `out` in `fmt`."""
    if not columns and fmt in ("auto", "table", "line"):
        out.write(NO_RESULT_SET + "\n")
        return
    if fmt == "auto":
        first = next(batches, [])
        batches = chain([first], batches)
        wide = width and _table_width(columns, first) > width
        fmt = "line" if wide else "table"
    writers = {
        "table": _write_table,
        "line": lambda o, c, b: _write_lines(o, c, b, width),
        "csv": _write_csv,
        "json": _write_json,
        "markdown": _write_markdown,
    }
    writers[fmt](out, columns, batches)


def _cells(batch: list[list]) -> list[tuple[str, ...]]:
    """A batch's rows as text cells."""
    return list(zip(*[list(map(_cell, column)) for column in batch]))


def _rows_note(n: int) -> str:
    return f"({n} row{'s' if n != 1 else ''})\n"


def _widths(columns: list[str], rows: list[tuple[str, ...]]) -> list[int]:
    return [max([len(c)] + [len(row[i]) for row in rows]) for i, c in enumerate(columns)]


def _table_width(columns: list[str], batch: list[list]) -> int:
    """The widest line of the table of `batch`: its rule under the header, or its row count."""
    rows = _cells(batch)
    rule = "  ".join("-" * w for w in _widths(columns, rows)).rstrip()
    return max(len(rule), len(_rows_note(len(rows)).strip()))


def _write_table(out: TextIO, columns: list[str], batches: Iterator[list[list]]) -> None:
    """Aligned columns, their widths measured on the first batch (later, longer values run past)."""
    first = _cells(next(batches, []))
    widths = _widths(columns, first)

    def line(values: Iterable[str]) -> str:
        return "  ".join(v.ljust(w) for v, w in zip(values, widths)).rstrip() + "\n"

    out.write(line(columns) + line("-" * w for w in widths))
    n = 0
    for rows in chain([first], map(_cells, batches)):
        out.write("".join(map(line, rows)))
        n += len(rows)
    out.write(_rows_note(n))


def _write_lines(out: TextIO, columns: list[str], batches: Iterator[list[list]], width: int | None) -> None:
    """One field per line, a header per row (psql's expanded display): a wide row reads down the
    screen instead of wrapping into an unreadable block. Long values wrap under themselves."""
    name_width = max(len(c) for c in columns)
    value_width = max(width - name_width - 3, 20) if width else None
    n = 0
    for rows in map(_cells, batches):
        text = []
        for row in rows:
            n += 1
            text.append(f"-[ row {n} ]" + "-" * max((width or 40) - len(f"-[ row {n} ]") - 1, 0))
            for name, value in zip(columns, row):
                wrapped = textwrap.wrap(value, value_width, break_long_words=True) if value_width else []
                lines = wrapped or [value]
                text.append(f"{name.ljust(name_width)} | {lines[0]}".rstrip())
                text += [f"{' ' * name_width} | {more}" for more in lines[1:]]
        out.write("".join(t + "\n" for t in text))
    out.write(_rows_note(n))


def _write_csv(out: TextIO, columns: list[str], batches: Iterator[list[list]]) -> None:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(columns)
    for batch in batches:
        writer.writerows(_cells(batch))
        out.write(buffer.getvalue())
        buffer.seek(0)
        buffer.truncate()
    out.write(buffer.getvalue())


def _write_json(out: TextIO, columns: list[str], batches: Iterator[list[list]]) -> None:
    """One JSON document, a list of objects, as json.dumps(rows, indent=2) writes it, row by row.
    A name given twice keeps its first place and its last value (as a dict does)."""
    last = {name: i for i, name in enumerate(columns)}
    prefixes = [f"    {encode_basestring_ascii(name)}: " for name in last]
    started = False
    for batch in batches:
        values = [
            [prefix + text for text in map(_json_value, batch[i])]
            for prefix, i in zip(prefixes, last.values())
        ]
        rows = ",\n".join("  {\n" + ",\n".join(parts) + "\n  }" for parts in zip(*values))
        out.write((",\n" if started else "[\n") + rows)
        started = True
    out.write("\n]\n" if started else "[]\n")


def _write_markdown(out: TextIO, columns: list[str], batches: Iterator[list[list]]) -> None:
    def esc(text: str) -> str:
        return text.replace("|", "\\|").replace("\n", " ")

    out.write("| " + " | ".join(map(esc, columns)) + " |\n|" + "|".join("---" for _ in columns) + "|\n")
    for batch in batches:
        out.write("".join("| " + " | ".join(map(esc, row)) + " |\n" for row in _cells(batch)))
