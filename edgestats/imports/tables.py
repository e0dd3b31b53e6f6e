"""The rows of an `edgestats import`, checked and converted, as the runs and run_results tables.

Separate from importer.py, which reads, plans and checks the file: this module makes, in the
import's staging DB, the tables `new_runs` and `new_results` that identity.write_import copies into
the store. A run row gets from a file's row its run id (from the file's content, the row number and
the import's identity), its status, and a config naming where it came from.

No row passes through Python, so the import's memory does not grow with the file: each run's id,
a UUID v5 (contracts.name_uuid), is computed by DuckDB with the same rule (`run_id_sql`); Python
computes only what the few distinct values of a column need (a device's id, a dataset's one
spelling), in small tables the rows are joined with.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import duckdb
import pyarrow as pa

from edgestats.contracts import EDGESTATS_NAMESPACE, dataset_name, device_uuid
from edgestats.errors import ImportFileError
from edgestats.imports.checks import SourceColumn, sql_str
from edgestats.imports.identity import identity_key
from edgestats.store.database import first_row
from edgestats.version import __version__

# The runs columns every imported run gets, before those the file's columns give.
RUN_FIELDS = (
    "run_id",
    "device_id",
    "kind",
    "status",
    "error_text",
    "extra",
    "config",
    "source",
    "edgestats_version",
)
DIGEST = "_edgestats_sha1"  # a column of the converted rows: the SHA-1 a run id is made of


@dataclass
class StagedRuns:
    rows: int
    devices: list[str]  # the devices' names, sorted
    diverged: list[int]  # the rows stored as status 'diverged'


def digest_sql(file_hash: str, identity: dict, row: str = "_row") -> str:
    """SQL for the SHA-1 (hex) behind a row's run id: of the namespace's bytes and the UTF-8 of
    name_uuid's name ("import", the file's hash, the identity key if any, the row number, joined
    by \\x1f), as uuid.uuid5 hashes them."""
    key = identity_key(identity)
    head = (
        EDGESTATS_NAMESPACE.bytes + "\x1f".join(["import", file_hash, *([key] if key else []), ""]).encode()
    )
    return f"sha1(unhex('{head.hex()}') || encode(CAST({row} AS VARCHAR)))"


def run_id_sql(digest: str = DIGEST) -> str:
    """SQL for the UUID v5 of a SHA-1 in hex: its first 16 bytes, version 5, RFC 4122's variant."""
    variant = f"substr('89ab', (instr('0123456789abcdef', substr({digest}, 17, 1)) - 1) % 4 + 1, 1)"
    return (
        f"CAST(substr({digest}, 1, 12) || '5' || substr({digest}, 14, 3) || {variant} || "
        f"substr({digest}, 18, 15) AS UUID)"
    )


