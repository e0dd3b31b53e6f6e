"""Export a results DB as hive-partitioned Parquet, for other engines (DuckDB, polars, Spark).

Layout of an export folder DIR:

    DIR/_edgestats_export.json                      the manifest (written last)
    DIR/<table>/device_id=<uuid>/part-0.parquet     one dataset folder per table
    DIR/<table>/part-0.parquet                      tables with no rows, and schema_migrations

Every table of the schema is exported (views are not: they are queries over these tables).
Tables that have no device_id column get it from `runs` (LEFT JOIN on run_id, so no row is
ever dropped; a row whose run is missing lands in device_id=__HIVE_DEFAULT_PARTITION__, which
all three engines read back as NULL). device_id is the partition column: it lives in the folder
names, not in the files, and every reader appends it as the last column.

Types are chosen so that Spark reads them: UUID and JSON columns are written as strings
(Spark does not read Parquet's UUID logical type), timestamps as microsecond TIMESTAMP
(TIMESTAMPTZ stays UTC-adjusted; Spark does not read nanosecond timestamps).

A table with no rows still gets one zero-row file, DIR/<table>/part-0.parquet, holding its
columns (device_id included, as a plain string column, last), so every engine reads it back
as 0 rows with the same columns as a non-empty export; the manifest marks it `"partitioned_by": []`.

The export is written into a hidden temporary sibling folder and renamed to DIR at the end,
so an interrupted export leaves DIR as it was; one killed outright leaves that folder, which the
next export or merge into DIR's parent removes once its owner is dead (exports/staging.py).
--overwrite replaces an earlier export only when DIR holds nothing else (exports/overwrite.py).
The DB is opened read-only.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb

import edgestats.interrupts as interrupts
from edgestats.errors import ExportError
from edgestats.exports.overwrite import refuse_foreign_files
from edgestats.exports.staging import Staging, remove_dead_leftovers
from edgestats.store.database import damage_error, scalar, storage_error
from edgestats.store.lake_checks import MANIFEST_FORMAT, MANIFEST_FORMAT_VERSION, MANIFEST_NAME
from edgestats.store.migrations import MIGRATIONS_TABLE
from edgestats.store.results import Store, quote_ident
from edgestats.version import __version__

PARTITION_COLUMN = "device_id"
NULL_PARTITION = "__HIVE_DEFAULT_PARTITION__"  # how DuckDB (and Hive, Spark) name a NULL partition
FILE_PREFIX = "part-"

# DuckDB types that Spark cannot read from Parquet (or reads lossily): written as text.
_AS_TEXT = {
    "UUID",
    "JSON",
    "INTERVAL",
    "TIME",
    "TIME WITH TIME ZONE",
    "TIME_NS",
    "HUGEINT",
    "UHUGEINT",
    "BIT",
}
# Timestamp units other than microseconds: Spark reads only micro- (and milli-) second timestamps.
_AS_MICROS = {"TIMESTAMP_NS", "TIMESTAMP_MS", "TIMESTAMP_S"}
_NESTED = re.compile(r"(\[\d*\]$)|^(STRUCT|MAP|UNION)\(")
_NESTED_NEEDS_TEXT = re.compile(r"\b(UUID|JSON)\b")


# -- SQL builders (pure: testable without a database) ---------------------------------------------


def sql_string(value: str) -> str:
    """A SQL string literal (COPY ... TO takes no parameters)."""
    return "'" + value.replace("'", "''") + "'"


def parquet_column(column: str, db_type: str, *, qualifier: str = "") -> tuple[str, str]:
    """(select expression, exported DuckDB type) for one column, so every engine can read it."""
    ref = f"{qualifier}.{quote_ident(column)}" if qualifier else quote_ident(column)
    alias = quote_ident(column)
    if db_type in _AS_TEXT:
        return f"CAST({ref} AS VARCHAR) AS {alias}", "VARCHAR"
    if db_type in _AS_MICROS:
        return f"CAST({ref} AS TIMESTAMP) AS {alias}", "TIMESTAMP"
    if _NESTED.search(db_type) and _NESTED_NEEDS_TEXT.search(db_type):
        # A list/struct holding UUIDs or JSON: written as JSON text rather than half-readable.
        return f"CAST(to_json({ref}) AS VARCHAR) AS {alias}", "VARCHAR"
    return f"{ref} AS {alias}", db_type


def device_source(table: str, columns: dict[str, str], tables: set[str]) -> str | None:
    """Where a table's device_id comes from: 'own' column, 'runs' (join on run_id), or None."""
    if PARTITION_COLUMN in columns:
        return "own"
    if "run_id" in columns and table != "runs" and "runs" in tables:
        return "runs"
    return None


