"""`edgestats export DB --parquet DIR --append`: add a DB's runs to an existing export folder (a
results lake), idempotently.

What is new is decided by key against the lake's own files: runs (and every row belonging to
them) whose run_id the lake lacks, devices and baselines by their ids. Appending the same DB
twice adds nothing, and leaves the folder byte for byte as it was. A device already in the lake
keeps its first facts, as `merge` keeps them.

The manifest is the commit point. New files are written under a hidden staging folder inside
DIR, renamed into their partition folders (the runs table last), and the manifest that lists
them is replaced last, atomically. Readers that go by the manifest (edgestats' lake reader)
never see a half-done append; files left by an interrupted one are listed nowhere, and the next
append deletes them before it starts, so engines that read every file in a folder (Spark) see
them at most until then.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import shutil
import uuid
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa

import edgestats.interrupts as interrupts
from edgestats.errors import ExportError
from edgestats.exports.parquet import (
    FILE_PREFIX,
    MANIFEST_NAME,
    NULL_PARTITION,
    PARTITION_COLUMN,
    device_source,
    export_select_sql,
    file_digest,
    file_rows,
    read_manifest,
    schema_tables,
    sql_string,
)
from edgestats.store.database import scalar
from edgestats.store.lake_checks import check_lake_files
from edgestats.store.migrations import MIGRATIONS_TABLE
from edgestats.store.results import Store, quote_ident
from edgestats.version import __version__

# The key that decides whether a table's row is new, for tables that hold no run_id.
OWN_KEYS = {"devices": "device_id", "baselines": "baseline_id"}
# Renamed into place last: a reader that globs files (Spark) finds a run's rows before the run.
LAST = ("devices", "runs")


def append_parquet(db_path: str | Path, lake_dir: str | Path) -> dict[str, Any]:
    """Add the runs of `db_path` that `lake_dir` lacks; returns {table: rows added} under
    "added" and the runs added under "runs_added". The lake must be at the DB's schema version."""
    db_path = Path(db_path).expanduser()
    lake = Path(lake_dir).expanduser().resolve()
    manifest = read_manifest(lake)
    check_lake_files(lake, manifest)  # files deleted or cut short: refused, not hidden under new ones
    with Store.open(db_path, read_only=True) as store:
        con = store.con
        version = scalar(con, f"SELECT max(version) FROM {MIGRATIONS_TABLE}")
        if version != manifest.get("schema_version"):
            raise ExportError(
                f"{lake} holds schema version {manifest.get('schema_version')} and {db_path} version "
                f"{version}: bring both to this edgestats (edgestats migrate DB; export the lake again) "
                "before appending."
            )
        _drop_unlisted(lake, manifest)
        for table, key in (("runs", "run_id"), *OWN_KEYS.items()):
            known = pa.array(sorted(_lake_keys(con, lake, manifest, table, key)), pa.string())
            con.register(f"_lake_{key}", pa.table({key: known}))
        append_id = uuid.uuid4().hex[:12]
        staging = lake / f".append-{append_id}"
        staging.mkdir()
        try:
            added = _write_new_rows(con, staging, append_id)
            _move_into_place(staging, lake, manifest)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
        if any(added.values()):
            _write_manifest(con, lake, manifest, added, db_path)
    return {"added": added, "runs_added": added.get("runs", 0)}


def _listed_files(manifest: dict[str, Any]) -> set[str]:
    return {f["path"] for table in manifest["tables"].values() for f in table.get("files", [])}


def _drop_unlisted(lake: Path, manifest: dict[str, Any]) -> None:
    """Delete what an interrupted append left: staging folders and files no manifest lists."""
    listed = _listed_files(manifest)
    for path in lake.glob(".append-*"):
        shutil.rmtree(path, ignore_errors=True)
    for table in manifest["tables"]:
        for path in (lake / table).rglob("*.parquet"):
            if path.relative_to(lake).as_posix() not in listed:
                path.unlink()


