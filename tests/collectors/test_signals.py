"""Signals, timeouts and concurrent collects, with real processes: no run lost, no process left.

Every test here runs `edgestats collect` as a process of its own (the CLI, as a user runs it)
with ONNX Runtime workers on the session's prepared model cache.
Cost: about 130 s on two busy cores (the random-signal series about 17 s each).
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import time
from pathlib import Path

import pytest
from collect_processes import collect_cmd, none_left_within, read_lines, start

from edgestats.store.results import Store

pytestmark = pytest.mark.frameworks  # every test runs ONNX Runtime workers


def runs(db: Path, sql: str = "SELECT run_id, status, error_text, config_hash FROM runs") -> list[dict]:
    with Store.open(db, read_only=True) as store:
        return store.frame(sql).to_dicts()


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP])
def test_a_signal_stops_the_worker_tree_and_stores_the_run_as_interrupted(tmp_path, model_cache, signum):
    db = tmp_path / "r.duckdb"
    proc = start(collect_cmd(db, model_cache, "-n", "1000000"))  # the cap (sweep_limits.py): long enough
    lines: list[str] = []
    reader = read_lines(proc, lines)
    spool = tmp_path / ".r.duckdb.spool"
    deadline = time.monotonic() + 60
    while not any(p.read_text().count('"t": "lat"') > 20 for p in spool.glob("*.jsonl")):  # measuring now
        assert time.monotonic() < deadline and proc.poll() is None, "".join(lines)
        time.sleep(0.05)
    os.kill(proc.pid, signum)
    assert proc.wait(timeout=30) == 128 + signum
    reader.join(5)
    assert none_left_within(str(tmp_path), 5) == []
    [run] = runs(db)
    assert run["status"] == "killed" and f"received {signal.Signals(signum).name}" in run["error_text"]
    assert "steady phase" in run["error_text"], run["error_text"]
    n = runs(db, "SELECT count(*) AS n FROM latencies")[0]["n"]
    assert n > 20, "what the run measured before the signal is kept"
    output = "".join(lines)
    assert f"stopped by {signal.Signals(signum).name}" in output and "Traceback" not in output
    assert sorted(p.name for p in spool.iterdir()) == [], "the run is stored: nothing left to recover"


def test_a_second_ctrl_c_exits_at_once_leaving_no_process(tmp_path, model_cache):
    db = tmp_path / "r.duckdb"
    proc = start(collect_cmd(db, model_cache, "-n", "1000000"))  # the cap (sweep_limits.py): long enough
    spool = tmp_path / ".r.duckdb.spool"
    deadline = time.monotonic() + 60
    while not any(p.read_text().count('"t": "lat"') for p in spool.glob("*.jsonl")):
        assert time.monotonic() < deadline and proc.poll() is None
        time.sleep(0.02)
    os.kill(proc.pid, signal.SIGINT)
    os.kill(proc.pid, signal.SIGINT)
    assert proc.wait(timeout=10) == 130
    proc.stdout.close()
    assert none_left_within(str(tmp_path), 5) == []
    # Whether the first signal's run was stored before the second arrived or not, it is not lost:
    # the next collect stores what is still spooled.
    subprocess.run(collect_cmd(db, model_cache, "-n", "5"), capture_output=True, timeout=120)
    statuses = sorted(r["status"] for r in runs(db))
    assert statuses == ["killed", "ok"], statuses


def test_model_preparation_is_covered_by_the_timeout(tmp_path):
    """A fresh cache: preparing cnn9 for ONNX Runtime exports it with torch, which takes longer
    than the 0.5 s allowed; the run is stored as timeout naming the phase, and no traceback."""
    db = tmp_path / "r.duckdb"
    result = subprocess.run(
        collect_cmd(db, tmp_path / "empty-cache", "-n", "5", "--timeout", "0.5"),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0 and "Traceback" not in result.stdout + result.stderr, result.stderr
    [run] = runs(db)
    assert (
        run["status"] == "timeout"
        and "phase prepare" in run["error_text"]
        and "--timeout 0.5" in run["error_text"]
    )
    assert none_left_within(str(tmp_path), 5) == []


def test_four_concurrent_collects_store_every_run(tmp_path, model_cache):
    db = tmp_path / "r.duckdb"
    spool = tmp_path / ".r.duckdb.spool"
    procs = []
    for b in (1, 2, 3, 4):  # each starts while the ones before are in the middle of a run
        procs.append(start(collect_cmd(db, model_cache, "-n", "20", "--batch-size", str(b), "--repeat", "5")))
        deadline = time.monotonic() + 60
        while len(list(spool.glob("*.jsonl"))) < 1 and time.monotonic() < deadline:
            time.sleep(0.02)
    outputs = [p.communicate(timeout=300)[0] for p in procs]
    assert [p.returncode for p in procs] == [0, 0, 0, 0], outputs
    stored = runs(db, "SELECT status, batch_size, error_text FROM runs")
    left = sorted(str(p.relative_to(spool)) for p in spool.rglob("*"))
    assert len(stored) == 20 and all(r["status"] == "ok" for r in stored), (stored, outputs, left)
    assert sorted(r["batch_size"] for r in stored) == sorted([1, 2, 3, 4] * 5)
    assert not any("recovered" in out or "killed" in out for out in outputs), outputs
    assert sorted(p.name for p in (tmp_path / ".r.duckdb.spool").iterdir()) == []


def test_four_identical_collects_run_each_slot_once(tmp_path, model_cache):
    """The same 3-repeat sweep, four collects at once on one DB: each (configuration, repeat)
    slot is claimed before it runs (collectors/slots.py), so 3 runs are stored, not 12."""
    db = tmp_path / "r.duckdb"
    procs = [start(collect_cmd(db, model_cache, "-n", "20", "--repeat", "3")) for _ in range(4)]
    outputs = [p.communicate(timeout=300)[0] for p in procs]
    assert [p.returncode for p in procs] == [0, 0, 0, 0], outputs
    stored = runs(db, "SELECT status, repeat_index, config_hash FROM runs")
    assert sorted((r["status"], r["repeat_index"]) for r in stored) == [("ok", 0), ("ok", 1), ("ok", 2)], (
        stored,
        outputs,
    )
    ran = sum(out.count("\nok ") + out.startswith("ok ") for out in outputs)
    assert ran == 3 and "Traceback" not in "".join(outputs), outputs
    others = [out for out in outputs if "run by other collects" in out or "run by another collect" in out]
    assert others, "a collect says which slots other collects ran"
    assert sorted(p.name for p in (tmp_path / ".r.duckdb.spool").iterdir()) == []


@pytest.mark.parametrize("seed", [20261123, 20261124])
def test_signals_at_random_points_lose_no_run_and_leave_no_process(tmp_path, model_cache, seed):
    """2 x 10 trials, each series on one DB: each trial starts collect (resuming the same sweep)
    and sends SIGTERM, SIGINT or SIGKILL at a random moment (starting, planning, measuring,
    storing). After each, no process of it is alive within 5 s; at the end, every run that
    finished is in the DB once."""
    db = tmp_path / "r.duckdb"
    rng = random.Random(seed)
    cmd = collect_cmd(db, model_cache, "-n", "30", "--repeat", "60")
    finished = 0
    for trial in range(10):
        proc = start(cmd)
        lines: list[str] = []
        reader = read_lines(proc, lines)
        time.sleep(rng.uniform(0.05, 1.6))  # starting (~0.5 s), planning, measuring, storing
        signum = rng.choice([signal.SIGTERM, signal.SIGINT, signal.SIGKILL])
        os.kill(proc.pid, signum)
        code = proc.wait(timeout=60)
        reader.join(5)
        # 128 + signal: collect (or the command, still starting) exited on it; -signal: it came
        # before the interpreter had run a line of edgestats, so nothing had started.
        assert code in (0, 128 + signum, -signum), (trial, code, "".join(lines))
        assert none_left_within(str(tmp_path), 5) == [], f"trial {trial}: processes left after {signum!r}"
        assert "Traceback" not in "".join(lines), "".join(lines)
        finished += sum(line.startswith("ok ") or "-> ok" in line for line in lines)
    final = subprocess.run(
        collect_cmd(db, model_cache, "-n", "30", "--repeat", "1"), capture_output=True, text=True, timeout=120
    )  # recovers what the last SIGKILL left spooled
    finished += final.stdout.count("-> ok") + final.stderr.count("-> ok")
    stored = runs(db)
    assert len({r["run_id"] for r in stored}) == len(stored)
    ok = [r for r in stored if r["status"] == "ok"]
    assert len(ok) >= finished, "every run reported finished is stored"
    assert len({r["config_hash"] for r in ok}) == len(ok), "no configuration completed twice"
    assert all(r["status"] in ("ok", "killed") for r in stored), [r["error_text"] for r in stored]


def on_a_full_disk(real_store):
    """Orchestrator.store with the disk full while it stores: RLIMIT_FSIZE lowered for the call."""
    import resource

    def store_on_a_full_disk(self, *a, **kw):
        soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
        previous = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG
        resource.setrlimit(resource.RLIMIT_FSIZE, (4096, hard))
        try:
            return real_store(self, *a, **kw)
        finally:
            resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
            signal.signal(signal.SIGXFSZ, previous)

    return store_on_a_full_disk


def test_a_full_disk_while_storing_keeps_the_run_for_the_next_collect(tmp_path, model_cache, monkeypatch):
    """A real storage failure at the worst moment: the run has been measured, its spool and the
    sampler's batch are on disk, and then the disk is full (RLIMIT_FSIZE, lowered just for the
    store: the kernel refuses to grow the DB's files, as a full disk does). One line names the
    cause and the file; the run stays spooled with its telemetry, and the next collect stores it."""
    from typer.testing import CliRunner

    from edgestats.cli import app
    from edgestats.collectors.orchestrator import Orchestrator

    db = tmp_path / "r.duckdb"
    args = collect_cmd(db, model_cache, "-n", "5")[3:]  # in process: without `python -m edgestats`
    runner = CliRunner()
    assert runner.invoke(app, args).exit_code == 0
    before = runs(db)
    monkeypatch.setattr(Orchestrator, "store", on_a_full_disk(Orchestrator.store))
    full = runner.invoke(app, [*args, "--batch-size", "2"])
    assert full.exit_code == 1, full.output
    assert "File too large" in full.output and str(db) in full.output and "Traceback" not in full.output, (
        full.output
    )
    spooled = sorted(p.name.split(".", 1)[1] for p in (tmp_path / ".r.duckdb.spool").glob("*-*-*-*-*.*"))
    assert {"meta.json", "jsonl", "samples.arrow"} <= set(spooled), spooled
    assert runs(db) == before, "the runs stored before are intact"
    monkeypatch.undo()  # room again
    again = runner.invoke(app, [*args, "--batch-size", "2"])
    assert again.exit_code == 0 and "recovered an interrupted run" in again.output, again.output
    stored = runs(
        db,
        "SELECT status, batch_size, environment->>'$.recovered.telemetry' AS telemetry, "
        "(SELECT count(*) FROM samples s WHERE s.run_id = r.run_id) AS n_samples FROM runs r",
    )
    [recovered] = [r for r in stored if r["telemetry"] is not None]
    assert len(stored) == 2 and (recovered["status"], recovered["batch_size"], recovered["telemetry"]) == (
        "ok",
        2,
        "kept",
    )
    assert recovered["n_samples"] > 0