def export_select_sql(
    table: str, columns: dict[str, str], source: str | None
) -> tuple[str, list[tuple[str, str, str]]]:
    """The SELECT that one table is exported from, and its exported columns
    (name, exported type, DB type) in the order readers see them: device_id last."""
    select: list[str] = []
    exported: list[tuple[str, str, str]] = []
    for name, db_type in columns.items():
        if name == PARTITION_COLUMN:
            continue
        expr, out_type = parquet_column(name, db_type, qualifier="src")
        select.append(expr)
        exported.append((name, out_type, db_type))
    from_sql = f"FROM {quote_ident(table)} AS src"
    if source == "own":
        select.append(
            f"CAST(src.{quote_ident(PARTITION_COLUMN)} AS VARCHAR) AS {quote_ident(PARTITION_COLUMN)}"
        )
        exported.append((PARTITION_COLUMN, "VARCHAR", columns[PARTITION_COLUMN]))
    elif source == "runs":
        select.append(
            f"CAST(run.{quote_ident(PARTITION_COLUMN)} AS VARCHAR) AS {quote_ident(PARTITION_COLUMN)}"
        )
        exported.append((PARTITION_COLUMN, "VARCHAR", "UUID (from runs)"))
        from_sql += ' LEFT JOIN "runs" AS run ON run."run_id" = src."run_id"'
    return f"SELECT {', '.join(select)} {from_sql}", exported


def copy_sql(select: str, target: str, *, partitioned: bool) -> str:
    """COPY a query to Parquet: a hive-partitioned folder, or one file."""
    if partitioned:
        options = (
            f"FORMAT parquet, PARTITION_BY ({quote_ident(PARTITION_COLUMN)}), "
            f"FILENAME_PATTERN '{FILE_PREFIX}{{i}}'"
        )
    else:
        options = "FORMAT parquet"
    return f"COPY ({select}) TO {sql_string(target)} ({options})"


# -- the export -----------------------------------------------------------------------------------


@dataclass
class _Table:
    name: str
    columns: dict[str, str]
    rows: int


def schema_tables(con: duckdb.DuckDBPyConnection) -> list[_Table]:
    rows = con.execute(
        "SELECT t.table_name, c.column_name, c.data_type FROM duckdb_tables() t "
        "JOIN duckdb_columns() c ON c.table_oid = t.table_oid "
        "WHERE t.database_name = current_database() AND t.schema_name = 'main' AND NOT t.temporary "
        "ORDER BY t.table_name, c.column_index"
    ).fetchall()
    columns: dict[str, dict[str, str]] = {}
    for table, column, db_type in rows:
        columns.setdefault(table, {})[column] = db_type
    return [
        _Table(name, cols, scalar(con, f"SELECT count(*) FROM {quote_ident(name)}"))
        for name, cols in columns.items()
    ]


