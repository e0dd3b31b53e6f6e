"""`edgestats export --parquet`: read back by DuckDB, polars and Spark with the DB's row counts."""

from __future__ import annotations

import hashlib
import json
import uuid
from pathlib import Path

import duckdb
import polars as pl
import pytest
from typer.testing import CliRunner

import edgestats.export as export_module
from builders import make_results_db, write_inference_run, write_training_run
from edgestats import __version__
from edgestats.cli import app
from edgestats.errors import DatabaseError, SchemaTooNewError
from edgestats.export import (
    MANIFEST_NAME,
    ExportError,
    copy_sql,
    device_source,
    export_parquet,
    export_select_sql,
    parquet_column,
    read_manifest,
)
from edgestats.migrations import latest_version
from edgestats.store import Store

ALL_TABLES = {"devices", "runs", "run_results", "phases", "latencies", "samples", "baselines", "epochs",
              "batches", "phase_energies", "sensor_notes", "schema_migrations"}

# Independent of the exporter: how each table's rows belong to a device, in SQL on the DB.
DEVICE_OF = {
    "devices": "device_id", "runs": "device_id", "baselines": "device_id",
    "schema_migrations": "NULL",
}
DEVICE_VIA_RUN = "(SELECT r.device_id FROM runs r WHERE r.run_id = t.run_id)"


def make_two_device_db(path: Path) -> tuple[Path, uuid.UUID, uuid.UUID]:
    """What `merge` produces from two devices' files: two devices, their runs, a baseline,
    an imported-style run with run_results, and JSON facts."""
    with Store.open(path) as store:
        nano = store.register_device({"name": "jetson-nano", "arch": "aarch64", "cores": 4,
                                      "facts": {"l4t": "32.7.1", "rails": ["VDD_IN"]}})
        rpi = store.register_device({"name": "rpi4", "arch": "aarch64", "cores": 4, "mem_total_bytes": 4 << 30})
        for i in range(3):
            write_inference_run(store, nano, seed=i, framework=["pytorch", "onnxruntime"][i % 2])
        for i in range(2):
            write_inference_run(store, rpi, seed=100 + i, n_latencies=30, n_samples=20)
        write_training_run(store, nano, seed=0)
        write_training_run(store, rpi, seed=100)
        store.write_run({"device_id": rpi, "kind": "inference", "status": "error", "error_text": "out of memory",
                         "framework": "tflite", "model": "mobilenet_v2", "source": "import:old.csv",
                         "hyperparameters": {"batch_size": 8}},
                        results={"latency_ms": 12.5, "energy_j": 3.25})
        store.write_baseline({"device_id": nano, "seconds": 60.0, "source": "jetson", "mean_power_w": 1.9,
                              "std_power_w": 0.05, "n": 600})
    return path, nano, rpi


def expected_counts(db: Path) -> dict[str, dict[str | None, int]]:
    """Per table: rows per device_id (None for rows without one), straight from the DB."""
    con = duckdb.connect(str(db), read_only=True)
    try:
        out = {}
        for table in ALL_TABLES:
            device = DEVICE_OF.get(table, DEVICE_VIA_RUN)
            rows = con.execute(f"SELECT CAST({device} AS VARCHAR) AS d, count(*) FROM {table} t GROUP BY d").fetchall()
            out[table] = dict(rows)
        return out
    finally:
        con.close()


def as_counts(rows) -> dict[str | None, int]:
    return {d: n for d, n in rows}


def db_sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture(params=["single", "merged"])
def exported(request, tmp_path: Path, results_db: Path):
    """(export folder, expected per-device counts, manifest) for both kinds of DB."""
    if request.param == "single":
        db = results_db
    else:
        db, _, _ = make_two_device_db(tmp_path / "merged.duckdb")
    out = tmp_path / "export"
    manifest = export_parquet(db, out)
    return out, expected_counts(db), manifest


# -- pure SQL builders --------------------------------------------------------------------------


