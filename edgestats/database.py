"""Opening DuckDB files, with DuckDB's low-level errors turned into ones a user can act on.

Every edgestats connection to a results file goes through `connect()`.
"""

from __future__ import annotations

import re
from pathlib import Path

import duckdb

from edgestats.errors import DatabaseError, DatabaseLockedError


def connect(path: str | Path, *, read_only: bool = False, must_exist: bool = False) -> duckdb.DuckDBPyConnection:
    """Open a DuckDB file. `read_only=True` makes the connection itself refuse writes."""
    path = Path(path)
    if (read_only or must_exist) and not path.exists():
        raise DatabaseError(f"{path}: no such file. Check the path, or create a DB with `edgestats import` / `edgestats collect`.")
    if path.exists() and path.is_dir():
        raise DatabaseError(f"{path} is a directory; give the path of a .duckdb file.")
    if not path.parent.exists():
        raise DatabaseError(f"{path}: the folder {path.parent} does not exist; create it first.")
    try:
        return duckdb.connect(str(path), read_only=read_only)
    except duckdb.Error as exc:
        raise translate_open_error(path, exc) from exc


def translate_open_error(path: Path, exc: Exception) -> DatabaseError:
    """Map DuckDB's open errors to messages that say what to do; a lock held by another process
    is a DatabaseLockedError, so a caller that can wait recognises it by type."""
    text = str(exc)
    # DuckDB reports the lock conflict only in its message (an IOException like any other I/O
    # failure): this is the one place that reads it.
    if "Could not set lock" in text or "Conflicting lock" in text:
        holder = re.search(r"held in (.+?) \(PID (\d+)\)", text)
        who = f" (held by PID {holder.group(2)}, {holder.group(1)})" if holder else ""
        return DatabaseLockedError(
            f"{path} is in use by another process{who}. DuckDB allows one writer per file: "
            "wait for that process to finish (e.g. a running `edgestats collect`), or query a copy."
        )
    if "not a valid DuckDB database file" in text or "Could not read enough bytes" in text or "corrupt" in text.lower():
        return DatabaseError(
            f"{path} is not a DuckDB database (or it is corrupt). Check the path; "
            "if the file was cut short while copying, copy it again from the device."
        )
    if "serialization" in text.lower() or "storage version" in text.lower() or "newer version" in text.lower():
        return DatabaseError(
            f"{path} was written by a newer DuckDB than this one ({duckdb.__version__}): "
            f"upgrade duckdb (pip install -U duckdb). DuckDB said: {text}"
        )
    return DatabaseError(f"cannot open {path}: {text}")


# DuckDB 2 keeps a result "unfinished" until a fetch returns no rows, and then refuses
# relation-API calls (con.sql) on that connection; fetchall() always finishes it.
def first_row(con: duckdb.DuckDBPyConnection, sql: str, params: list | None = None) -> tuple | None:
    rows = con.execute(sql, params or []).fetchall()
    return rows[0] if rows else None


def scalar(con: duckdb.DuckDBPyConnection, sql: str, params: list | None = None):
    row = first_row(con, sql, params)
    return row[0] if row else None