def _write_table(
    con: duckdb.DuckDBPyConnection, table: _Table, root: Path, all_tables: set[str]
) -> dict[str, Any]:
    """Write one table's dataset folder under root and describe it for the manifest."""
    source = device_source(table.name, table.columns, all_tables) if table.name != MIGRATIONS_TABLE else None
    select, exported = export_select_sql(table.name, table.columns, source)
    folder = root / table.name
    partitioned = source is not None and table.rows > 0
    if partitioned:
        written = scalar(con, copy_sql(select, str(folder), partitioned=True))
    else:
        folder.mkdir()
        written = scalar(con, copy_sql(select, str(folder / f"{FILE_PREFIX}0.parquet"), partitioned=False))
    files = file_rows(con, folder)
    on_disk = sum(files.values())
    if not written == on_disk == table.rows:
        raise RuntimeError(
            f"export of {table.name}: the DB has {table.rows} rows, COPY wrote {written}, the files hold "
            f"{on_disk}"
        )
    partitions: dict[str | None, int] = {}
    if partitioned:
        for rel, n in files.items():
            value = Path(rel).parent.name.split("=", 1)[1]
            key = None if value == NULL_PARTITION else value
            partitions[key] = partitions.get(key, 0) + n
    return {
        "rows": table.rows,
        "partitioned_by": [PARTITION_COLUMN] if partitioned else [],
        "device_id_from": {"own": "column", "runs": "runs.run_id"}.get(source or "", None),
        "columns": [{"name": n, "type": t, "db_type": d} for n, t, d in exported],
        "partitions": [
            {"device_id": k, "rows": v} for k, v in sorted(partitions.items(), key=lambda kv: kv[0] or "")
        ],
        "files": [
            {"path": f"{table.name}/{rel}", "rows": n, **file_digest(folder / rel)}
            for rel, n in sorted(files.items())
        ],
    }


def file_rows(con: duckdb.DuckDBPyConnection, folder: Path) -> dict[str, int]:
    """Rows per written Parquet file (from the footers), keyed by path relative to folder."""
    paths = sorted(str(p) for p in folder.rglob("*.parquet"))
    if not paths:
        return {}
    rows = con.execute("SELECT file_name, num_rows FROM parquet_file_metadata(?)", [paths]).fetchall()
    return {Path(name).relative_to(folder).as_posix(): n for name, n in rows}


def file_digest(path: Path, known: dict[str, Any] | None = None) -> dict[str, Any]:
    """A written file's size and SHA-256, as the manifest lists them: readers check the size when
    they open the lake (a file cut short), `edgestats verify` the digest (any changed byte, where
    Parquet pages as DuckDB writes them carry no checksum). `known`: the facts an earlier manifest
    listed for the same (never rewritten) file, kept rather than read again."""
    if known and "bytes" in known and "sha256" in known:
        return {"bytes": known["bytes"], "sha256": known["sha256"]}
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return {"bytes": path.stat().st_size, "sha256": digest.hexdigest()}