def test_column_types_are_ones_spark_reads():
    assert parquet_column("run_id", "UUID") == ('CAST("run_id" AS VARCHAR) AS "run_id"', "VARCHAR")
    assert parquet_column("facts", "JSON", qualifier="src") == ('CAST(src."facts" AS VARCHAR) AS "facts"', "VARCHAR")
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
    assert [c[0] for c in columns] == ["run_id", "latency_ns", "device_id"]  # device_id last, as readers see it
    select, columns = export_select_sql("runs", {"run_id": "UUID", "device_id": "UUID", "model": "VARCHAR"}, "own")
    assert [c[0] for c in columns] == ["run_id", "model", "device_id"] and "JOIN" not in select

    assert "PARTITION_BY (\"device_id\")" in copy_sql("SELECT 1", "/x/runs", partitioned=True)
    assert copy_sql("SELECT 1", "/x/it's.parquet", partitioned=False) == "COPY (SELECT 1) TO '/x/it''s.parquet' (FORMAT parquet)"


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
        assert entry["columns"][-1] == {"name": "device_id", "type": "VARCHAR",
                                        "db_type": "UUID" if table in ("runs", "devices") else "UUID (from runs)"}
    # Tables with no rows: one zero-row file holding the columns, listed as empty.
    for table in ("baselines", "run_results"):
        entry = manifest["tables"][table]
        assert entry["rows"] == 0 and entry["partitioned_by"] == [] and entry["partitions"] == []
        assert entry["files"] == [{"path": f"{table}/part-0.parquet", "rows": 0}]
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
        assert "UUID" not in str(logical) and "JSON" not in str(logical) and "JSON" not in str(converted), name
        assert physical != "FIXED_LEN_BYTE_ARRAY", name
        assert "NANOS=NanoSeconds" not in str(logical), name


# -- read back by three engines ---------------------------------------------------------------


def test_duckdb_reads_back_every_table(exported):
    out, expected, manifest = exported
    got, columns = {}, {}
    con = duckdb.connect()
    for table in ALL_TABLES:
        rel = con.sql(f"SELECT * FROM read_parquet('{out}/{table}/**/*.parquet', hive_partitioning=true)")
        columns[table] = rel.columns
        device = "device_id" if "device_id" in rel.columns else "NULL"
        got[table] = as_counts(con.sql(
            f"SELECT CAST({device} AS VARCHAR), count(*) FROM read_parquet('{out}/{table}/**/*.parquet', "
            "hive_partitioning=true) GROUP BY ALL").fetchall())
    assert got == expected
    assert columns == {t: [c["name"] for c in manifest["tables"][t]["columns"]] for t in ALL_TABLES}


def test_polars_reads_back_every_table(exported):
    out, expected, manifest = exported
    got, columns = {}, {}
    for table in ALL_TABLES:
        frame = pl.scan_parquet(out / table, hive_partitioning=True).collect()
        columns[table] = frame.columns
        if "device_id" in frame.columns:
            got[table] = as_counts(frame.group_by("device_id").len().iter_rows())
        else:
            got[table] = {None: frame.height} if frame.height else {}
    assert got == expected
    assert columns == {t: [c["name"] for c in manifest["tables"][t]["columns"]] for t in ALL_TABLES}
    runs = pl.scan_parquet(out / "runs", hive_partitioning=True).collect()
    assert runs.schema["started_at"] == pl.Datetime("us", "UTC")
    assert runs.schema["run_id"] == pl.String
    assert all(json.loads(c)["seed"] >= 0 for c in runs["config"].drop_nulls())


@pytest.fixture(scope="module")
def spark():
    """One local Spark for the module, set up to start fast. If Spark cannot start, the tests
    that use it fail (they are part of the export's contract), they do not skip."""
    from pyspark.sql import SparkSession

    session = (
        SparkSession.builder.master("local[1]")
        .appName("edgestats-export-test")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "1")
        .config("spark.sql.adaptive.enabled", "false")  # no re-planning of tiny queries
        # C1-only JIT and a serial GC: a short-lived JVM warms up in about half the time.
        .config("spark.driver.extraJavaOptions", "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.sql.session.timeZone", "UTC")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


@pytest.mark.filterwarnings("ignore:PySpark does not yet fully support pandas:FutureWarning")
def test_spark_reads_back_every_table(spark, exported):
    from pyspark.sql import functions as F

    out, expected, manifest = exported
    columns, per_table = {}, []
    for table in sorted(ALL_TABLES):
        frame = spark.read.parquet(str(out / table))
        columns[table] = frame.columns
        device = F.col("device_id") if "device_id" in frame.columns else F.lit(None).cast("string")
        per_table.append(frame.select(F.lit(table).alias("table"), device.alias("device_id")))
    # One Spark job counts every table (one job per table costs ~0.5 s each on local[1]).
    union = per_table[0]
    for frame in per_table[1:]:
        union = union.unionByName(frame)
    got: dict[str, dict[str | None, int]] = {t: {} for t in ALL_TABLES}
    for table, device_id, n in union.groupBy("table", "device_id").count().collect():
        got[table][device_id] = n
    assert got == expected
    assert columns == {t: [c["name"] for c in manifest["tables"][t]["columns"]] for t in ALL_TABLES}
    # Timestamps arrive as Spark timestamps with the DB's instants (to the microsecond).
    spark_at = {r[0]: r[1] for r in spark.read.parquet(str(out / "devices"))
                .selectExpr("device_id", "unix_micros(registered_at)").collect()}
    db_at = {d: us for d, us in duckdb.sql(
        f"SELECT device_id, epoch_us(registered_at) FROM read_parquet('{out}/devices/**/*.parquet', "
        "hive_partitioning=true)").fetchall()}
    assert spark_at == db_at and len(spark_at) == len(expected["devices"])
    assert dict(spark.read.parquet(str(out / "runs")).dtypes)["started_at"] == "timestamp"


