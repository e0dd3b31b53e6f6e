"""Schema versioning: fresh DBs, upgrades, refusing newer or foreign files, the golden schema."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import duckdb
import pytest
from golden_files import is_requested

from edgestats.errors import DatabaseError, SchemaOutdatedError, SchemaTooNewError
from edgestats.store import migrations
from edgestats.store.migrations import Migration, current_version, latest_version
from edgestats.store.results import Store

GOLDEN = Path(__file__).parents[1] / "golden" / "schema_columns.txt"

SCHEMA_COLUMNS_SQL = """
SELECT table_name, column_name, data_type, is_nullable
FROM duckdb_columns()
WHERE database_name = current_database() AND schema_name = 'main'
ORDER BY table_name, column_index
"""


def schema_text(path: Path) -> str:
    con = duckdb.connect(str(path), read_only=True)
    try:
        rows = con.execute(SCHEMA_COLUMNS_SQL).fetchall()
    finally:
        con.close()
    return "\n".join("\t".join(str(v) for v in row) for row in rows) + "\n"


def db_at_version(path: Path, version: int) -> duckdb.DuckDBPyConnection:
    """A connection to a new DB at schema `version` (the first `version` migrations, recorded as
    an older edgestats applied them), for a migration test to fill before it upgrades."""
    con = duckdb.connect(str(path))
    con.execute(migrations.CREATE_MIGRATIONS_TABLE)
    for migration in migrations.available_migrations()[:version]:
        con.execute(migration.sql)
        con.execute(
            "INSERT INTO schema_migrations (version, name, edgestats_version) VALUES (?, ?, 'old')",
            [migration.version, migration.name],
        )
    return con


def test_fresh_db_is_created_at_latest_version(tmp_path):
    path = tmp_path / "new.duckdb"
    Store.open(path).close()
    con = duckdb.connect(str(path))
    version, written_by = current_version(con)
    tables = {r[0] for r in con.execute("SELECT table_name FROM duckdb_tables()").fetchall()}
    views = {r[0] for r in con.execute("SELECT view_name FROM duckdb_views() WHERE NOT internal").fetchall()}
    con.close()
    assert version == latest_version() and written_by is not None
    assert {"devices", "runs", "phases", "latencies", "samples", "baselines", "epochs", "batches"} <= tables
    assert {"run_summary", "phase_energy", "training_summary"} <= views


def test_migrated_schema_matches_golden_file(tmp_path):
    """Any schema change must come with a new migration and an updated golden file.

    Regenerate with EDGESTATS_UPDATE_GOLDEN=schema_columns (or 1: every golden file) after adding
    a migration, and review the diff.
    """
    path = tmp_path / "golden.duckdb"
    Store.open(path).close()
    actual = schema_text(path)
    if is_requested(GOLDEN.stem):
        GOLDEN.write_text(actual)
    assert actual == GOLDEN.read_text(), "schema differs from tests/golden/schema_columns.txt"


def test_reopening_applies_nothing(tmp_path):
    path = tmp_path / "r.duckdb"
    Store.open(path).close()
    con = duckdb.connect(str(path))
    assert migrations.migrate(con) == []
    assert con.execute("SELECT count(*) FROM schema_migrations").fetchone()[0] == latest_version()
    con.close()


def _view_sql(path: Path, view: str) -> str:
    con = duckdb.connect(str(path), read_only=True)
    try:
        return con.execute("SELECT sql FROM duckdb_views() WHERE view_name = ?", [view]).fetchone()[0]
    finally:
        con.close()


def test_views_are_recreated_only_when_views_sql_changed(tmp_path, monkeypatch):
    """A writable open re-creates the views when this edgestats' views.sql differs from the one
    that made them (its fingerprint is the last view's comment), and leaves current views alone."""
    path = tmp_path / "r.duckdb"
    Store.open(path).close()
    con = duckdb.connect(str(path))
    con.execute("CREATE OR REPLACE VIEW run_summary AS SELECT 1 AS tampered")  # not views.sql's
    con.close()
    Store.open(path).close()
    assert "tampered" in _view_sql(path, "run_summary"), "views made by this views.sql are not re-created"

    changed = migrations.views_sql() + "\nCREATE OR REPLACE VIEW test_new_view AS SELECT 42 AS answer;\n"
    monkeypatch.setattr(migrations, "views_sql", lambda: changed)
    with Store.open(path) as store:
        assert store.con.execute("SELECT answer FROM test_new_view").fetchone() == (42,)
    assert "tampered" not in _view_sql(path, "run_summary"), "a new views.sql re-creates every view"


def test_migrate_command_always_recreates_the_views(tmp_path):
    from typer.testing import CliRunner

    from edgestats.cli import app

    path = tmp_path / "r.duckdb"
    Store.open(path).close()
    con = duckdb.connect(str(path))
    con.execute("CREATE OR REPLACE VIEW run_summary AS SELECT 1 AS tampered")
    con.close()
    result = CliRunner().invoke(app, ["migrate", str(path)])
    assert result.exit_code == 0, result.output
    assert "tampered" not in _view_sql(path, "run_summary")


def _with_extra_migration(monkeypatch, sql: str) -> None:
    """Pretend this edgestats ships one more migration than the real ones."""
    real = migrations.available_migrations()
    extra = Migration(real[-1].version + 1, "test_extra", sql)
    monkeypatch.setattr(migrations, "available_migrations", lambda: [*real, extra])


def test_older_db_is_upgraded_keeping_its_data(tmp_path, monkeypatch):
    from builders import make_results_db

    path = make_results_db(tmp_path / "old.duckdb")
    before = schema_text(path)
    _with_extra_migration(monkeypatch, "ALTER TABLE runs ADD COLUMN operator VARCHAR;")
    with Store.open(path) as store:
        assert store.counts()["latencies"] == 150
        assert "operator" in store.columns("runs")
        version, _ = current_version(store.con)
    assert version == latest_version()
    assert schema_text(path) != before


def test_failed_migration_rolls_back_to_previous_version(tmp_path, monkeypatch):
    path = tmp_path / "f.duckdb"
    Store.open(path).close()
    _with_extra_migration(monkeypatch, "CREATE TABLE half_done (x INTEGER); SELECT * FROM no_such_table;")
    with pytest.raises(DatabaseError, match="rolled back"):
        Store.open(path)
    con = duckdb.connect(str(path))
    tables = {r[0] for r in con.execute("SELECT table_name FROM duckdb_tables()").fetchall()}
    assert current_version(con)[0] == latest_version() - 1
    con.close()
    assert "half_done" not in tables


def test_read_only_open_of_older_db_asks_for_migrate(tmp_path, monkeypatch):
    path = tmp_path / "o.duckdb"
    Store.open(path).close()
    _with_extra_migration(monkeypatch, "ALTER TABLE runs ADD COLUMN operator VARCHAR;")
    with pytest.raises(SchemaOutdatedError, match="edgestats migrate"):
        Store.open(path, read_only=True)


def _make_newer(path: Path) -> None:
    Store.open(path).close()
    con = duckdb.connect(str(path))
    con.execute(
        "INSERT INTO schema_migrations (version, name, edgestats_version) VALUES (?, 'future', '99.0')",
        [latest_version() + 1],
    )
    con.close()


@pytest.mark.parametrize("read_only", [False, True])
def test_newer_db_is_refused_and_left_unchanged(tmp_path, read_only):
    path = tmp_path / "newer.duckdb"
    _make_newer(path)
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    with pytest.raises(SchemaTooNewError, match=r"edgestats 99\.0.*Upgrade edgestats"):
        Store.open(path, read_only=read_only)
    assert hashlib.sha256(path.read_bytes()).hexdigest() == digest


def test_foreign_duckdb_file_is_refused(tmp_path):
    path = tmp_path / "other.duckdb"
    con = duckdb.connect(str(path))
    con.execute("CREATE TABLE sales (x INTEGER)")
    con.close()
    with pytest.raises(DatabaseError, match="not an edgestats results DB"):
        Store.open(path)


def test_corrupt_file_is_refused_with_advice(tmp_path):
    path = tmp_path / "corrupt.duckdb"
    path.write_bytes(b"\x00garbage" * 500)
    with pytest.raises(DatabaseError, match="not a DuckDB database"):
        Store.open(path)


def test_truncated_db_is_refused(tmp_path):
    from builders import make_results_db

    path = make_results_db(tmp_path / "t.duckdb")
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 3])
    with pytest.raises(DatabaseError):
        with Store.open(path, read_only=True) as store:
            store.counts()


