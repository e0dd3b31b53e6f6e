"""Results lakes: many devices' results read in place, without merging them first.

A lake is either
- an export folder (`edgestats export DB --parquet DIR`, grown with `--append`): hive-partitioned
  Parquet, one dataset per table, with its manifest; or
- a glob of results DBs (`'results/*.duckdb'`, quoted so the shell leaves it alone).

`open_lake` gives a read-only in-memory DuckDB connection in which every table of the schema is
a view over the lake and the schema's own views (run_summary, ...) are defined as in a DB, so
`sql` and `analyze` ask it the same questions, the same way, and get the answers a merged file
gives: a run stored in several DBs counts once (the first file in name order holding it gives
its rows, as `merge` keeps the first copy), and a device once (its first registration).

Parquet columns are cast back to the schema's types (UUID and JSON were written as text, see
exports/parquet.py), so results match the merged file column for column.

A damaged export folder (its manifest, or a file it lists, deleted, emptied, cut short or with
bytes changed) is said in one line naming the file and what to do: found when the lake is
opened (the manifest, each file's size and magic bytes, and each file's SHA-256, hashed once per
version of the file: lake_digests.py), else translated where DuckDB meets it (`reading_lake`),
and on demand by `lake_problems` (`edgestats verify`); lake_checks.py holds the checks.
"""

from __future__ import annotations

import glob
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import duckdb

from edgestats.errors import DatabaseError
from edgestats.store.lake_checks import (
    check_lake_files,
    folder_problems,
    lake_files,
    lake_read_error,
    read_lake_manifest,
)
from edgestats.store.lake_digests import check_lake_digests
from edgestats.store.migrations import MIGRATIONS_TABLE, latest_version, migrate
from edgestats.store.results import Store, quote_ident

GLOB_CHARACTERS = "*?["


def is_lake(spec: str | Path) -> bool:
    """Whether `spec` names a lake (an export folder, or a glob of DBs) rather than one DB file.
    Any folder is taken for an export folder, so one whose manifest is missing is told so."""
    text = str(spec)
    if Path(text).is_file():
        return False  # a DB whose name happens to hold a glob character
    return any(c in text for c in GLOB_CHARACTERS) or Path(text).is_dir()


def lake_paths(spec: str | Path) -> list[Path]:
    """What a lake's queries read: the export folder, or each DB file of the glob."""
    text = str(spec)
    if Path(text).is_dir():
        return [Path(text)]
    files = sorted(Path(p) for p in glob.glob(text))
    if not files:
        raise DatabaseError(
            f"{text}: no file matches this pattern; give an export folder or a glob of .duckdb files "
            "(quoted, so the shell does not expand it)"
        )
    return files


def open_lake(spec: str | Path) -> Store:
    """A read-only Store over the lake `spec` (see the module docstring). An export folder's
    manifest and files are checked first (lake_checks.check_lake_files, then each file's SHA-256
    where it was not verified before: lake_digests.check_lake_digests)."""
    con = duckdb.connect()
    try:
        migrate(con, str(spec))  # the schema's tables and views, in memory
        tables = _schema_columns(con)
        if Path(str(spec)).is_dir():
            _parquet_views(con, Path(str(spec)), tables)
        else:
            _union_views(con, lake_paths(spec), tables)
    except BaseException:
        con.close()
        raise
    return Store(con, Path(str(spec)), read_only=True)


@contextmanager
def reading_lake(spec: str | Path) -> Iterator[Store]:
    """`open_lake`, with what DuckDB meets later in a damaged file (a page that does not decode)
    raised as one DamagedDatabaseError naming the file, whoever reads (sql, analyze, the API)."""
    with open_lake(spec) as store:
        try:
            yield store
        except Exception as exc:
            damaged = lake_read_error(exc, spec)
            if damaged is None:
                raise
            raise damaged from exc


def lake_problems(spec: str | Path, *, thorough: bool = True) -> list[str]:
    """One line per problem of the lake `spec`, each naming the file; none: it reads whole.

    An export folder: its manifest, then every file it lists (present, of its listed size, PAR1
    at both ends; with `thorough`, its footer's row count against the manifest's, every value
    read, and its SHA-256 against the manifest's). A glob of DBs: nothing here, since each DB
    it matches is a DB file and is checked as one; a glob that matches nothing raises
    DatabaseError."""
    if not Path(str(spec)).is_dir():
        lake_paths(spec)
        return []
    return folder_problems(Path(str(spec)), thorough=thorough)


def _schema_columns(con: duckdb.DuckDBPyConnection) -> dict[str, list[tuple[str, str]]]:
    rows = con.execute(
        "SELECT table_name, column_name, data_type FROM duckdb_columns() "
        "WHERE database_name = current_database() AND NOT internal "
        "AND table_name IN (SELECT table_name FROM duckdb_tables() WHERE database_name = current_database()) "
        "ORDER BY table_name, column_index"
    ).fetchall()
    tables: dict[str, list[tuple[str, str]]] = {}
    for table, column, data_type in rows:
        tables.setdefault(table, []).append((column, data_type))
    return tables