def test_rows_whose_run_is_missing_are_kept_with_a_null_device(results_db: Path, tmp_path: Path):
    con = duckdb.connect(str(results_db))
    con.execute("INSERT INTO latencies (run_id, iteration, warmup, latency_ns) VALUES (uuid(), 0, false, 5)")
    con.close()
    out = tmp_path / "export"
    manifest = export_parquet(results_db, out)
    partitions = {p["device_id"]: p["rows"] for p in manifest["tables"]["latencies"]["partitions"]}
    assert partitions[None] == 1 and sum(partitions.values()) == 151
    got = as_counts(duckdb.sql(f"SELECT device_id, count(*) FROM read_parquet('{out}/latencies/**/*.parquet', "
                               "hive_partitioning=true) GROUP BY ALL").fetchall())
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
    con.execute("INSERT INTO schema_migrations (version, name, edgestats_version) VALUES (999, 'future', '9.0')")
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
    (out / "runs" / "stray.parquet").write_bytes(b"left over")
    manifest = export_parquet(second, out, overwrite=True)
    assert manifest["tables"]["runs"]["rows"] == 2
    assert not (out / "runs" / "stray.parquet").exists()
    device_dirs = {p.name for p in (out / "runs").iterdir()}
    assert device_dirs == {f"device_id={manifest['tables']['runs']['partitions'][0]['device_id']}"}
    assert duckdb.sql(f"SELECT count(*) FROM read_parquet('{out}/runs/**/*.parquet', hive_partitioning=true)"
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


# -- the command ---------------------------------------------------------------------------------

runner = CliRunner()


def test_cli_export_prints_what_it_wrote(results_db: Path, tmp_path: Path):
    out = tmp_path / "export"
    result = runner.invoke(app, ["export", str(results_db), "--parquet", str(out)])
    assert result.exit_code == 0, result.output
    assert "latencies" in result.stdout and "150 rows" in result.stdout and "1 device(s)" in result.stdout
    assert "baselines" in result.stdout and "empty" in result.stdout
    assert f"to {out}" in result.stdout
    assert read_manifest(out)["tables"]["latencies"]["rows"] == 150


def test_cli_export_help():
    result = runner.invoke(app, ["export", "--help"])
    assert result.exit_code == 0
    for text in ("--parquet", "--overwrite", "hive-partitioned", "device_id=UUID", "read-only", MANIFEST_NAME):
        assert text in result.output, text


def test_cli_refuses_a_non_empty_folder_then_overwrites(results_db: Path, tmp_path: Path):
    out = tmp_path / "export"
    assert runner.invoke(app, ["export", str(results_db), "--parquet", str(out)]).exit_code == 0
    refused = runner.invoke(app, ["export", str(results_db), "--parquet", str(out)])
    assert refused.exit_code == 1
    assert refused.stderr.startswith("error: ") and "--overwrite" in refused.stderr
    assert "Traceback" not in refused.output
    again = runner.invoke(app, ["export", str(results_db), "--parquet", str(out), "--overwrite"])
    assert again.exit_code == 0, again.output
    assert read_manifest(out)["tables"]["runs"]["rows"] == 4


def test_cli_missing_db_is_one_line(tmp_path: Path):
    result = runner.invoke(app, ["export", str(tmp_path / "nope.duckdb"), "--parquet", str(tmp_path / "x")])
    assert result.exit_code == 1
    assert result.stderr.strip().startswith("error: ") and "no such file" in result.stderr
    assert not (tmp_path / "x").exists()


def test_cli_needs_the_parquet_option(results_db: Path):
    result = runner.invoke(app, ["export", str(results_db)])
    assert result.exit_code != 0 and "--parquet" in result.output
