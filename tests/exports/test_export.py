"""`edgestats export --parquet`: the SQL it builds, the layout and manifest it writes, and how it
treats the DB and the target folder. Read-back by three engines: test_export_readback.py; the
command: test_export_cli.py."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import duckdb
import polars as pl
import pytest
from builders import make_results_db
from export_builders import ALL_TABLES, as_counts

import edgestats.exports.parquet as export_module
from edgestats.errors import DatabaseError, SchemaTooNewError
from edgestats.exports.parquet import (
    MANIFEST_NAME,
    ExportError,
    copy_sql,
    device_source,
    export_parquet,
    export_select_sql,
    parquet_column,
    read_manifest,
)
from edgestats.store.migrations import latest_version
from edgestats.store.results import Store
from edgestats.version import __version__


def db_sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# -- pure SQL builders --------------------------------------------------------------------------


def test_column_types_are_ones_spark_reads():
    assert parquet_column("run_id", "UUID") == ('CAST("run_id" AS VARCHAR) AS "run_id"', "VARCHAR")
    assert parquet_column("facts", "JSON", qualifier="src") == (
        'CAST(src."facts" AS VARCHAR) AS "facts"',
        "VARCHAR",
    )
    assert parquet_column("t", "TIMESTAMP_NS")[1] == "TIMESTAMP"
    assert parquet_column("at", "TIMESTAMP WITH TIME ZONE") == ('"at" AS "at"', "TIMESTAMP WITH TIME ZONE")
    assert parquet_column("n", "BIGINT") == ('"n" AS "n"', "BIGINT")
    assert parquet_column("ids", "UUID[]")[0] == 'CAST(to_json("ids") AS VARCHAR) AS "ids"'
    assert parquet_column("xs", "DOUBLE[]") == ('"xs" AS "xs"', "DOUBLE[]")


def test_device_id_comes_from_the_table_or_its_run():
    tables = {"runs", "latencies", "devices", "schema_migrations"}
    assert device_source("devices", {"device_id": "UUID", "name": "VARCHAR"}, tables) == "own"
    assert device_source("runs", {"run_id": "UUID", "device_id": "UUID"}, tables) == "own"
    assert device_source("latencies", {"run_id": "UUID", "latency_ns": "BIGINT"}, tables) == "runs"
    assert device_source("schema_migrations", {"version": "INTEGER"}, tables) is None

    select, columns = export_select_sql("latencies", {"run_id": "UUID", "latency_ns": "BIGINT"}, "runs")
    assert 'LEFT JOIN "runs" AS run ON run."run_id" = src."run_id"' in select  # never drops a row
    assert [c[0] for c in columns] == [
        "run_id",
        "latency_ns",
        "device_id",
    ]  # device_id last, as readers see it
    select, columns = export_select_sql(
        "runs", {"run_id": "UUID", "device_id": "UUID", "model": "VARCHAR"}, "own"
    )
    assert [c[0] for c in columns] == ["run_id", "model", "device_id"] and "JOIN" not in select

    assert 'PARTITION_BY ("device_id")' in copy_sql("SELECT 1", "/x/runs", partitioned=True)
    assert (
        copy_sql("SELECT 1", "/x/it's.parquet", partitioned=False)
        == "COPY (SELECT 1) TO '/x/it''s.parquet' (FORMAT parquet)"
    )


# -- the export on disk ------------------------------------------------------------------------


def test_export_layout_and_manifest(results_db: Path, tmp_path: Path):
    out = tmp_path / "export"
    manifest = export_parquet(results_db, out)
    with Store.open(results_db, read_only=True) as store:
        counts = store.counts()
        device_id = str(store.con.execute("SELECT device_id FROM devices").fetchone()[0])

    assert read_manifest(out) == json.loads(json.dumps(manifest))
    assert manifest["schema_version"] == latest_version() and manifest["edgestats_version"] == __version__
    assert manifest["exported_at"].endswith("+00:00")
    assert set(manifest["tables"]) == ALL_TABLES
    for table, n in counts.items():
        assert manifest["tables"][table]["rows"] == n, table
    for table in ("runs", "latencies", "samples", "phases", "epochs", "batches", "devices"):
        entry = manifest["tables"][table]
        assert entry["partitioned_by"] == ["device_id"]
        assert entry["partitions"] == [{"device_id": device_id, "rows": counts[table]}]
        assert [f["path"] for f in entry["files"]] == [f"{table}/device_id={device_id}/part-0.parquet"]
        assert (out / entry["files"][0]["path"]).is_file()
        assert entry["columns"][-1] == {
            "name": "device_id",
            "type": "VARCHAR",
            "db_type": "UUID" if table in ("runs", "devices") else "UUID (from runs)",
        }
    # Tables with no rows: one zero-row file holding the columns, listed as empty.
    for table in ("baselines", "run_results"):
        entry = manifest["tables"][table]
        assert entry["rows"] == 0 and entry["partitioned_by"] == [] and entry["partitions"] == []
        [listed] = entry["files"]
        assert (listed["path"], listed["rows"]) == (f"{table}/part-0.parquet", 0)
        assert listed["bytes"] == (out / listed["path"]).stat().st_size and len(listed["sha256"]) == 64
    runs_columns = {c["name"]: c for c in manifest["tables"]["runs"]["columns"]}
    assert runs_columns["config"] == {"name": "config", "type": "VARCHAR", "db_type": "JSON"}
    assert runs_columns["run_id"]["type"] == "VARCHAR"
    assert manifest["tables"]["schema_migrations"]["rows"] == latest_version()  # one row per migration
    assert manifest["tables"]["schema_migrations"]["partitioned_by"] == []
    # Nothing is left beside the export.
    assert sorted(p.name for p in tmp_path.iterdir()) == ["export", "results.duckdb"]


def test_export_never_changes_the_db(results_db: Path, tmp_path: Path):
    before = db_sha256(results_db)
    export_parquet(results_db, tmp_path / "export")
    assert db_sha256(results_db) == before
    assert not Path(str(results_db) + ".wal").exists()


def test_parquet_files_hold_no_uuid_or_json_types(results_db: Path, tmp_path: Path):
    out = tmp_path / "export"
    export_parquet(results_db, out)
    rows = duckdb.sql(
        f"SELECT name, type, logical_type, converted_type FROM parquet_schema('{out}/**/*.parquet')"
    ).fetchall()
    assert rows
    for name, physical, logical, converted in rows:
        assert "UUID" not in str(logical) and "JSON" not in str(logical) and "JSON" not in str(converted), (
            name
        )
        assert physical != "FIXED_LEN_BYTE_ARRAY", name
        assert "NANOS=NanoSeconds" not in str(logical), name


def test_rows_whose_run_is_missing_are_kept_with_a_null_device(results_db: Path, tmp_path: Path):
    con = duckdb.connect(str(results_db))
    con.execute("INSERT INTO latencies (run_id, iteration, warmup, latency_ns) VALUES (uuid(), 0, false, 5)")
    con.close()
    out = tmp_path / "export"
    manifest = export_parquet(results_db, out)
    partitions = {p["device_id"]: p["rows"] for p in manifest["tables"]["latencies"]["partitions"]}
    assert partitions[None] == 1 and sum(partitions.values()) == 151
    got = as_counts(
        duckdb.sql(
            f"SELECT device_id, count(*) FROM read_parquet('{out}/latencies/**/*.parquet', "
            "hive_partitioning=true) GROUP BY ALL"
        ).fetchall()
    )
    assert got[None] == 1 and sum(got.values()) == 151
    frame = pl.scan_parquet(out / "latencies", hive_partitioning=True).collect()
    assert frame.height == 151 and frame["device_id"].null_count() == 1


# -- errors and the target folder ---------------------------------------------------------------


def test_missing_db_says_what_to_do(tmp_path: Path):
    with pytest.raises(DatabaseError, match="no such file"):
        export_parquet(tmp_path / "nope.duckdb", tmp_path / "export")
    assert not (tmp_path / "export").exists()


def test_newer_schema_is_refused_and_nothing_is_written(results_db: Path, tmp_path: Path):
    con = duckdb.connect(str(results_db))
    con.execute(
        "INSERT INTO schema_migrations (version, name, edgestats_version) VALUES (999, 'future', '9.0')"
    )
    con.close()
    with pytest.raises(SchemaTooNewError, match="Upgrade edgestats"):
        export_parquet(results_db, tmp_path / "export")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["results.duckdb"]


def test_target_that_is_a_file_is_refused(results_db: Path, tmp_path: Path):
    target = tmp_path / "export"
    target.write_text("not a folder")
    with pytest.raises(ExportError, match="is a file"):
        export_parquet(results_db, target, overwrite=True)
    assert target.read_text() == "not a folder"


def test_non_empty_target_is_refused_without_overwrite(results_db: Path, tmp_path: Path):
    out = tmp_path / "export"
    export_parquet(results_db, out)
    before = sorted(p.relative_to(out) for p in out.rglob("*"))
    with pytest.raises(ExportError, match="--overwrite"):
        export_parquet(results_db, out)
    assert sorted(p.relative_to(out) for p in out.rglob("*")) == before


def test_an_empty_target_folder_is_used(results_db: Path, tmp_path: Path):
    out = tmp_path / "export"
    out.mkdir()
    export_parquet(results_db, out)
    assert (out / MANIFEST_NAME).is_file()


def test_overwrite_replaces_an_earlier_export_without_mixing(tmp_path: Path):
    first = make_results_db(tmp_path / "a.duckdb", device_name="jetson-nano", n_runs=3, seed0=0)
    second = make_results_db(tmp_path / "b.duckdb", device_name="rpi4", n_runs=1, seed0=50)
    out = tmp_path / "export"
    export_parquet(first, out)
    manifest = export_parquet(second, out, overwrite=True)  # a file of the user's: test_export_leftovers.py
    assert manifest["tables"]["runs"]["rows"] == 2
    device_dirs = {p.name for p in (out / "runs").iterdir()}
    assert device_dirs == {f"device_id={manifest['tables']['runs']['partitions'][0]['device_id']}"}
    assert duckdb.sql(
        f"SELECT count(*) FROM read_parquet('{out}/runs/**/*.parquet', hive_partitioning=true)"
    ).fetchall() == [(2,)]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.duckdb", "b.duckdb", "export"]


def test_overwrite_never_deletes_a_folder_that_is_not_an_export(results_db: Path, tmp_path: Path):
    out = tmp_path / "mine"
    out.mkdir()
    (out / "thesis.tex").write_text("precious")
    with pytest.raises(ExportError, match="no edgestats export"):
        export_parquet(results_db, out, overwrite=True)
    assert (out / "thesis.tex").read_text() == "precious"


def test_export_folder_around_the_db_is_refused(tmp_path: Path):
    (tmp_path / "data").mkdir()
    db = make_results_db(tmp_path / "data" / "results.duckdb")
    with pytest.raises(ExportError, match="holds the DB"):
        export_parquet(db, tmp_path / "data", overwrite=True)
    assert db.is_file()


def test_a_failed_export_leaves_the_earlier_one_untouched(results_db: Path, tmp_path: Path, monkeypatch):
    out = tmp_path / "export"
    export_parquet(results_db, out)
    before = {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()}
    real_write = export_module._write_table
    calls = []

    def failing_write(con, table, root, names):
        calls.append(table.name)
        if len(calls) == 4:
            raise OSError(28, "No space left on device")
        return real_write(con, table, root, names)

    monkeypatch.setattr(export_module, "_write_table", failing_write)
    with pytest.raises(ExportError, match="No space left.*was not changed"):
        export_parquet(results_db, out, overwrite=True)
    assert {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()} == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["export", "results.duckdb"]  # no temp folder left


def test_an_interrupted_first_export_leaves_no_folder(results_db: Path, tmp_path: Path, monkeypatch):
    def interrupted(*args):
        raise KeyboardInterrupt

    monkeypatch.setattr(export_module, "_write_table", interrupted)
    with pytest.raises(KeyboardInterrupt):
        export_parquet(results_db, tmp_path / "export")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["results.duckdb"]
