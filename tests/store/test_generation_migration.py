"""Migration 0009 (generation): the runs table is re-created so that its kind CHECK admits
'generation'; every stored run keeps every value, and the table keeps its key and constraints."""

from __future__ import annotations

import uuid

import duckdb
import pytest

from edgestats.store import migrations
from edgestats.store.results import Store

OLD_RUN_COLUMNS = """run_id, device_id, kind, status, framework, model, batch_size, threads, precision,
    iterations, warmup, epochs, learning_rate, config, environment, power_rails, noisy, steady_from,
    dataset_samples, edgestats_version, source, started_at"""


def db_at_version_8(path) -> None:
    con = duckdb.connect(str(path))
    con.execute(migrations.CREATE_MIGRATIONS_TABLE)
    for migration in migrations.available_migrations()[:8]:
        con.execute(migration.sql)
        con.execute(
            "INSERT INTO schema_migrations (version, name, edgestats_version) VALUES (?, ?, 'old')",
            [migration.version, migration.name],
        )
    con.execute("CREATE VIEW old_view AS SELECT run_id, kind FROM runs")  # views read runs, as 0008's did
    for k, kind in enumerate(("inference", "training")):
        con.execute(
            f"INSERT INTO runs ({OLD_RUN_COLUMNS}) VALUES (?, ?, ?, 'ok', 'pytorch', 'cnn9', 8, 2, 'fp32', "
            "100, 5, ?, 0.01, '{\"a\": 1}', '{\"b\": [1, 2]}', ['meter'], true, 7, 600, '0.9', 'collect', "
            "TIMESTAMPTZ '2026-01-02 03:04:05+00')",
            [str(uuid.UUID(int=k + 1)), str(uuid.UUID(int=99)), kind, k or None],
        )
    con.close()


def test_stored_runs_keep_every_value_and_the_table_its_constraints(tmp_path):
    path = tmp_path / "v8.duckdb"
    db_at_version_8(path)
    con = duckdb.connect(str(path), read_only=True)
    before = con.execute(f"SELECT {OLD_RUN_COLUMNS} FROM runs ORDER BY run_id").fetchall()
    con.close()
    with Store.open(path) as store:
        con = store.con
        assert con.execute(f"SELECT {OLD_RUN_COLUMNS} FROM runs ORDER BY run_id").fetchall() == before
        new = con.execute(
            "SELECT prompt_tokens, new_tokens, context_depth, kv_cache_bytes FROM runs"
        ).fetchall()
        assert new == [(None, None, None, None)] * 2
        con.execute(
            "INSERT INTO runs (run_id, device_id, kind, status, edgestats_version, source, prompt_tokens) "
            "VALUES (uuid(), uuid(), 'generation', 'ok', 'x', 'collect', 16)"
        )
        for bad, why in (
            ("'bogus', 'ok', 'x', 'collect'", "CHECK"),
            ("'inference', 'finished', 'x', 'collect'", "CHECK"),
            ("'inference', 'ok', NULL, 'collect'", "NOT NULL"),
        ):
            with pytest.raises(duckdb.ConstraintException, match=why):
                con.execute(
                    "INSERT INTO runs (run_id, device_id, kind, status, edgestats_version, source) "
                    f"VALUES (uuid(), uuid(), {bad})"
                )
        with pytest.raises(duckdb.ConstraintException, match="(?i)duplicate key"):
            con.execute(
                "INSERT INTO runs (run_id, device_id, kind, status, edgestats_version, source) "
                f"VALUES ('{uuid.UUID(int=1)}', uuid(), 'inference', 'ok', 'x', 'collect')"
            )
        assert store.frame("SELECT count(*) AS n FROM generation_summary").item() == 1
