"""The Store API: one run per transaction, bulk child rows, read back as polars."""

from __future__ import annotations

import numpy as np
import polars as pl
import pyarrow as pa
import pytest
from builders import write_inference_run

from edgestats.contracts import name_uuid
from edgestats.store.results import RunExistsError, Store, insert_select_sql


def test_write_run_round_trips_every_table(tmp_path):
    with Store.open(tmp_path / "s.duckdb") as store:
        device = store.register_device({"name": "rpi4", "arch": "aarch64", "facts": {"model": "Pi 4"}})
        run_id = write_inference_run(store, device, seed=7)
        lat = store.frame("SELECT * FROM latencies WHERE run_id = ? ORDER BY iteration", [str(run_id)])
        summary = store.table("run_summary")
        facts = store.frame("SELECT facts->>'model' AS model FROM devices")
    assert isinstance(lat, pl.DataFrame) and lat.height == 50
    assert lat["warmup"].sum() == 5
    expected_median_ms = np.median(lat.filter(~pl.col("warmup"))["latency_ns"].to_numpy()) / 1e6
    assert summary["latency_median_ms"][0] == pytest.approx(expected_median_ms)
    assert summary["n_latencies"][0] == 45
    assert facts["model"][0] == "Pi 4"


def test_failed_write_leaves_nothing(tmp_path):
    with Store.open(tmp_path / "s.duckdb") as store:
        device = store.register_device({"name": "d"})
        bad_samples = pa.table({"t_ns": [1], "metric": ["rss_bytes"], "no_such_column": [1.0]})
        with pytest.raises(ValueError, match="no_such_column"):
            store.write_run(
                {"device_id": device, "kind": "inference", "status": "ok"},
                latencies={"iteration": [0], "warmup": [False], "latency_ns": [5]},
                samples=bad_samples,
            )
        assert store.counts()["runs"] == 0 and store.counts()["latencies"] == 0


def test_constraint_violation_rolls_back_the_whole_run(tmp_path):
    with Store.open(tmp_path / "s.duckdb") as store:
        device = store.register_device({"name": "d"})
        with pytest.raises(Exception, match="(?i)constraint|NULL"):
            store.write_run(
                {"device_id": device, "kind": "inference", "status": "ok"},
                latencies={"iteration": [0, 1], "warmup": [False, False], "latency_ns": [5, None]},
            )
        assert store.counts()["runs"] == 0 and store.counts()["latencies"] == 0


def test_same_run_twice_is_refused(tmp_path):
    with Store.open(tmp_path / "s.duckdb") as store:
        device = store.register_device({"name": "d"})
        run_id = write_inference_run(store, device, seed=1)
        with pytest.raises(RunExistsError, match=str(run_id)):
            write_inference_run(store, device, seed=1, run_id=run_id)
        assert store.counts()["runs"] == 1 and store.counts()["latencies"] == 50


def test_register_device_is_idempotent_and_derives_id_from_name(tmp_path):
    with Store.open(tmp_path / "s.duckdb") as store:
        a = store.register_device({"name": "jetson"})
        b = store.register_device({"name": "jetson"})
        assert a == b == name_uuid("device", "jetson")
        assert store.counts()["devices"] == 1


def test_child_rows_accept_polars_and_dicts(tmp_path):
    with Store.open(tmp_path / "s.duckdb") as store:
        device = store.register_device({"name": "d"})
        store.write_run(
            {"device_id": device, "kind": "inference", "status": "ok"},
            latencies=pl.DataFrame({"iteration": [0, 1], "warmup": [True, False], "latency_ns": [10, 20]}),
            phases={"seq": [0], "phase": ["import"], "start_ns": [1], "end_ns": [2]},
        )
        assert store.counts()["latencies"] == 2 and store.counts()["phases"] == 1


def test_bulk_insert_is_one_statement():
    sql = insert_select_sql("samples", ["t_ns", "metric", "value"], "_rows", add_run_id=True)
    assert sql.count("INSERT") == 1 and "SELECT CAST(? AS UUID) AS run_id" in sql and "FROM _rows" in sql


def test_missing_parent_folder_and_locked_file(tmp_path):
    from edgestats.errors import DatabaseError

    with pytest.raises(DatabaseError, match="does not exist"):
        Store.open(tmp_path / "no" / "such" / "dir.duckdb")
    with pytest.raises(DatabaseError, match="no such file"):
        Store.open(tmp_path / "absent.duckdb", read_only=True)


def test_a_db_held_by_another_process_is_a_locked_error(tmp_path):
    """DuckDB allows one process to hold a file for writing: a second one gets DatabaseLockedError
    (a DatabaseError), which a writer that can wait (the orchestrator) recognises by type."""
    import subprocess
    import sys

    from edgestats.errors import DatabaseError, DatabaseLockedError

    path = tmp_path / "held.duckdb"
    Store.open(path).close()
    code = (
        f"import duckdb, sys; c = duckdb.connect({str(path)!r}); print('held', flush=True); sys.stdin.read()"
    )
    holder = subprocess.Popen(
        [sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout.readline().strip() == "held"
        for read_only in (False, True):
            with pytest.raises(DatabaseLockedError, match="in use by another process") as caught:
                Store.open(path, read_only=read_only)
            assert isinstance(caught.value, DatabaseError) and f"PID {holder.pid}" in str(caught.value)
    finally:
        holder.communicate("")  # closing its stdin ends it
    with Store.open(path) as store:  # released: opens again
        assert store.counts()["runs"] == 0


def test_finished_config_hashes_are_collected_runs_not_only_killed(tmp_path):
    with Store.open(tmp_path / "s.duckdb") as store:
        device = store.register_device({"name": "d"})

        def run(config_hash, status, source="collect"):
            store.write_run(
                {
                    "device_id": device,
                    "kind": "inference",
                    "status": status,
                    "config_hash": config_hash,
                    "source": source,
                }
            )

        run("ok-once", "ok")
        run("killed-then-ok", "killed")
        run("killed-then-ok", "ok")
        run("only-killed", "killed")
        run("only-killed", "killed")
        run("errored", "error")
        run("timed-out", "timeout")
        run("imported", "ok", source="import")
        run(None, "ok")
        assert store.finished_config_hashes() == {"ok-once", "killed-then-ok", "errored", "timed-out"}
    with Store.open(tmp_path / "empty.duckdb") as store:
        assert store.finished_config_hashes() == set()
