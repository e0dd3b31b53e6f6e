"""Migration 0010 (fleet): runs gain device_class, unit_id and tags; an old DB migrates with them
NULL, and merge, export, `export --append`, a lake and `edgestats sql` carry them as stored."""

from __future__ import annotations

import json
import uuid

import duckdb
from builders import write_inference_run
from typer.testing import CliRunner

from edgestats.cli import app
from edgestats.exports.append import append_parquet
from edgestats.exports.merge import merge
from edgestats.exports.parquet import export_parquet
from edgestats.store import migrations
from edgestats.store.lake import reading_lake
from edgestats.store.results import Store

FLEET_SQL = (
    "SELECT device_class, unit_id, tags->>'$.lab' AS lab FROM run_summary "
    "ORDER BY device_class NULLS FIRST, unit_id, lab NULLS FIRST"
)


def db_at_version_9(path) -> uuid.UUID:
    con = duckdb.connect(str(path))
    con.execute(migrations.CREATE_MIGRATIONS_TABLE)
    for migration in migrations.available_migrations()[:9]:
        con.execute(migration.sql)
        con.execute(
            "INSERT INTO schema_migrations (version, name, edgestats_version) VALUES (?, ?, 'old')",
            [migration.version, migration.name],
        )
    run_id = uuid.UUID(int=7)
    con.execute(
        "INSERT INTO runs (run_id, device_id, kind, status, model, edgestats_version, source) "
        "VALUES (?, ?, 'inference', 'ok', 'cnn9', 'old', 'collect')",
        [str(run_id), str(uuid.UUID(int=99))],
    )
    con.close()
    return run_id


def test_an_old_db_migrates_with_the_fleet_columns_null(tmp_path):
    path = tmp_path / "v9.duckdb"
    run_id = db_at_version_9(path)
    with Store.open(path) as store:
        assert migrations.current_version(store.con)[0] == 10
        row = store.con.execute("SELECT run_id, model, device_class, unit_id, tags FROM runs").fetchall()
        assert row == [(run_id, "cnn9", None, None, None)]
        assert store.con.execute("SELECT device_class, unit_id, tags FROM run_summary").fetchall() == [
            (None, None, None)
        ]


def fleet_db(path, name, runs):
    """A DB of one device whose runs carry (device_class, unit_id, tags)."""
    with Store.open(path) as store:
        device = store.register_device({"name": name, "arch": "aarch64", "cores": 4})
        for seed, (klass, unit, tags) in enumerate(runs):
            run_id = write_inference_run(
                store, device, seed=seed + 10 * len(name), n_latencies=12, n_samples=4
            )
            store.con.execute(
                "UPDATE runs SET device_class = ?, unit_id = ?, tags = ? WHERE run_id = ?",
                [klass, unit, json.dumps(tags) if tags is not None else None, run_id],
            )
    return path


def test_merge_export_append_and_sql_carry_the_fleet_columns(tmp_path):
    a = fleet_db(tmp_path / "a.duckdb", "pi5-01", [("pi5", "SN1", {"lab": "b2"}), ("pi5", "SN1", None)])
    b = fleet_db(tmp_path / "b.duckdb", "pi5-02", [("pi5", "SN2", {"lab": "b3"}), (None, None, None)])
    expected = [(None, None, None), ("pi5", "SN1", None), ("pi5", "SN1", "b2"), ("pi5", "SN2", "b3")]
    merged = tmp_path / "m.duckdb"
    merge(merged, [a, b])
    with Store.open(merged, read_only=True) as store:
        assert store.con.execute(FLEET_SQL).fetchall() == expected
    lake = tmp_path / "lake"
    export_parquet(a, lake)
    append_parquet(b, lake)
    with reading_lake(lake) as store:
        assert store.con.execute(FLEET_SQL).fetchall() == expected
        types = dict(store.con.execute("SELECT column_name, column_type FROM (DESCRIBE runs)").fetchall())
        assert types["device_class"] == "VARCHAR" and types["unit_id"] == "VARCHAR"
    for where in (str(merged), str(lake)):
        result = CliRunner().invoke(app, ["sql", where, FLEET_SQL, "--format", "json"])
        assert result.exit_code == 0, result.output
        assert [tuple(r.values()) for r in json.loads(result.output)] == expected


def test_an_imported_table_may_give_the_class_and_unit(tmp_path):
    table = tmp_path / "published.csv"
    table.write_text(
        "device,framework,model,latency_ms,device_class,unit_id\npi5-01,tflite,cnn9,12.5,pi5,SN1\n"
    )
    db = tmp_path / "i.duckdb"
    result = CliRunner().invoke(app, ["import", str(db), str(table), "--kind", "inference"])
    assert result.exit_code == 0, result.output
    with Store.open(db, read_only=True) as store:
        assert store.con.execute("SELECT device, device_class, unit_id FROM run_summary").fetchall() == [
            ("pi5-01", "pi5", "SN1")
        ]
