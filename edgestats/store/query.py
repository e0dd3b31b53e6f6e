"""`edgestats sql`: run a user's query and format the result.

Without --write the query runs in the sandbox of edgestats/store/sandbox.py: the DuckDB connection is
opened read-only (any statement that would change the DB fails inside DuckDB) and locked down
so that it reads no file but the DB and those named with --read, writes none, loads no
extension and reaches no network. With --write the connection is a plain writable one.
"""

from __future__ import annotations

import csv
import datetime as dt
import decimal
import io
import json
import os
import shutil
import sys
import textwrap
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb

from edgestats.errors import QueryError
from edgestats.store.results import Store
from edgestats.store.sandbox import HINT, refuse_writes, sandboxed_store

# auto: a table, or one field per line (`line`) when a row is wider than the terminal
FORMATS = ("auto", "table", "line", "csv", "json", "markdown")


@dataclass
class QueryResult:
    columns: list[str]
    rows: list[tuple]


def run_query(
    db_path: str | Path, query: str, *, write: bool = False, read: Sequence[str | Path] = ()
) -> QueryResult:
    """Run `query` on the DB: sandboxed (reading the DB and `read` only) unless `write`."""
    if write and read:
        raise QueryError(
            "--read is for the sandboxed (default) mode; with --write the connection is not sandboxed "
            "and reads any file, so drop --read"
        )
    if write:
        with Store.open(db_path) as store:
            return _execute(store.con, query, write=True)
    refuse_writes(query)
    with sandboxed_store(db_path, read) as store:
        return _execute(store.con, query, write=False)


def _execute(con: duckdb.DuckDBPyConnection, query: str, *, write: bool) -> QueryResult:
    try:
        # The relation API runs a statement at once and returns None when it has no result
        # set; results come back through Arrow, which needs no pytz for TIMESTAMPTZ values.
        relation = con.sql(query)
        table = relation.to_arrow_table() if relation is not None else None
    except duckdb.Error as exc:
        text = _first_line(str(exc))
        if not write and ("read-only" in text.lower() or "read only" in text.lower()):
            raise QueryError(f"{text} The DB is opened read-only; pass --write to change it.") from exc
        if not write and isinstance(exc, duckdb.PermissionException):
            raise QueryError(f"{text}. {HINT}.") from exc
        raise QueryError(text) from exc
    if table is None:
        return QueryResult([], [])
    columns = [column.to_pylist() for column in table.columns]  # by position: names may repeat
    return QueryResult(table.column_names, list(zip(*columns)))


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
    if value is None:
        return ""
    if isinstance(value, float):
        return repr(value)
    plain = _plain(value)
    return json.dumps(plain) if isinstance(plain, (dict, list)) else str(plain)


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
    if fmt == "auto":
        fmt = "line" if width and result.columns and _table_width(result) > width else "table"
    if fmt == "line":
        return _line_records(result, width)
    if fmt == "json":
        return json.dumps(
            [dict(zip(result.columns, map(_plain, row))) for row in result.rows], indent=2, default=str
        )
    cells = [[_cell(v) for v in row] for row in result.rows]
    if fmt == "csv":
        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(result.columns)
        writer.writerows(cells)
        return out.getvalue().rstrip("\n")
    if fmt == "markdown":
        esc = lambda s: s.replace("|", "\\|").replace("\n", " ")  # noqa: E731
        lines = [
            "| " + " | ".join(esc(c) for c in result.columns) + " |",
            "|" + "|".join("---" for _ in result.columns) + "|",
        ]
        lines += ["| " + " | ".join(esc(c) for c in row) + " |" for row in cells]
        return "\n".join(lines)
    return _text_table(result.columns, cells)


def _text_table(columns: list[str], cells: list[list[str]]) -> str:
    if not columns:
        return "(statement ran; no result set)"
    widths = [max([len(c)] + [len(row[i]) for row in cells]) for i, c in enumerate(columns)]
    line = lambda vals: "  ".join(v.ljust(w) for v, w in zip(vals, widths)).rstrip()  # noqa: E731
    out = [line(columns), line(["-" * w for w in widths])] + [line(row) for row in cells]
    out.append(f"({len(cells)} row{'s' if len(cells) != 1 else ''})")
    return "\n".join(out)


def _table_width(result: QueryResult) -> int:
    cells = [[_cell(v) for v in row] for row in result.rows]
    return max(len(line) for line in _text_table(result.columns, cells).splitlines())


def _line_records(result: QueryResult, width: int | None) -> str:
    """One field per line, a header per row (psql's expanded display): a wide row reads down the
    screen instead of wrapping into an unreadable block. Long values wrap under themselves."""
    if not result.columns:
        return "(statement ran; no result set)"
    name_width = max(len(c) for c in result.columns)
    value_width = max((width or 0) - name_width - 3, 20) if width else None
    out = []
    for i, row in enumerate(result.rows, 1):
        out.append(f"-[ row {i} ]" + "-" * max((width or 40) - len(f"-[ row {i} ]") - 1, 0))
        for name, value in zip(result.columns, row):
            text = _cell(value)
            lines = (
                textwrap.wrap(text, value_width, break_long_words=True) if value_width and text else [text]
            )
            out.append(f"{name.ljust(name_width)} | {lines[0]}".rstrip())
            out += [f"{' ' * name_width} | {more}" for more in lines[1:]]
    out.append(f"({len(result.rows)} row{'s' if len(result.rows) != 1 else ''})")
    return "\n".join(out)