def _lake_keys(
    con: duckdb.DuckDBPyConnection, lake: Path, manifest: dict[str, Any], table: str, key: str
) -> set[str]:
    files = [str(lake / f["path"]) for f in manifest["tables"].get(table, {}).get("files", [])]
    if not files:
        return set()
    rows = con.execute(
        f"SELECT DISTINCT CAST({quote_ident(key)} AS VARCHAR) FROM read_parquet(?, hive_partitioning = true, "
        "union_by_name = true)",
        [files],
    ).fetchall()
    return {r[0] for r in rows if r[0] is not None}


def _write_new_rows(con: duckdb.DuckDBPyConnection, staging: Path, append_id: str) -> dict[str, int]:
    """COPY each table's new rows into staging/<table>/device_id=<id>/; rows written per table."""
    tables = [t for t in schema_tables(con) if t.name != MIGRATIONS_TABLE]
    names = {t.name for t in tables}
    added = {}
    for table in tables:
        source = device_source(table.name, table.columns, names)
        key = "run_id" if "run_id" in table.columns else OWN_KEYS.get(table.name)
        if source is None or key is None:
            raise ExportError(
                f"{table.name}: a table with no device and no key cannot be appended; export the DB whole"
            )
        select, _ = export_select_sql(table.name, table.columns, source)
        select += (
            f" WHERE CAST(src.{quote_ident(key)} AS VARCHAR) "
            f"NOT IN (SELECT {quote_ident(key)} FROM _lake_{key})"
        )
        n = scalar(con, f"SELECT count(*) FROM ({select})")
        if n:
            target = staging / table.name
            con.execute(
                f"COPY ({select}) TO {sql_string(str(target))} (FORMAT parquet, PARTITION_BY "
                f"({quote_ident(PARTITION_COLUMN)}), FILENAME_PATTERN '{FILE_PREFIX}{append_id}-{{i}}')"
            )
        added[table.name] = n
    return added


def _move_into_place(staging: Path, lake: Path, manifest: dict[str, Any]) -> None:
    """Rename the staged files into the lake's partition folders, LAST tables last. A table that
    was empty held one zero-row file outside any partition: it goes, now that rows come."""
    staged = sorted(
        (p.name for p in staging.iterdir()),
        key=lambda name: (name in LAST, LAST.index(name) if name in LAST else 0),
    )
    for table in staged:
        entry = manifest["tables"].get(table, {})
        for path in sorted((staging / table).rglob("*.parquet")):
            target = lake / table / path.relative_to(staging / table)
            target.parent.mkdir(parents=True, exist_ok=True)
            os.rename(path, target)
        if not entry.get("partitioned_by"):
            (lake / table / f"{FILE_PREFIX}0.parquet").unlink(missing_ok=True)


def _write_manifest(
    con: duckdb.DuckDBPyConnection, lake: Path, manifest: dict[str, Any], added: dict[str, int], db_path: Path
) -> None:
    for table, n in added.items():
        if not n:
            continue
        entry = manifest["tables"][table]
        listed = {f["path"]: f for f in entry.get("files", [])}  # an appended file is never rewritten
        files = file_rows(con, lake / table)
        partitions: dict[str | None, int] = {}
        for rel, rows in files.items():
            value = Path(rel).parent.name.split("=", 1)[1]
            partitions[None if value == NULL_PARTITION else value] = (
                partitions.get(None if value == NULL_PARTITION else value, 0) + rows
            )
        entry.update(
            rows=entry["rows"] + n,
            partitioned_by=[PARTITION_COLUMN],
            partitions=[
                {"device_id": k, "rows": v} for k, v in sorted(partitions.items(), key=lambda kv: kv[0] or "")
            ],
            files=[
                {
                    "path": f"{table}/{rel}",
                    "rows": rows,
                    **file_digest(lake / table / rel, listed.get(f"{table}/{rel}")),
                }
                for rel, rows in sorted(files.items())
            ],
        )
    manifest.setdefault("appends", []).append(
        {
            "source_db": str(db_path.resolve()),
            "edgestats_version": __version__,
            "appended_at": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
            "rows_added": {t: n for t, n in added.items() if n},
        }
    )
    tmp = lake / f".{MANIFEST_NAME}.tmp"
    tmp.write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    with interrupts.taking_effect():  # the commit point: a signal now changes nothing
        os.replace(tmp, lake / MANIFEST_NAME)