def stage_runs(
    con: duckdb.DuckDBPyConnection,
    plan: list[SourceColumn],
    *,
    kind: str,
    path: Path,
    file_hash: str,
    identity: dict,
    device: str | None,
) -> StagedRuns:
    """Tables `new_runs` and `new_results` from table `converted` (importer.py), in row order."""
    device_sql = _device_sql(con, path, plan, device)
    devices = sorted(r[0] for r in con.execute(f"SELECT DISTINCT {device_sql} FROM converted c").fetchall())
    _lookup_table(con, "_devices", {"device": devices, "device_id": [device_uuid(d) for d in devices]})
    run_columns = [
        c.canonical.name
        for c in plan
        if c.canonical and c.canonical.table == "runs" and c.canonical.name not in ("kind", "status")
    ]
    joins = f"JOIN _devices d ON d.device = {device_sql}"
    picked = [f"c.{name}" for name in run_columns if name != "dataset"]
    written = "NULL"
    if "dataset" in run_columns:
        _dataset_table(con)
        joins += " LEFT JOIN _datasets s ON s.written = c.dataset"
        picked.append("s.spelled AS dataset")
        written = "s.written_json"
    nan = "len(c._nan_columns) > 0"
    status = "c.status" if any(c.canonical and c.canonical.name == "status" for c in plan) else "NULL"
    has_extra = any(c.canonical is None for c in plan)
    fields = [
        "c._run_id AS run_id",
        "CAST(d.device_id AS UUID) AS device_id",
        f"{sql_str(kind)} AS kind",
        f"coalesce({status}, CASE WHEN {nan} THEN 'diverged' ELSE 'ok' END) AS status",
        f"CASE WHEN {status} IS NULL AND {nan} THEN 'imported NaN/inf in ' || "
        "array_to_string(c._nan_columns, ', ') END AS error_text",
        f"{'c._extra' if has_extra else 'CAST(NULL AS VARCHAR)'} AS extra",
        f"{_config_sql(path, file_hash, identity, written)} AS config",
        f"{sql_str(f'import:{path.name}')} AS source",
        f"{sql_str(__version__)} AS edgestats_version",
        *picked,
    ]
    con.execute(
        f"CREATE TABLE new_runs AS SELECT {', '.join(fields)} FROM converted c {joins} ORDER BY c._row"
    )
    results = [c.canonical.name for c in plan if c.canonical and c.canonical.table == "run_results"]
    con.execute(
        f"CREATE TABLE new_results AS SELECT {', '.join(['_run_id AS run_id', *results])} FROM converted"
    )
    diverged = con.execute(
        f"SELECT _row FROM converted c WHERE {status} IS NULL AND {nan} ORDER BY _row"
    ).fetchall()
    rows = first_row(con, "SELECT count(*) FROM converted")[0]
    return StagedRuns(rows, devices, [r[0] for r in diverged])


def _device_sql(
    con: duckdb.DuckDBPyConnection, path: Path, plan: list[SourceColumn], device: str | None
) -> str:
    """Each row's device: its own 'device' column, else --device; a row with neither is an error."""
    has_device = any(c.canonical and c.canonical.name == "device" for c in plan)
    given = sql_str(device) if device else "NULL"
    device_sql = f"coalesce(c.device, {given})" if has_device else given
    missing = first_row(con, f"SELECT _row FROM converted c WHERE {device_sql} IS NULL ORDER BY _row LIMIT 1")
    if missing:
        where = f"row {missing[0]} has an empty 'device'" if has_device else "the file has no 'device' column"
        raise ImportFileError(
            f"{path}: {where}; pass --device NAME (or --map a column to device); nothing was imported"
        )
    return device_sql


def _dataset_table(con: duckdb.DuckDBPyConnection) -> None:
    """Table `_datasets`: each dataset as written, its one spelling (contracts.dataset_name), and
    the JSON of the written one where they differ (the run's config keeps it)."""
    written = [
        r[0]
        for r in con.execute("SELECT DISTINCT dataset FROM converted WHERE dataset IS NOT NULL").fetchall()
    ]
    spelled = [dataset_name(w) for w in written]
    _lookup_table(
        con,
        "_datasets",
        {
            "written": written,
            "spelled": spelled,
            "written_json": [json.dumps(w) if w != s else None for w, s in zip(written, spelled)],
        },
    )


def _lookup_table(con: duckdb.DuckDBPyConnection, name: str, columns: dict[str, list]) -> None:
    table = pa.table({k: pa.array(v, pa.string()) for k, v in columns.items()})
    con.register("_edgestats_lookup", table)
    try:
        con.execute(f"CREATE TABLE {name} AS SELECT * FROM _edgestats_lookup")
    finally:
        con.unregister("_edgestats_lookup")


def _config_sql(path: Path, file_hash: str, identity: dict, written_json: str) -> str:
    """SQL for a run's config, the text json.dumps gives of: where it was imported from (file,
    row, hash, the import's identity) and the dataset as the file wrote it where that differs."""
    head = f'{{"imported_from": {json.dumps(path.name)}, "row": '
    tail = f', "sha256": {json.dumps(file_hash)}, "import": {json.dumps(identity)}'
    return (
        f"{sql_str(head)} || CAST(c._row AS VARCHAR) || {sql_str(tail)} || "
        f"coalesce(', \"dataset_as_written\": ' || {written_json}, '') || '}}'"
    )
