"""The sandbox for a user's SQL: `edgestats sql` without --write, and `analyze --where`.

A sandboxed connection is a read-only connection to the DB on which DuckDB's own settings are
then locked down, before any of the user's SQL runs:

- `enable_external_access = false`: no file but the DB (and the files named with `--read`) can
  be read or written (COPY, EXPORT DATABASE, ATTACH of a file, read_csv, glob, ...), no URL
  reached, no extension installed or loaded;
- `allowed_paths` / `allowed_directories`: the files and folders named with `--read`; they must
  be set while external access is still on (DuckDB refuses them in the connect config);
- `autoinstall_known_extensions` / `autoload_known_extensions` / `allow_community_extensions`
  false, `allow_persistent_secrets` false;
- `temp_directory = ''`: DuckDB does not spill to scratch files next to the DB (a query larger
  than memory fails instead);
- `lock_configuration = true`: no later `SET`/`RESET`/`PRAGMA` can undo any of the above.

DuckDB does not tell reading an allowed path from writing it, so the statements are also checked
with DuckDB's own parser (`refuse_writes`): COPY, EXPORT, ATTACH, INSTALL/LOAD, PREPARE/EXECUTE
and EXPLAIN of any of them are refused before they run; the settings above refuse them anyway
wherever no `--read` path is involved.

The settings belong to the DuckDB instance, which every connection to the same file in one
process shares: while a sandboxed connection is open, another in-process connection to that
file is sandboxed too. It is released when the last connection closes.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import duckdb

from edgestats.errors import QueryError
from edgestats.store.results import Store

# Statements that write files, attach databases or handle extensions. DuckDB's settings refuse
# them too, except inside a --read path, which DuckDB would let them write.
REFUSED = {
    duckdb.StatementType.COPY: "COPY reads or writes files",
    duckdb.StatementType.EXPORT: "EXPORT DATABASE writes files",
    duckdb.StatementType.ATTACH: "ATTACH opens (or creates) another database file",
    duckdb.StatementType.COPY_DATABASE: "COPY FROM DATABASE writes another database",
    duckdb.StatementType.LOAD: "INSTALL / LOAD handle extensions",
    duckdb.StatementType.EXTENSION: "extension statements handle extensions",
    duckdb.StatementType.PREPARE: "PREPARE / EXECUTE are not checked by the sandbox",
    duckdb.StatementType.EXECUTE: "PREPARE / EXECUTE are not checked by the sandbox",
}
_EXPLAINED = re.compile(
    r"\s*EXPLAIN\s+(?:\([^)]*\)\s*)?(?:ANALY[SZ]E\s+)?(?P<inner>.*)", re.IGNORECASE | re.DOTALL
)
HINT = (
    "`edgestats sql` without --write is sandboxed: it reads only the DB and the files named with --read "
    "(see docs/cli/sql.md)"
)


def allowed_entries(paths: Sequence[str | Path]) -> tuple[list[str], list[str]]:
    """(files, folders) for allowed_paths / allowed_directories: each path as written relative to
    the working directory and as resolved (DuckDB compares the text of the path a query names)."""
    files: list[str] = []
    folders: list[str] = []
    for given in paths:
        path = Path(given)
        if not path.exists():
            raise QueryError(
                f"--read {given}: no such file or folder; name an existing file or folder to read"
            )
        spellings = {os.path.abspath(path), str(path.resolve())}
        if path.is_dir():
            folders += [s.rstrip(os.sep) + os.sep for s in sorted(spellings)]
        else:
            files += sorted(spellings)
    return files, folders


def _sql_list(values: list[str]) -> str:
    return "[" + ", ".join("'" + v.replace("'", "''") + "'" for v in values) + "]"


def lock_down(con: duckdb.DuckDBPyConnection, read: Sequence[str | Path] = ()) -> None:
    """Apply the sandbox's settings to `con` (see the module docstring); `read` are the files and
    folders its queries may read. Irreversible for the life of the DuckDB instance."""
    files, folders = allowed_entries(read)
    statements = []
    if files:
        statements.append(f"SET allowed_paths = {_sql_list(files)}")
    if folders:
        statements.append(f"SET allowed_directories = {_sql_list(folders)}")
    statements += [
        "SET autoinstall_known_extensions = false",
        "SET autoload_known_extensions = false",
        "SET allow_community_extensions = false",
        "SET allow_persistent_secrets = false",
        "SET temp_directory = ''",
        "SET enable_external_access = false",
        "SET lock_configuration = true",
    ]
    try:
        for statement in statements:
            con.execute(statement)
    except duckdb.Error as exc:
        first_line = next((line for line in str(exc).splitlines() if line.strip()), str(exc))
        raise QueryError(f"cannot set up the sandbox ({statement}): {first_line}") from exc


def refuse_writes(query: str, *, explained: bool = False) -> None:
    """Raise QueryError for a statement in `query` that could write a file or touch extensions,
    as DuckDB's parser sees it (no keyword matching: spelling and case do not matter)."""
    try:
        statements = duckdb.extract_statements(query)
    except duckdb.Error:
        if explained:  # the text after EXPLAIN, as cut out here, is not a statement: refuse it
            raise QueryError(f"EXPLAIN of a statement the sandbox cannot read; {HINT}") from None
        return  # not SQL DuckDB can parse: running it gives DuckDB's own error
    for statement in statements:
        try:
            kind = statement.type
        except ValueError:  # a statement type this duckdb's Python API has no name for
            raise QueryError(
                f"{statement.query.strip()[:60]!r}: a kind of statement the sandbox does not know; {HINT}"
            ) from None
        if kind in REFUSED:
            raise QueryError(f"{REFUSED[kind]}; {HINT}, or pass --write to run it unsandboxed")
        if kind == duckdb.StatementType.EXPLAIN:
            match = _EXPLAINED.match(statement.query)
            if match is None or not match.group("inner").strip():
                raise QueryError(f"EXPLAIN of a statement the sandbox cannot read; {HINT}")
            refuse_writes(match.group("inner"), explained=True)


@contextmanager
def sandboxed_store(db: str | Path, read: Sequence[str | Path] = ()) -> Iterator[Store]:
    """The DB opened read-only with its connection locked down; `read` may be read too. `db` may
    also be a lake (an export folder, or a glob of DBs: lake.py), whose files may then be read; a
    damaged file of it met by a query is then one DamagedDatabaseError naming the file."""
    from edgestats.store.lake import is_lake, lake_paths, reading_lake

    if is_lake(db):
        with reading_lake(db) as store:
            lock_down(store.con, [*read, *lake_paths(db)])
            yield store
        return
    with Store.open(db, read_only=True) as store:
        lock_down(store.con, read)
        yield store
