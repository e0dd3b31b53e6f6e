"""edgestats merge: union by UUID, idempotent, conflicts named, inputs never modified."""

from __future__ import annotations

import hashlib
from pathlib import Path

import duckdb
import pytest
from builders import make_results_db, write_inference_run
from typer.testing import CliRunner

from edgestats.cli import app
from edgestats.errors import MergeConflictError, SchemaTooNewError
from edgestats.exports.merge import merge
from edgestats.store import migrations
from edgestats.store.migrations import Migration, current_version, latest_version
from edgestats.store.results import Store

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
    assert not out.exists(), "a conflict anywhere must leave no output behind"
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "a.duckdb",
        "b.duckdb",
        "c.duckdb",
    ]  # no temporary file


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
    con.execute(
        "INSERT INTO schema_migrations (version, name, edgestats_version) VALUES (?, 'x', '9.9')",
        [latest_version() + 1],
    )
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


# -- a failed merge leaves OUT as it was ------------------------------------------------------------


def with_wal(path: Path, device_name: str = "only-in-the-wal") -> Path:
    """Give `path` a WAL: a committed device that is not yet checkpointed into the file."""
    con = duckdb.connect(str(path))
    con.execute("PRAGMA disable_checkpoint_on_shutdown")
    con.execute(
        "INSERT INTO devices (device_id, name, registered_at) VALUES (uuid(), ?, now())", [device_name]
    )
    con.close()
    assert Path(f"{path}.wal").stat().st_size > 0
    return path


def snapshot(folder: Path) -> dict[str, str]:
    """Every file of the folder, by name, with its SHA-256 (hidden temporary files included)."""
    return {p.name: digest(p) for p in sorted(folder.iterdir()) if p.is_file()}


def bad_inputs(tmp_path: Path, out: Path) -> dict[str, tuple[Path, str]]:
    """Inputs that fail a merge, each with the words its one-line error must hold."""
    with Store.open(out, read_only=True) as store:
        run_id = store.frame("SELECT run_id FROM runs WHERE kind = 'inference' LIMIT 1")["run_id"][0]
    conflict = tmp_path / "inputs" / "conflict.duckdb"
    with Store.open(conflict) as store:  # the same run_id as one in OUT, other latencies
        write_inference_run(store, store.register_device({"name": "jetson-nano"}), seed=99, run_id=run_id)
    truncated = make_results_db(tmp_path / "inputs" / "truncated.duckdb", seed0=30)
    truncated.write_bytes(truncated.read_bytes()[: truncated.stat().st_size // 2])
    foreign = tmp_path / "inputs" / "foreign.duckdb"
    con = duckdb.connect(str(foreign))
    con.execute("CREATE TABLE sales (x INTEGER)")
    con.close()
    text = tmp_path / "inputs" / "notes.duckdb"
    text.write_text("not a database\n")
    return {
        "conflict": (conflict, "different content"),
        "truncated": (truncated, "is damaged"),
        "foreign": (foreign, "not an edgestats results DB"),
        "text": (text, "not a DuckDB database"),
    }


@pytest.mark.slow
def test_a_failed_merge_leaves_out_and_its_wal_byte_for_byte(tmp_path):
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    (tmp_path / "inputs").mkdir()
    out = with_wal(make_results_db(out_dir / "merged.duckdb", device_name="jetson-nano"))
    good = make_results_db(tmp_path / "inputs" / "good.duckdb", device_name="rpi", seed0=40)
    for name, (bad, words) in bad_inputs(tmp_path, out).items():
        before = snapshot(out_dir)
        assert set(before) == {"merged.duckdb", "merged.duckdb.wal"}
        result = runner.invoke(
            app, ["merge", str(out), str(good), str(bad)]
        )  # good first: it was merged, then undone
        assert result.exit_code == 1, (name, result.output)
        assert "Traceback" not in result.output and words in result.stderr, (name, result.stderr)
        assert result.stderr.strip().splitlines()[-1].startswith("error: "), name
        assert snapshot(out_dir) == before, f"{name}: the failed merge changed OUT or left a file beside it"
    new = tmp_path / "new.duckdb"  # a failed merge into a new OUT creates nothing
    assert (
        runner.invoke(
            app, ["merge", str(new), str(good), str(tmp_path / "inputs" / "truncated.duckdb")]
        ).exit_code
        == 1
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["inputs", "out"]


def test_a_merge_into_out_with_a_wal_keeps_what_the_wal_held(tmp_path):
    out = with_wal(make_results_db(tmp_path / "out.duckdb", device_name="jetson-nano"))
    b = make_results_db(tmp_path / "b.duckdb", device_name="rpi", seed0=20)
    merge(out, [b])
    assert not Path(f"{out}.wal").exists(), (
        "the merged file replaced OUT checkpointed; a stale WAL must not stay"
    )
    with Store.open(out, read_only=True) as store:
        names = sorted(store.frame("SELECT name FROM devices")["name"].to_list())
        assert store.counts()["runs"] == 8
    assert names == ["jetson-nano", "only-in-the-wal", "rpi"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["b.duckdb", "out.duckdb"]


def test_merge_into_a_link_replaces_the_file_it_points_at(tmp_path):
    real = make_results_db(tmp_path / "real.duckdb", device_name="jetson")
    link = tmp_path / "link.duckdb"
    link.symlink_to(real)
    merge(link, [make_results_db(tmp_path / "b.duckdb", device_name="rpi", seed0=20)])
    assert link.is_symlink() and counts(real)["runs"] == 8