def test_noise_migration_leaves_earlier_runs_unjudged(tmp_path):
    """0004_noise on a DB of schema 3 that holds a run: the run keeps its data, and its noisy is
    NULL (nothing judged it), never false; run_summary shows the new columns."""
    path = tmp_path / "v3.duckdb"
    con = db_at_version(path, 3)  # the schema before the sentinel
    con.execute("INSERT INTO devices (device_id, name, registered_at) VALUES (uuid(), 'd', now())")
    con.execute(
        "INSERT INTO runs (run_id, device_id, kind, status, source, model, edgestats_version) "
        "SELECT uuid(), device_id, 'inference', 'ok', 'collect', 'cnn9', 'old' FROM devices"
    )
    con.close()
    with Store.open(path) as store:
        assert current_version(store.con)[0] == latest_version()
        assert store.con.execute("SELECT model, noisy, noise_reason FROM runs").fetchall() == [
            ("cnn9", None, None)
        ]
        assert store.con.execute("SELECT noisy, noise_reason FROM run_summary").fetchall() == [(None, None)]


def test_imported_epochs_migration_keeps_earlier_runs(tmp_path):
    """0005_imported_epochs on a DB of schema 4 that holds a run: the run keeps its epochs, its
    epochs_run is NULL (never invented), and training_summary derives the epoch time from the
    epochs set."""
    path = tmp_path / "v4.duckdb"
    con = db_at_version(path, 4)
    con.execute("INSERT INTO devices (device_id, name, registered_at) VALUES (uuid(), 'd', now())")
    con.execute(
        "INSERT INTO runs (run_id, device_id, kind, status, source, epochs, edgestats_version) "
        "SELECT '00000000-0000-0000-0000-000000000001', device_id, 'training', 'ok', 'import:t.csv', 4, "
        "'old' FROM devices"
    )
    con.execute(
        "INSERT INTO run_results (run_id, training_time_s) "
        "VALUES ('00000000-0000-0000-0000-000000000001', 100)"
    )
    con.close()
    with Store.open(path) as store:
        assert current_version(store.con)[0] >= 5
        assert store.con.execute(
            "SELECT epochs, epochs_run, epoch_time_s FROM training_summary"
        ).fetchall() == [(4, None, 25.0)]


