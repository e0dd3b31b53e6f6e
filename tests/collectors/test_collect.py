"""edgestats collect end to end: real frameworks, fresh worker processes, statuses, resume.
Cost: about 60 s of test time in make test's parallel lane (measured from a fresh clone on 2 cores)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from edgestats.cli import app
from edgestats.collectors.collect import execute, open_orchestrator, plan
from edgestats.collectors.sweep import build_sweep
from edgestats.store.results import Store

pytestmark = pytest.mark.frameworks  # every test runs framework workers
runner = CliRunner()
PCAMP_PHASES = [
    "process_start",
    "import",
    "load_model",
    "load_first_input",
    "first_inference",
    "load_second_input",
    "second_inference",
    "warmup",
    "steady",
    "total",
]


@pytest.fixture
def cache_dir(model_cache) -> Path:
    """Prepared model files, shared with every test of the session (conftest's model_cache)."""
    return model_cache


def query(db: Path, sql: str) -> list[dict]:
    with Store.open(db, read_only=True) as store:
        return store.frame(sql).to_dicts()


def collect_once(db: Path, cache_dir: Path, on_spawn=None, **axes):
    settings = ("timeout", "repeat")
    values = {"warmup": 2, **{k: v if isinstance(v, list) or k in settings else [v] for k, v in axes.items()}}
    sweep = build_sweep(values)
    orchestrator = open_orchestrator(db, sweep, cache_dir=cache_dir, on_spawn=on_spawn)
    the_plan = plan(db, sweep, orchestrator)
    return execute(the_plan, orchestrator, sweep)


def test_four_frameworks_squeezenet_every_phase_and_latency(tmp_path, cache_dir):
    """The issue's acceptance command, through the CLI."""
    db = tmp_path / "r.duckdb"
    result = runner.invoke(
        app,
        [
            "collect",
            "--db",
            str(db),
            "--framework",
            "pytorch",
            "--framework",
            "tensorflow",
            "--framework",
            "tflite",
            "--framework",
            "onnxruntime",
            "--model",
            "squeezenet",
            "--iterations",
            "30",
            "--cache-dir",
            str(cache_dir),
        ],
    )
    assert result.exit_code == 0, result.output
    runs = query(
        db,
        "SELECT run_id, framework, runtime, status, error_text, model_params, model_flops, environment, "
        "framework_version FROM runs ORDER BY framework",
    )
    assert [r["framework"] for r in runs] == ["onnxruntime", "pytorch", "tensorflow", "tflite"]
    for run in runs:
        assert run["status"] == "ok", run["error_text"]
        assert run["model_params"] == 1_248_424
        assert run["framework_version"]
        env = json.loads(run["environment"])
        assert env["versions"] and env["runtime_detail"], f"{run['framework']}: environment not captured"
        phases = query(db, f"SELECT phase FROM phases WHERE run_id = '{run['run_id']}' ORDER BY seq")
        assert [p["phase"] for p in phases] == PCAMP_PHASES
        lat = query(
            db,
            f"SELECT count(*) FILTER (WHERE NOT warmup) AS steady, count(*) FILTER (WHERE warmup) AS warm, "
            f"min(latency_ns) AS fastest FROM latencies WHERE run_id = '{run['run_id']}'",
        )[0]
        assert lat["steady"] == 30 and lat["warm"] == 5 and lat["fastest"] > 0
    summary = query(db, "SELECT framework, n_latencies, latency_median_ms FROM run_summary")
    assert all(s["n_latencies"] == 30 and s["latency_median_ms"] > 0 for s in summary)


def test_phase_windows_are_ordered_and_nested(tmp_path, cache_dir):
    db = tmp_path / "r.duckdb"
    collect_once(db, cache_dir, framework="pytorch", model="cnn9", iterations=20)
    phases = query(db, "SELECT phase, start_ns, end_ns FROM phases ORDER BY seq")
    by_name = {p["phase"]: p for p in phases}
    ordered = [p for p in phases if p["phase"] not in ("total",)]
    for earlier, later in zip(ordered, ordered[1:]):
        assert earlier["end_ns"] <= later["start_ns"]
    total = by_name["total"]
    assert (
        total["start_ns"] <= by_name["import"]["start_ns"] and by_name["steady"]["end_ns"] <= total["end_ns"]
    )
    lat = query(db, "SELECT min(start_ns) AS first, max(start_ns) AS last FROM latencies WHERE NOT warmup")[0]
    assert by_name["steady"]["start_ns"] <= lat["first"] <= lat["last"] <= by_name["steady"]["end_ns"]


def test_repeat_gives_fresh_processes(tmp_path, cache_dir):
    db = tmp_path / "r.duckdb"
    collect_once(db, cache_dir, framework="onnxruntime", model="cnn9", iterations=5, repeat=3)
    rows = query(
        db, "SELECT repeat_index, environment->>'$.worker_start.pid' AS pid FROM runs ORDER BY repeat_index"
    )
    assert [r["repeat_index"] for r in rows] == [0, 1, 2]
    assert len({r["pid"] for r in rows}) == 3


def test_worker_that_raises_is_stored_as_error_with_its_phases(tmp_path, cache_dir):
    bad = tmp_path / "broken.onnx"
    bad.write_bytes(b"this is not an onnx model")
    db = tmp_path / "r.duckdb"
    [outcome] = collect_once(db, cache_dir, framework="onnxruntime", model=str(bad), iterations=5)
    assert outcome.status == "error"
    run = query(db, "SELECT status, error_text, run_id FROM runs")[0]
    assert run["status"] == "error" and "Traceback" in run["error_text"]
    phases = [p["phase"] for p in query(db, "SELECT phase FROM phases ORDER BY seq")]
    assert phases[:2] == ["process_start", "import"] and "load_model" not in phases


def test_timeout_kills_the_run_and_keeps_its_latencies(tmp_path, cache_dir):
    db = tmp_path / "r.duckdb"
    [outcome] = collect_once(
        db, cache_dir, framework="pytorch", model="cnn9", iterations=1_000_000, timeout=12.0
    )
    assert outcome.status == "timeout"
    run = query(db, "SELECT status, error_text FROM runs")[0]
    assert run["status"] == "timeout" and "--timeout 12" in run["error_text"]
    n = query(db, "SELECT count(*) AS n FROM latencies WHERE NOT warmup")[0]["n"]
    assert 0 < n < 1_000_000, "the latencies measured before the timeout are kept"
    phases = {p["phase"] for p in query(db, "SELECT phase FROM phases")}
    assert {"import", "load_model", "warmup"} <= phases and "steady" not in phases


def test_worker_killed_by_a_signal_is_stored_as_killed(tmp_path, cache_dir):
    db = tmp_path / "r.duckdb"
    spool_dir = tmp_path / ".r.duckdb.spool"

    def kill_when_measuring(pid: int) -> None:
        def watch() -> None:
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline:
                for spool in spool_dir.glob("*.jsonl"):
                    if spool.read_text().count('"t": "lat"') > 50:
                        os.kill(pid, signal.SIGKILL)  # as the OOM killer would
                        return
                time.sleep(0.05)

        threading.Thread(target=watch, daemon=True).start()

    [outcome] = collect_once(
        db, cache_dir, on_spawn=kill_when_measuring, framework="pytorch", model="cnn9", iterations=1_000_000
    )
    assert outcome.status == "killed"
    run = query(db, "SELECT status, error_text FROM runs")[0]
    assert run["status"] == "killed" and "SIGKILL" in run["error_text"]
    assert query(db, "SELECT count(*) AS n FROM latencies")[0]["n"] > 50


def test_sweep_killed_midway_resumes_only_the_missing_runs(tmp_path, cache_dir):
    sweep_file = tmp_path / "sweep.toml"
    sweep_file.write_text(
        '[sweep]\nframework = ["pytorch", "onnxruntime"]\nmodel = "cnn9"\n'
        "batch_size = [1, 2, 4]\niterations = 400\nwarmup = 2\n"
    )
    db = tmp_path / "r.duckdb"
    cmd = [
        sys.executable,
        "-m",
        "edgestats",
        "collect",
        str(sweep_file),
        "--db",
        str(db),
        "--cache-dir",
        str(cache_dir),
    ]
    proc = subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True
    )
    finished = 0
    for line in proc.stdout:  # one line per finished run
        if line.startswith("ok "):
            finished += 1
        if finished == 2:
            os.killpg(proc.pid, signal.SIGKILL)  # the orchestrator, not its workers' own sessions
            break
    proc.wait()
    before = query(db, "SELECT run_id, config_hash, status FROM runs")
    assert len(before) == 2 and all(r["status"] == "ok" for r in before)

    again = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert again.returncode == 0, again.stdout + again.stderr
    runs = query(db, "SELECT run_id, config_hash, status FROM runs")
    ok = [r for r in runs if r["status"] == "ok"]
    assert len({r["config_hash"] for r in ok}) == 6 and len(ok) == 6, (
        "each configuration completed exactly once"
    )
    assert {r["run_id"] for r in before} <= {r["run_id"] for r in ok}, "completed runs were kept, not redone"
    assert all(r["status"] in ("ok", "killed") for r in runs)
    times = query(db, "SELECT started_at, ended_at FROM runs")
    assert all(
        t["started_at"] is not None and t["ended_at"] is not None and t["started_at"] <= t["ended_at"]
        for t in times
    ), "every run, the one recovered after the kill too, has started_at <= ended_at"
    for run in ok:
        n = query(db, f"SELECT count(*) AS n FROM latencies WHERE run_id = '{run['run_id']}' AND NOT warmup")[
            0
        ]["n"]
        assert n == 400
    third = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert "0 to run" in third.stderr + third.stdout