def _is_inside(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents


def _check_target(out: Path, db_path: Path, overwrite: bool) -> None:
    """Refuse a DIR that would mix two exports or lose files that are not an export."""
    if _is_inside(db_path, out):
        raise ExportError(
            f"{out} holds the DB being exported ({db_path}); choose an export folder outside it."
        )
    if out.exists() and not out.is_dir():
        raise ExportError(
            f"{out} is a file, not a folder; give the path of a new (or empty) folder for the export."
        )
    if out.is_dir() and any(out.iterdir()):
        if not overwrite:
            raise ExportError(
                f"{out} is not empty. Choose a new folder, or pass --overwrite to replace an earlier "
                "edgestats export there (two exports are never mixed in one folder)."
            )
        if not (out / MANIFEST_NAME).is_file():
            raise ExportError(
                f"{out} is not empty and holds no edgestats export ({MANIFEST_NAME} is missing), so "
                "--overwrite will not delete it. Choose another folder, or empty this one yourself."
            )
        refuse_foreign_files(out, MANIFEST_NAME)  # a user's file in it is never deleted with it


def _replace_dir(new: Path, out: Path, claim: Staging) -> None:
    """Put the finished export at out; an earlier one there is swapped out, then deleted (checked
    again first: a file put there while this export ran is not the export's to delete)."""
    if not out.exists():
        with interrupts.taking_effect():  # the export takes effect: a signal now changes nothing
            os.rename(new, out)
        return
    if any(out.iterdir()):
        refuse_foreign_files(out, MANIFEST_NAME)
    old = claim.path("old")
    os.rename(out, old)
    try:
        with interrupts.taking_effect():
            os.rename(new, out)
    except BaseException:
        os.rename(old, out)
        raise
    shutil.rmtree(old, ignore_errors=True)


def _export_failure(exc: BaseException, table: str, db_path: Path, work: Path, out: Path) -> Exception | None:
    """One line for a failed table export: the DB damaged (a block failing its checksum), or the
    storage refusing the write (its cause and the file), or DuckDB's own words; None for an
    error that is no failed write (a bug, raised as it is)."""
    damaged = damage_error(exc, db_path)
    if damaged is not None:
        return damaged
    fault = storage_error(work, exc, note="")
    if fault is None and not isinstance(exc, (duckdb.IOException, OSError)):
        return None
    why = (
        str(fault)
        if fault is not None
        else f"{str(exc).strip().splitlines()[0]}. Check free space and permissions"
    )
    return ExportError(f"writing {table} to {work} failed: {why.rstrip('. ')}; {out} was not changed.")


def _work_folder(out: Path) -> tuple[Staging, Path]:
    """The hidden sibling folder the export is written in, named after a held lock (see
    exports/staging.py)."""
    claim = None
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        claim = Staging(out)
        work = claim.path("tmp")
        work.mkdir()
        return claim, work
    except OSError as exc:
        if claim is not None:
            claim.close()
        raise ExportError(
            f"cannot create the export folder next to {out}: {exc}. Check the path and its permissions."
        ) from exc


def export_parquet(db_path: str | Path, out_dir: str | Path, *, overwrite: bool = False) -> dict[str, Any]:
    """Export every table of a results DB to out_dir as hive-partitioned Parquet (by device_id).

    Returns the manifest that is also written to out_dir/_edgestats_export.json: schema and
    edgestats versions, export time, and per table its `rows`, `columns` (name, exported type,
    DB type), `partitions` (rows per device_id) and `files`.

    The DB is opened read-only (and must be at this edgestats' schema version). out_dir must
    not exist or be empty; with overwrite=True an earlier edgestats export there is replaced
    (a folder without a manifest is never deleted). Raises DatabaseError for an unusable DB
    and ExportError for an unusable out_dir or a failed write; either way out_dir is unchanged.
    """
    db_path = Path(db_path).expanduser()
    out = Path(out_dir).expanduser().resolve()
    with Store.open(db_path, read_only=True) as store:
        con = store.con
        schema_version = scalar(con, f"SELECT max(version) FROM {MIGRATIONS_TABLE}")
        remove_dead_leftovers(out.parent)  # first: an export swapped out by a killed one comes back
        _check_target(out, db_path.resolve(), overwrite)
        claim, work = _work_folder(out)
        try:
            tables = schema_tables(con)
            names = {t.name for t in tables}
            manifest: dict[str, Any] = {
                "format": MANIFEST_FORMAT,
                "format_version": MANIFEST_FORMAT_VERSION,
                "edgestats_version": __version__,
                "schema_version": schema_version,
                "duckdb_version": duckdb.__version__,
                "exported_at": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
                "source_db": str(db_path.resolve()),
                "partition_column": PARTITION_COLUMN,
                "null_partition": NULL_PARTITION,
                "tables": {},
            }
            for table in tables:
                try:
                    manifest["tables"][table.name] = _write_table(con, table, work, names)
                except (duckdb.Error, OSError) as exc:
                    failure = _export_failure(exc, table.name, db_path, work, out)
                    if failure is None:
                        raise
                    raise failure from exc
            try:
                (work / MANIFEST_NAME).write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
            except OSError as exc:
                raise _export_failure(exc, MANIFEST_NAME, db_path, work, out) or exc from exc
            _replace_dir(work, out, claim)
        except BaseException:
            shutil.rmtree(work, ignore_errors=True)
            raise
        finally:
            claim.close()
    return manifest


def read_manifest(out_dir: str | Path) -> dict[str, Any]:
    """The manifest of an export folder."""
    path = Path(out_dir) / MANIFEST_NAME
    if not path.is_file():
        raise ExportError(f"{out_dir} holds no edgestats export ({MANIFEST_NAME} is missing).")
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except ValueError as exc:  # not UTF-8, or not whole JSON: cut short, bytes changed
        raise ExportError(
            f"{path} is damaged ({str(exc).splitlines()[0]}), so the export folder cannot be read or "
            "appended to: copy the folder again from where it was made, or export the DBs again into a new "
            "folder."
        ) from None
