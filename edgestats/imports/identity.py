"""The identity of an `edgestats import` and its write. The same file read with another --map,
--device or --long gives other runs, so a re-import is refused or, with --replace, replaces the
earlier one; never is a wrong mapping silently kept. docs/cli/import.md.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

import duckdb

from edgestats.errors import ImportFileError
from edgestats.store.database import limit_memory, memory_limit_bytes
from edgestats.store.results import CHILD_TABLES, Store
from edgestats.store.run_extra import ExtraColumn, refresh_run_extra


def import_identity(
    maps: dict[str, str], device: str | None, long: bool = False, fmt: str | None = None
) -> dict:
    """What, besides the file's bytes, decides the runs an import makes: the same file read with
    another --map, --device, --long or --format gives other runs, so it must not pass for "already in"."""
    identity = {"map": dict(sorted(maps.items())), "device": device}
    if long:
        identity["long"] = True
    if fmt:
        identity["format"] = fmt
    return identity


def identity_key(identity: dict) -> str:
    """'' for an import with no --map and no --device, whose run ids stay those that earlier
    edgestats gave (file hash and row only), so DBs imported before stay idempotent."""
    if (
        not identity["map"]
        and identity["device"] is None
        and not identity.get("long")
        and not identity.get("format")
    ):
        return ""
    return json.dumps(identity, sort_keys=True, ensure_ascii=False)


def describe_identity(identity: dict | None) -> str:
    """'--map a=b --device X' as the user typed it, or 'no --map and no --device'."""
    if not identity or (
        not identity.get("map")
        and identity.get("device") is None
        and not identity.get("long")
        and not identity.get("format")
    ):
        return "no --map and no --device"
    parts = ["--long"] if identity.get("long") else []
    parts += [f"--format {identity['format']}"] if identity.get("format") else []
    parts += [f"--map '{src}={dst}'" for src, dst in (identity.get("map") or {}).items()]
    if identity.get("device") is not None:
        parts.append(f"--device '{identity['device']}'")
    return " ".join(parts)


def earlier_imports(store: Store, path: Path, file_hash: str, new: str) -> tuple[dict, dict]:
    """Runs of earlier imports of this file that are not these runs (those of table `new`): the
    number of them {identity: runs} for the same content read with another --map/--device, and
    {sha256: runs} for other content imported from a file of the same name (a corrected table)."""
    found = store.con.execute(
        "SELECT config->>'sha256', config->'import', count(*) FROM runs "
        "WHERE starts_with(source, 'import:') AND (config->>'sha256' = ? OR source = ?) "
        f"AND run_id NOT IN (SELECT run_id FROM {new}) GROUP BY ALL ORDER BY min(rowid)",
        [file_hash, f"import:{path.name}"],
    ).fetchall()
    same_content: dict[str, int] = {}
    same_name: dict[str, int] = {}
    for sha, identity, runs in found:
        if sha == file_hash:
            how = describe_identity(json.loads(identity) if identity else None)
            same_content[how] = same_content.get(how, 0) + runs
        else:
            same_name[sha or "?"] = same_name.get(sha or "?", 0) + runs
    return same_content, same_name


# DuckDB holds a table's primary-key index in memory, and an import's new keys twice until its
# COMMIT merges them into the table's (runs and run_results: 4.8 M new runs need 0.8-1 GB). The
# import's memory_limit leaves room for those indexes and for DuckDB's working memory, no more, so
# that DuckDB lets go of the blocks it writes and reads rather than caching them up to its general
# limit. Should the estimate fall short, the write is tried again under the general limit.
INDEX_BYTES_PER_RUN = 200
WORKING_BYTES = 128 * 2**20
# While the store is written, the staging DB is only read, a batch at a time.
STAGING_READ_BYTES = 64 * 2**20
BATCH_ROWS = 100_000
NEW, DOOMED, PRESENT = "temp._edgestats_new", "temp._edgestats_doomed", "temp._edgestats_present"


def write_import(
    db_path: Path, staging: duckdb.DuckDBPyConnection, *args: Any, **kwargs: Any
) -> tuple[int, int, list[ExtraColumn]]:
    """_write (below) under the import's memory_limit; again under the general one if DuckDB ran
    out of memory (the first try's transaction rolled back: nothing of it stays)."""
    notes = kwargs.pop("notes")
    try:
        tried: list[str] = []
        written = _write(db_path, staging, *args, notes=tried, tight=True, **kwargs)
    except duckdb.Error as exc:
        if not _out_of_memory(exc):
            raise
        tried = []
        written = _write(db_path, staging, *args, notes=tried, tight=False, **kwargs)
    notes.extend(tried)
    return written


def _out_of_memory(exc: BaseException) -> bool:
    text = str(exc).lower()
    return (
        isinstance(exc, duckdb.OutOfMemoryException)
        or "could not allocate" in text
        or "out of memory" in text
    )


def _write(
    db_path: Path,
    staging: duckdb.DuckDBPyConnection,
    device_names: list[str],
    path: Path,
    *,
    file_hash: str,
    identity: dict,
    replace: bool,
    notes: list[str],
    tight: bool,
) -> tuple[int, int, list[ExtraColumn]]:
    """Write the staged runs (tables new_runs, new_results of the `staging` DB: tables.py) in one
    transaction, streamed from DuckDB to DuckDB in Arrow batches: the number of them already
    present (left as they are), the number of earlier runs of this file replaced, and the columns
    of the view run_extra."""
    with Store.open(db_path) as store, _staged_ids(store, staging, tight=tight):
        same_content, same_name = earlier_imports(store, path, file_hash, NEW)
        if same_content and not replace:
            earlier = "; ".join(f"{n} runs with {how}" for how, n in same_content.items())
            raise ImportFileError(
                f"{path}: {db_path.name} already holds this file imported with another mapping or device "
                f"({earlier}); this import has {describe_identity(identity)}. Pass --replace to replace that "
                f"import with this one; nothing was imported"
            )
        if same_name and not replace:
            notes.append(
                f"{db_path.name} also holds {sum(same_name.values())} runs imported earlier from another "
                f"file named {path.name} (other content); they are kept beside these: pass --replace to "
                "replace them"
            )
        present, replaced = _doomed_and_present(store, path, file_hash, replace=replace)
        with store.transaction(takes_effect=True):  # the import's one commit
            if replaced:
                for table in ("runs", "run_results", *CHILD_TABLES):
                    store.con.execute(f"DELETE FROM {table} WHERE run_id IN (SELECT run_id FROM {DOOMED})")
            for name in device_names:
                store.register_device({"name": name, "facts": {"registered_by": f"import:{path.name}"}})
            keep = f" WHERE CAST(run_id AS UUID) NOT IN (SELECT run_id FROM {PRESENT})" if present else ""
            _copy(
                store,
                staging,
                "SELECT * FROM new_runs",
                f"INSERT INTO runs BY NAME SELECT * FROM {{rows}}{keep}",
            )
            _copy(
                store,
                staging,
                "SELECT * FROM new_results",
                f"INSERT INTO run_results BY NAME SELECT * FROM {{rows}}{keep}",
            )
            extra = refresh_run_extra(store.con)
    return present, replaced, extra


def _copy(store: Store, staging: duckdb.DuckDBPyConnection, query: str, statement: str) -> None:
    """Run `statement` on the store with {rows} the result of `query` on the staging DB, read as
    a stream of Arrow batches (DuckDB reads it as it goes: never the whole table in memory)."""
    reader = staging.sql(query).to_arrow_reader(BATCH_ROWS)
    store.con.register("_edgestats_staged", reader)
    try:
        store.con.execute(statement.format(rows="_edgestats_staged"))
    finally:
        with suppress(duckdb.Error):  # an aborted transaction refuses this too: the error says why
            store.con.unregister("_edgestats_staged")


def _doomed_and_present(store: Store, path: Path, file_hash: str, *, replace: bool) -> tuple[int, int]:
    """Temporary tables of the run ids that --replace takes away (DOOMED) and of the new runs
    already stored that stay as they are (PRESENT); their numbers (present, replaced)."""
    if replace:
        # --replace makes this import the file's only one: its own earlier runs go too, so that a
        # changed reading of the file (not only of --map) is never kept beside the new one.
        store.con.execute(
            f"CREATE TEMP TABLE {DOOMED.split('.')[1]} AS SELECT run_id FROM runs WHERE "
            "starts_with(source, 'import:') AND (config->>'sha256' = ? OR source = ?) "
            f"OR run_id IN (SELECT run_id FROM {NEW})",
            [file_hash, f"import:{path.name}"],
        )
    else:
        store.con.execute(f"CREATE TEMP TABLE {DOOMED.split('.')[1]} (run_id UUID)")
    store.con.execute(
        f"CREATE TEMP TABLE {PRESENT.split('.')[1]} AS SELECT run_id FROM runs WHERE run_id IN "
        f"(SELECT run_id FROM {NEW}) AND run_id NOT IN (SELECT run_id FROM {DOOMED})"
    )
    (replaced,) = store.con.execute(f"SELECT count(*) FROM {DOOMED}").fetchone()
    (present,) = store.con.execute(f"SELECT count(*) FROM {PRESENT}").fetchone()
    return present, replaced


@contextmanager
def _staged_ids(store: Store, staging: duckdb.DuckDBPyConnection, *, tight: bool) -> Iterator[None]:
    """The new run ids in a temporary table of the store (NEW), both DBs under the import's
    memory_limits (`tight`: INDEX_BYTES_PER_RUN, else the general one); the temporary tables are
    dropped after."""
    con = store.con
    (runs,) = con.execute("SELECT count(*) FROM runs").fetchone()
    (new,) = staging.execute("SELECT count(*) FROM new_runs").fetchone()
    general = memory_limit_bytes()
    limit_memory(staging, min(general, STAGING_READ_BYTES))
    limit_memory(con, min(general, WORKING_BYTES + INDEX_BYTES_PER_RUN * (runs + new)) if tight else general)
    try:
        _copy(
            store,
            staging,
            "SELECT run_id FROM new_runs",
            f"CREATE TEMP TABLE {NEW.split('.')[1]} AS SELECT CAST(run_id AS UUID) AS run_id FROM {{rows}}",
        )
        yield
    finally:
        with suppress(duckdb.Error):  # the error on its way out says what went wrong
            for table in (NEW, DOOMED, PRESENT):
                con.execute(f"DROP TABLE IF EXISTS {table}")
            limit_memory(con)