def _replace_with_view(con: duckdb.DuckDBPyConnection, table: str, select: str) -> None:
    con.execute(f"DROP TABLE {quote_ident(table)}")
    con.execute(f"CREATE VIEW {quote_ident(table)} AS {select}")


# -- an export folder ----------------------------------------------------------------------------


def _parquet_views(
    con: duckdb.DuckDBPyConnection, root: Path, tables: dict[str, list[tuple[str, str]]]
) -> None:
    """Each table a view over the files its manifest lists (not a glob: files an interrupted
    `export --append` left behind are listed nowhere, so they are never read)."""
    manifest = read_lake_manifest(root)
    _check_lake_version(manifest, root)
    check_lake_files(root, manifest)  # deleted, emptied, cut short: named before DuckDB reads a file
    # A changed byte DuckDB would read as another value (its pages carry no checksum): named too.
    check_lake_digests(root, lake_files(root, manifest))
    try:
        _create_parquet_views(con, root, manifest, tables)
    except duckdb.Error as exc:  # a footer that does not parse (bytes changed): named too
        damaged = lake_read_error(exc, root)
        if damaged is None:
            raise
        raise damaged from exc


def _create_parquet_views(
    con: duckdb.DuckDBPyConnection, root: Path, manifest: dict, tables: dict[str, list[tuple[str, str]]]
) -> None:
    for table, columns in tables.items():
        files = [str(root / f["path"]) for f in manifest["tables"].get(table, {}).get("files", [])]
        if not files:
            continue  # a schema table the export did not write (none today): stays an empty table
        listed = ", ".join("'" + f.replace("'", "''") + "'" for f in files)
        casts = ", ".join(f"CAST({quote_ident(c)} AS {t}) AS {quote_ident(c)}" for c, t in columns)
        _replace_with_view(
            con,
            table,
            f"SELECT {casts} FROM read_parquet([{listed}], hive_partitioning = true, union_by_name = true)",
        )


def _check_lake_version(manifest: dict, root: Path) -> None:
    version = manifest.get("schema_version") or 0
    if version < latest_version():
        raise DatabaseError(
            f"{root} was exported at schema version {version}; this edgestats reads {latest_version()}. "
            "Export the DBs again (edgestats migrate DB, then edgestats export DB --parquet DIR)."
        )
    if version > latest_version():
        raise DatabaseError(
            f"{root} was exported by a newer edgestats (schema version {version}); upgrade edgestats to read "
            "it."
        )


# -- a glob of DB files --------------------------------------------------------------------------


def _union_views(
    con: duckdb.DuckDBPyConnection, files: list[Path], tables: dict[str, list[tuple[str, str]]]
) -> None:
    for i, path in enumerate(files):
        with Store.open(path, read_only=True):
            pass  # checked whole and at this schema version, with the same errors a single DB gets
        con.execute(f"ATTACH '{str(path).replace(chr(39), chr(39) * 2)}' AS {_alias(i)} (READ_ONLY)")
    for table, columns in tables.items():
        names = ", ".join(quote_ident(c) for c, _ in columns)
        union = " UNION ALL ".join(
            f"SELECT {names}, {i} AS _lake_file FROM {_alias(i)}.{quote_ident(table)}"
            for i in range(len(files))
        )
        _replace_with_view(
            con, table, f"SELECT {names} FROM ({union}) u {_first_copy(table, columns, len(files))}"
        )


def _alias(i: int) -> str:
    return f"_lake_{i}"


def _first_copy(table: str, columns: list[tuple[str, str]], n_files: int) -> str:
    """What keeps one copy of what several files hold: a run's rows from the first file holding
    the run (as merge keeps the first), any other row once by its key."""
    names = {c for c, _ in columns}
    if "run_id" in names and table != "runs":
        firsts = " UNION ALL ".join(f"SELECT run_id, {i} AS f FROM {_alias(i)}.runs" for i in range(n_files))
        return (
            f"SEMI JOIN (SELECT run_id, min(f) AS f FROM ({firsts}) GROUP BY run_id) first_copy "
            "ON u.run_id = first_copy.run_id AND u._lake_file = first_copy.f"
        )
    key = {
        "runs": "run_id",
        "devices": "device_id",
        "baselines": "baseline_id",
        MIGRATIONS_TABLE: "version",
    }.get(table)
    if key is None or key not in names:
        return ""
    return f"QUALIFY row_number() OVER (PARTITION BY {quote_ident(key)} ORDER BY _lake_file) = 1"
