"""edgestats merge: union by UUID, idempotent, conflicts named, inputs never modified."""

from __future__ import annotations

import hashlib
from pathlib import Path

import duckdb
import pytest
from typer.testing import CliRunner

from builders import make_results_db, write_inference_run
from edgestats import migrations
from edgestats.cli import app
from edgestats.errors import MergeConflictError, SchemaTooNewError
from edgestats.merge import merge
from edgestats.migrations import Migration, current_version, latest_version
from edgestats.store import Store

runner = CliRunner()


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def counts(path: Path) -> dict[str, int]:
    with Store.open(path, read_only=True) as store:
        return store.counts()


def test_merge_unions_devices_and_runs(tmp_path):
    a = make_results_db(tmp_path / "a.duckdb", device_name="jetson", n_runs=3, seed0=0)
    b = make_results_db(tmp_path / "b.duckdb", device_name="rpi", n_runs=2, seed0=10)
    out = tmp_path / "out.duckdb"
    reports = merge(out, [a, b])
    assert [r.runs_added for r in reports] == [4, 3]
    got = counts(out)
    want_a, want_b = counts(a), counts(b)
    assert got == {t: want_a[t] + want_b[t] for t in got}
    with Store.open(out, read_only=True) as store:
        devices = sorted(store.frame("SELECT name FROM devices")["name"].to_list())
    assert devices == ["jetson", "rpi"]


def test_merging_the_same_input_twice_changes_nothing(tmp_path):
    a = make_results_db(tmp_path / "a.duckdb")
    out = tmp_path / "out.duckdb"
    merge(out, [a])
    first = counts(out)
    with Store.open(out, read_only=True) as store:
        snapshot = store.frame("SELECT * FROM samples ORDER BY run_id, t_ns, metric")
    second = merge(out, [a, a])
    assert second[0].runs_added == 0 and second[0].runs_identical == 4
    assert counts(out) == first
    with Store.open(out, read_only=True) as store:
        assert store.frame("SELECT * FROM samples ORDER BY run_id, t_ns, metric").equals(snapshot)


def test_same_run_id_with_different_content_is_named_and_nothing_written(tmp_path):
    a = make_results_db(tmp_path / "a.duckdb", n_runs=1)
    b = tmp_path / "b.duckdb"
    with Store.open(a, read_only=True) as store:
        run_id = store.frame("SELECT run_id FROM runs WHERE kind = 'inference'")["run_id"][0]
    with Store.open(b) as store:
        device = store.register_device({"name": "jetson-nano"})
        write_inference_run(store, device, seed=99, run_id=run_id)  # same id, other latencies
    extra = make_results_db(tmp_path / "c.duckdb", device_name="other", seed0=50)
    out = tmp_path / "out.duckdb"
    with pytest.raises(MergeConflictError, match=str(run_id)) as exc:
        merge(out, [extra, a, b])
    assert "latencies" in str(exc.value)
    assert counts(out)["runs"] == 0, "a conflict anywhere must leave the output untouched"


def test_inputs_are_never_modified(tmp_path):
    a = make_results_db(tmp_path / "a.duckdb")
    before = digest(a)
    merge(tmp_path / "out.duckdb", [a])
    assert digest(a) == before


def test_older_input_is_migrated_in_a_copy(tmp_path, monkeypatch):
    a = make_results_db(tmp_path / "a.duckdb")  # at today's latest schema ...
    before = digest(a)
    real = migrations.available_migrations()
    extra = Migration(real[-1].version + 1, "add_operator", "ALTER TABLE runs ADD COLUMN operator VARCHAR;")
    monkeypatch.setattr(migrations, "available_migrations", lambda: [*real, extra])  # ... now older
    out = tmp_path / "out.duckdb"
    reports = merge(out, [a])
    assert reports[0].migrated_from == real[-1].version
    assert counts(out)["runs"] == 4
    assert digest(a) == before
    con = duckdb.connect(str(a), read_only=True)
    assert current_version(con)[0] == real[-1].version
    con.close()


def test_newer_input_is_refused(tmp_path):
    a = make_results_db(tmp_path / "a.duckdb")
    con = duckdb.connect(str(a))
    con.execute("INSERT INTO schema_migrations (version, name, edgestats_version) VALUES (?, 'x', '9.9')", [latest_version() + 1])
    con.close()
    with pytest.raises(SchemaTooNewError, match="Upgrade edgestats"):
        merge(tmp_path / "out.duckdb", [a])


def test_output_cannot_be_an_input(tmp_path):
    a = make_results_db(tmp_path / "a.duckdb")
    result = runner.invoke(app, ["merge", str(a), str(a)])
    assert result.exit_code == 1 and "both the output and an input" in result.output


def test_merge_cli_reports_and_conflict_exit_code(tmp_path):
    a = make_results_db(tmp_path / "a.duckdb", device_name="jetson")
    b = make_results_db(tmp_path / "b.duckdb", device_name="rpi", seed0=20)
    out = tmp_path / "out.duckdb"
    result = runner.invoke(app, ["merge", str(out), str(a), str(b)])
    assert result.exit_code == 0, result.output
    assert "4 runs added" in result.output
    again = runner.invoke(app, ["merge", str(out), str(a)])
    assert again.exit_code == 0 and "0 runs added" in again.output and "4 already present" in again.output
    missing = runner.invoke(app, ["merge", str(out), str(tmp_path / "nope.duckdb")])
    assert missing.exit_code == 1 and "no such file" in missing.output