def test_unrunnable_combinations_are_reported_up_front_and_skipped(tmp_path, cache_dir):
    db = tmp_path / "r.duckdb"
    result = runner.invoke(
        app,
        [
            "collect",
            "--db",
            str(db),
            "-f",
            "tensorflow",
            "-f",
            "onnxruntime",
            "-m",
            "cnn9",
            "--precision",
            "int8",
            "-n",
            "5",
            "--cache-dir",
            str(cache_dir),
        ],
    )
    assert result.exit_code == 0, result.output
    assert "cannot run here" in result.output and "tensorflow" in result.output
    assert "1 cannot run here" in result.output
    runs = query(db, "SELECT framework, precision, status, environment->>'$.cpu' AS cpu FROM runs")
    assert [(r["framework"], r["precision"], r["status"]) for r in runs] == [("onnxruntime", "int8", "ok")]
    assert "cpu_governor" in runs[0]["cpu"]


def test_run_waits_while_another_process_holds_the_db(tmp_path, cache_dir):
    """Someone queries the DB just as a run finishes: the run waits for the lock, then lands."""
    db = tmp_path / "r.duckdb"
    holders = []

    def hold_db_while_measuring(pid: int) -> None:
        code = (
            f"import duckdb, time; c = duckdb.connect({str(db)!r}, read_only=True); "
            "print('held', flush=True); time.sleep(5)"
        )
        holder = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
        assert holder.stdout.readline().strip() == "held"
        holders.append((holder, time.monotonic()))

    [outcome] = collect_once(
        db, cache_dir, on_spawn=hold_db_while_measuring, framework="onnxruntime", model="cnn9", iterations=5
    )
    holder, held_at = holders[0]
    assert holder.poll() is not None and time.monotonic() - held_at >= 5, (
        "the run was stored only after the lock was released"
    )
    assert outcome.status == "ok"
    assert query(db, "SELECT count(*) AS n FROM runs")[0]["n"] == 1
