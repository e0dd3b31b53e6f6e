"""`edgestats export --parquet` read back by DuckDB, polars and Spark with the DB's row counts,
for a one-device DB, a merged two-device one, and a lake built by `export --append` of two DBs
(whose counts are those of the two merged)."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import polars as pl
import pytest
from builders import make_results_db
from export_builders import ALL_TABLES, as_counts, expected_counts, make_two_device_db

from edgestats.exports.append import append_parquet
from edgestats.exports.merge import merge
from edgestats.exports.parquet import export_parquet, read_manifest

# One xdist worker runs this whole module: its module-scoped fixtures (framework imports, built
# models, converted files) are built once instead of once per worker that gets one of its tests.
pytestmark = pytest.mark.xdist_group("spark-readback")


@pytest.fixture(params=["single", "merged", "appended"])
def exported(request, tmp_path: Path, results_db: Path):
    """(export folder, expected per-device counts, manifest) for each kind of export."""
    out = tmp_path / "export"
    if request.param == "appended":
        other = make_results_db(tmp_path / "other.duckdb", device_name="raspberry-pi-4", seed0=100)
        export_parquet(results_db, out)
        append_parquet(other, out)
        merged = tmp_path / "both.duckdb"
        merge(merged, [results_db, other])
        return out, expected_counts(merged), read_manifest(out)
    if request.param == "single":
        db = results_db
    else:
        db, _, _ = make_two_device_db(tmp_path / "merged.duckdb")
    manifest = export_parquet(db, out)
    return out, expected_counts(db), manifest


@pytest.mark.slow
def test_duckdb_reads_back_every_table(exported):
    out, expected, manifest = exported
    got, columns = {}, {}
    con = duckdb.connect()
    for table in ALL_TABLES:
        rel = con.sql(f"SELECT * FROM read_parquet('{out}/{table}/**/*.parquet', hive_partitioning=true)")
        columns[table] = rel.columns
        device = "device_id" if "device_id" in rel.columns else "NULL"
        got[table] = as_counts(
            con.sql(
                f"SELECT CAST({device} AS VARCHAR), count(*) FROM read_parquet('{out}/{table}/**/*.parquet', "
                "hive_partitioning=true) GROUP BY ALL"
            ).fetchall()
        )
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


@pytest.mark.spark
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
    spark_at = {
        r[0]: r[1]
        for r in spark.read.parquet(str(out / "devices"))
        .selectExpr("device_id", "unix_micros(registered_at)")
        .collect()
    }
    db_at = {
        d: us
        for d, us in duckdb.sql(
            f"SELECT device_id, epoch_us(registered_at) FROM read_parquet('{out}/devices/**/*.parquet', "
            "hive_partitioning=true)"
        ).fetchall()
    }
    assert spark_at == db_at and len(spark_at) == len(expected["devices"])
    assert dict(spark.read.parquet(str(out / "runs")).dtypes)["started_at"] == "timestamp"
