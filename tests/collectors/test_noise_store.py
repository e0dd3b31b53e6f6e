"""Where the noise sentinel's verdict goes: runs.noisy / noise_reason and environment.noise, NULL
for a recovered run (nothing watched the machine), the run_summary view, the sweep settings, and
`analyze --noisy`. No framework runs here."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from builders import write_inference_run
from typer.testing import CliRunner

from edgestats.analysis.core.options import AnalysisOptions
from edgestats.analysis.load.frames import load_data
from edgestats.cli import app
from edgestats.collectors.collect import noise_policy
from edgestats.collectors.core.runconfig import RunConfig
from edgestats.collectors.core.spool import SpoolContents, SpoolWriter, read_spool, run_paths
from edgestats.collectors.orchestrator import Orchestrator
from edgestats.collectors.record import RunEnd
from edgestats.collectors.sweep import SweepError, build_sweep
from edgestats.collectors.telemetry.procfs import CLK_TCK
from edgestats.collectors.telemetry.sentinel import MachineState, NoiseThresholds, noise_record
from edgestats.errors import EdgestatsError
from edgestats.store.results import Store

CONFIG = RunConfig(framework="onnxruntime", model="cnn9", iterations=5, warmup=1)


def orchestrator_on(db: Path) -> Orchestrator:
    with Store.open(db) as store:
        device_id = store.register_device({"name": "test-device"})
    return Orchestrator(db, device_id=device_id, cache_dir=db.parent / "cache")


def stored(db: Path) -> list[dict]:
    with Store.open(db, read_only=True) as store:
        return store.frame(
            "SELECT r.noisy, r.noise_reason, r.environment->'$.noise' AS noise, s.noisy AS view_noisy "
            "FROM runs r JOIN run_summary s USING (run_id) ORDER BY r.started_at"
        ).to_dicts()


def test_a_judged_run_stores_its_verdict_and_figures(tmp_path):
    db = tmp_path / "r.duckdb"
    with orchestrator_on(db) as orchestrator:
        # 2 CPUs for 1 s, 1 s busy of which 0.5 s ours: others used 25 % (noisy at the default 10 %)
        before = MachineState(t_s=0.0, cpu_busy_ticks=0, cpu_all_ticks=0, own_cpu_s=0.0, cpus=2)
        after = MachineState(
            t_s=1.0, cpu_busy_ticks=CLK_TCK, cpu_all_ticks=2 * CLK_TCK, own_cpu_s=0.5, cpus=2
        )
        for limits in (NoiseThresholds(cpu_pct=30.0), NoiseThresholds()):  # quiet; then noisy
            record = orchestrator.begin(CONFIG)
            noise = noise_record(before, after, limits)
            orchestrator.store(
                record, RunEnd("ok", None, record.started_at), SpoolContents(), environment={"noise": noise}
            )
    quiet, noisy = stored(db)
    assert quiet["noisy"] is quiet["view_noisy"] is False and quiet["noise_reason"] is None
    assert '"outside_cpu_pct"' in quiet["noise"] and '"thresholds"' in quiet["noise"]
    assert noisy["noisy"] is noisy["view_noisy"] is True
    assert noisy["noise_reason"] == "other processes used 25 % of 2 CPUs (> 10 %)"


def test_a_recovered_run_is_not_judged(tmp_path):
    """Its collect died: nothing read the machine around the worker, so noisy is NULL, not false."""
    db = tmp_path / "r.duckdb"
    first = orchestrator_on(db)
    record = first.begin(CONFIG)
    spool = SpoolWriter(run_paths(first.spool_dir, record.run_id)["spool"])
    t0 = time.monotonic_ns()
    spool.write("start", pid=1, spawn_ns=t0 - 1000, start_ns=t0)
    spool.write("end", end_ns=t0 + 1000)
    spool.close()
    assert read_spool(run_paths(first.spool_dir, record.run_id)["spool"]).finished
    first.close()  # the collect died; the next one recovers its run
    with orchestrator_on(db) as second:
        [outcome] = second.recover_orphans()
    assert outcome.status == "ok"
    [run] = stored(db)
    assert run["noisy"] is None and run["view_noisy"] is None and run["noise"] is None


def test_noise_settings_of_a_sweep():
    sweep = build_sweep(
        {
            "framework": ["onnxruntime"],
            "model": ["cnn9"],
            "on_noise": "wait",
            "noise_wait": 5,
            "noise_cpu_pct": 40,
        }
    )
    policy = noise_policy(sweep)
    assert (policy.on_noise, policy.wait_s, policy.limits.cpu_pct) == ("wait", 5.0, 40.0)
    assert noise_policy(build_sweep({"framework": ["onnxruntime"], "model": ["cnn9"]})).on_noise == "warn"
    with pytest.raises(SweepError, match="on_noise: 'panic' is not valid; use one of warn, wait, fail"):
        build_sweep({"framework": ["onnxruntime"], "model": ["cnn9"], "on_noise": "panic"})
    with pytest.raises(SweepError, match="noise_cpu_pct: 150.0 must be at most 100"):
        build_sweep({"framework": ["onnxruntime"], "model": ["cnn9"], "noise_cpu_pct": 150})


def test_a_bad_on_noise_flag_is_one_line():
    result = CliRunner().invoke(
        app, ["collect", "--db", "x.duckdb", "-f", "onnxruntime", "-m", "cnn9", "--on-noise", "maybe"]
    )
    assert (
        result.exit_code == 1
        and "on_noise: 'maybe' is not valid" in result.output
        and "Traceback" not in result.output
    )


def db_with_noisy_runs(path: Path) -> Path:
    with Store.open(path) as store:
        device_id = store.register_device({"name": "dev"})
        ids = [write_inference_run(store, device_id, seed=s) for s in range(3)]
        store.con.execute(
            "UPDATE runs SET noisy = true, noise_reason = 'other processes used 80 % of 2 CPUs' "
            "WHERE run_id = ?",
            [str(ids[0])],
        )
        store.con.execute("UPDATE runs SET noisy = false WHERE run_id = ?", [str(ids[1])])
    return path  # the third run was never judged (NULL), like an imported one


def test_analyze_includes_noisy_runs_with_a_note_or_excludes_them(tmp_path):
    db = db_with_noisy_runs(tmp_path / "n.duckdb")
    included = load_data(db, filters=AnalysisOptions().filters)
    assert included.runs.height == 3 and sorted(included.runs["noisy"].to_list(), key=str) == [
        False,
        None,
        True,
    ]
    assert included.notes == ["1 of 3 runs were noisy (runs.noise_reason); --noisy exclude drops them"]
    excluded = load_data(db, filters=AnalysisOptions(noisy="exclude").filters)
    assert excluded.runs.height == 2 and excluded.notes == []
    assert True not in excluded.runs["noisy"].to_list(), "unjudged runs (NULL) are kept"
    with pytest.raises(EdgestatsError, match="--noisy 'some'"):
        AnalysisOptions(noisy="some").check()


def test_analyze_cli_noisy_option(tmp_path):
    db = db_with_noisy_runs(tmp_path / "n.duckdb")
    runner = CliRunner()
    shown = runner.invoke(app, ["analyze", str(db), "--only", "summary"])
    assert shown.exit_code == 0 and "1 of 3 runs were noisy" in shown.output
    dropped = runner.invoke(app, ["analyze", str(db), "--only", "summary", "--noisy", "exclude", "--json"])
    assert dropped.exit_code == 0 and "were noisy" not in dropped.output and '"n_runs": 2' in dropped.output