def test_dataset_size_migration_aligns_names_and_fills_sizes(tmp_path):
    """0006_dataset_size on a DB of schema 5: a collected run's 'mnist:<dir>' becomes 'mnist' with
    the directory in dataset_path and the size from environment.dataset; an imported 'MNIST'
    becomes 'mnist' too (one rule, contracts.dataset_name), its size stays NULL."""
    path = tmp_path / "v5.duckdb"
    con = db_at_version(path, 5)
    con.execute("INSERT INTO devices (device_id, name, registered_at) VALUES (uuid(), 'd', now())")
    environment = (
        '{"dataset": {"format": "mnist", "root": "/data/mnist-small", "name": "mnist:mnist-small", '
        '"n_train": 800, "n_test": 200, "image_hw": [28, 28], "channels": 1, "bytes": 785000}}'
    )
    rows = [
        ("collect", "mnist:mnist-small", environment),
        ("import:t.csv", "MNIST", None),
        (
            "collect",
            "imagefolder:My-JPEGs",
            '{"dataset": {"root": "/d/My-JPEGs", "n_train": 96, "n_test": 16, '
            '"image_hw": null, "channels": null, "bytes": 9000000000}}',
        ),
    ]
    for i, (source, dataset, env) in enumerate(rows):
        con.execute(
            "INSERT INTO runs "
            "(run_id, device_id, kind, status, source, dataset, environment, edgestats_version) "
            "SELECT ?, device_id, 'training', 'ok', ?, ?, ?, 'old' FROM devices",
            [f"00000000-0000-0000-0000-00000000000{i}", source, dataset, env],
        )
    con.close()
    with Store.open(path) as store:
        got = store.con.execute(
            "SELECT dataset, dataset_path, dataset_samples, dataset_test_samples, dataset_bytes, "
            "dataset_image_h, dataset_image_w, dataset_image_c FROM training_summary ORDER BY run_id"
        ).fetchall()
    assert got == [
        ("mnist", "/data/mnist-small", 800, 200, 785000, 28, 28, 1),
        ("mnist", None, None, None, None, None, None, None),
        ("myjpegs", "/d/My-JPEGs", 96, 16, 9000000000, None, None, None),
    ]


def test_latency_percentiles_migration_moves_them_out_of_extra(tmp_path):
    """0007_latency_percentiles on a DB of schema 6 holding a native import (its percentiles in
    runs.extra): they become run_results columns, leave extra (and extra is NULL when nothing else
    was in it), and run_summary shows the run's median and tails as its tool printed them."""
    path = tmp_path / "v6.duckdb"
    con = db_at_version(path, 6)
    con.execute("INSERT INTO devices (device_id, name, registered_at) VALUES (uuid(), 'orin', now())")
    extras = {
        1: '{"latency_p50_ms": "0.636227", "latency_p90_ms": "0.640258", "latency_p99_ms": "0.643843", '
        '"latency_p99_9_ms": "0.649539", "scenario": "SingleStream"}',
        2: '{"latency_p50_ms": "1239.807"}',
        3: None,
    }
    for i, extra in extras.items():
        con.execute(
            "INSERT INTO runs (run_id, device_id, kind, status, source, edgestats_version, extra) "
            f"SELECT '00000000-0000-0000-0000-00000000000{i}', device_id, 'inference', 'ok', 'import:x', "
            "'old', ? FROM devices",
            [extra],
        )
        con.execute(
            "INSERT INTO run_results (run_id, latency_ms) "
            f"VALUES ('00000000-0000-0000-0000-00000000000{i}', {i}.5)"
        )
    con.close()
    with Store.open(path) as store:
        assert current_version(store.con)[0] >= 7
        rows = store.con.execute(
            "SELECT r.extra, s.latency_median_ms, s.latency_p90_ms, s.latency_p99_ms, "
            "s.latency_mean_ms FROM runs r JOIN run_summary s USING (run_id) ORDER BY run_id"
        ).fetchall()
    assert [(json.loads(r[0]) if r[0] else None, *r[1:]) for r in rows] == [
        ({"latency_p99_9_ms": "0.649539", "scenario": "SingleStream"}, 0.636227, 0.640258, 0.643843, 1.5),
        (None, 1239.807, None, None, 2.5),
        (None, 3.5, None, None, 3.5),
    ]
