"""--warmup auto (the worker on a fake clock, and its stopping rule on seeded series), the warm-up
values sweeps and flags take, what a collected run stores of its steady state, and one real collect
of each kind (collectors/steady_state.py, worker.py, runrows.py).
Cost: about 4 s of test time in make test's parallel lane (measured from a fresh clone on 2 cores)."""

from __future__ import annotations

import json
import subprocess
import sys
import types
from pathlib import Path

import numpy as np
import pytest
from latency_series import series

from edgestats.collectors import worker
from edgestats.collectors.core.runconfig import WARMUP_AUTO_LIMIT, RunConfig, auto_warmup_limit, parse_warmup
from edgestats.collectors.core.spool import SpoolContents, SpoolWriter, read_spool
from edgestats.collectors.orchestrator import Orchestrator
from edgestats.collectors.runrows import steady_state_columns, warmup_count
from edgestats.collectors.steady_state import AUTO_FIRST_CHECK, auto_warmup_done, next_auto_check
from edgestats.collectors.sweep import SweepError, build_sweep
from edgestats.store.results import Store

# -- --warmup auto ------------------------------------------------------------------------------


def test_warmup_values_from_sweeps_and_flags():
    assert parse_warmup("auto") == f"auto:{WARMUP_AUTO_LIMIT}" and parse_warmup(" Auto:300 ") == "auto:300"
    assert parse_warmup("7") == 7 and auto_warmup_limit("auto:300") == 300 and auto_warmup_limit(5) is None
    for bad in ("auto:0", "auto:x", "often", "1.5"):
        with pytest.raises(ValueError):
            parse_warmup(bad)
    sweep = build_sweep({"framework": "onnxruntime", "model": "cnn9", "warmup": ["auto", 5, "auto:200"]})
    assert sweep.axes["warmup"] == [f"auto:{WARMUP_AUTO_LIMIT}", 5, "auto:200"]
    hashes = {c.config_hash() for c in sweep.configs()}
    assert len(hashes) == 3, "auto and a fixed count are different configurations"
    for bad, message in (("often", 'give a count of warm-up inferences, "auto"'), (1.5, 'or "auto"')):
        with pytest.raises(SweepError, match=message):
            build_sweep({"framework": "onnxruntime", "model": "cnn9", "warmup": bad})


class FakeClock:
    """time for the worker: each inference takes the next latency of a planned series."""

    def __init__(self, latencies_ns):
        self.planned, self.now, self.done = list(latencies_ns), 0, 0

    def perf_counter_ns(self) -> int:
        return self.now

    monotonic_ns = perf_counter_ns

    def infer(self, _batch) -> None:
        self.now += int(self.planned[self.done])
        self.done += 1


def auto_warmup(
    tmp_path: Path, monkeypatch, planned, limit: int, iterations: int = 100
) -> tuple[int, SpoolContents]:
    clock = FakeClock(planned)
    monkeypatch.setattr(
        worker,
        "time",
        types.SimpleNamespace(perf_counter_ns=clock.perf_counter_ns, monotonic_ns=clock.monotonic_ns),
    )
    spool_path = tmp_path / "run.jsonl"
    spool = SpoolWriter(spool_path)
    adapter = types.SimpleNamespace(infer=clock.infer)
    count = worker.run_auto_warmup(adapter, None, spool, limit, iterations)
    spool.close()
    return count, read_spool(spool_path)


def test_auto_warmup_stops_once_the_steady_state_covers_half_of_it(tmp_path, monkeypatch):
    """In the worker, on a fake clock: a warm-up that drifts down 30 % over 200 inferences, then flat,
    stops once the steady part is as long as the drift (about 400), far below the limit; every
    warm-up latency is spooled and marked, and the decision is in the spool's environment."""
    planned = series(np.random.default_rng(40), 5000, "drift", change=200)
    count, spool = auto_warmup(tmp_path, monkeypatch, planned, limit=3000)
    decision = spool.environment["warmup_auto"]
    assert 400 <= count <= 500 and decision["stopped_by"] == "steady state", decision
    assert abs(decision["steady_from"] - 200) <= 20 and decision["inferences"] == count
    assert [r["i"] for r in spool.latencies] == list(range(count)) and all(r["w"] for r in spool.latencies)
    assert [r["ns"] for r in spool.latencies] == [int(v) for v in planned[:count]]


def test_auto_warmup_of_a_quiet_flat_run_stops_at_the_first_check(tmp_path, monkeypatch):
    planned = series(np.random.default_rng(41), 500, "flat", change=0, noise=0.005)
    count, spool = auto_warmup(tmp_path, monkeypatch, planned, 1000)
    assert count == AUTO_FIRST_CHECK and spool.environment["warmup_auto"]["checks"] == 1


def test_auto_warmup_that_never_settles_stops_at_its_limit(tmp_path, monkeypatch):
    planned = series(np.random.default_rng(42), 2000, "throughout", change=0, drop=1.0)
    count, spool = auto_warmup(tmp_path, monkeypatch, planned, limit=700)
    assert count == 700 and spool.environment["warmup_auto"]["stopped_by"] == "limit"
    (tmp_path / "few").mkdir()
    few, spool = auto_warmup(tmp_path / "few", monkeypatch, planned, limit=AUTO_FIRST_CHECK - 1)
    assert few == AUTO_FIRST_CHECK - 1 and spool.environment["warmup_auto"]["checks"] == 0


def auto_stop(latencies: list[float], iterations: int, limit: int) -> int:
    """Where --warmup auto stops on this series (the worker's schedule of checks, without the worker)."""
    at = AUTO_FIRST_CHECK
    while at < limit:
        if auto_warmup_done(latencies[:at], iterations) is not None:
            return at
        at = next_auto_check(at)
    return limit


def test_auto_warmup_does_not_stop_before_the_drift_ends():
    """300 seeded warm-ups, 100 steady iterations to follow, limit 1000: latency falling 10-30 % (log)
    over the first 50-300 inferences, then flat, noise SD 1-3 % (normal): auto stops after the drift
    ended in at least 95 %, and before the limit in at least 95 %; 100 flat ones (noise 1-3 %)
    stop within 300 inferences in at least 95 %."""
    rng = np.random.default_rng(46)
    after, before_limit = 0, 0
    for _ in range(300):
        change = int(rng.integers(50, 300))
        drop, noise = rng.uniform(0.1, 0.3), rng.uniform(0.01, 0.03)
        stop = auto_stop(series(rng, 1000, "drift", change=change, drop=drop, noise=noise), 100, 1000)
        after += stop >= change
        before_limit += stop < 1000
    flat = [
        auto_stop(series(rng, 1000, "flat", change=0, noise=rng.uniform(0.01, 0.03)), 100, 1000)
        for _ in range(100)
    ]
    quick = sum(stop <= 300 for stop in flat)
    print(f"auto: after the drift {after / 300:.1%}, before the limit {before_limit / 300:.1%}")
    print(f"auto, flat: stops at a median {np.median(flat):.0f}, within 300 in {quick} %")
    assert after >= 0.95 * 300 and before_limit >= 0.95 * 300 and quick >= 95


def test_auto_checks_are_geometric():
    """The checks' total cost stays O(n): about log(n) / log(1.1) checks, not n / 5."""
    at, checks = AUTO_FIRST_CHECK, 1
    while at < 100_000:
        at, checks = next_auto_check(at), checks + 1
    assert checks < 90


# -- what a run stores --------------------------------------------------------------------------


def spool_of(latencies: list[float], warmup: int) -> SpoolContents:
    return SpoolContents(
        latencies=[{"i": i, "w": i < warmup, "s": i, "ns": int(v)} for i, v in enumerate(latencies)]
    )


def test_the_run_row_gets_the_verdict_and_the_warmup_count():
    planned = series(np.random.default_rng(43), 400, "drift", change=120)
    columns, detail = steady_state_columns(spool_of(planned, 5))
    assert abs(columns["steady_from"] - 120) <= 12 and columns["no_steady_state"] is False
    assert detail["block_latencies"] == 5 and abs(detail["steady_drift_pct"]) < 2
    drifting = series(np.random.default_rng(44), 400, "throughout", change=0)
    assert steady_state_columns(spool_of(drifting, 5))[0] == {"steady_from": None, "no_steady_state": True}
    assert steady_state_columns(SpoolContents()) == ({"steady_from": None, "no_steady_state": None}, {})
    record = types.SimpleNamespace(config=RunConfig(framework="onnxruntime", model="cnn9", warmup="auto:900"))
    assert warmup_count(record, spool_of(planned, 237)) == 237
    record = types.SimpleNamespace(config=RunConfig(framework="onnxruntime", model="cnn9", warmup=5))
    assert warmup_count(record, spool_of(planned, 237)) == 5


def test_a_stored_run_carries_its_verdict_and_imported_runs_none(tmp_path):
    """Through the store path every collected run takes (runrows.store_run, here from a recovered
    spool): runs.steady_from / no_steady_state and the same in run_summary; a run written without
    them (an import) has NULL."""
    db = tmp_path / "r.duckdb"
    with Store.open(db) as store:
        device_id = store.register_device({"name": "test-device"})
    orchestrator = Orchestrator(db, device_id=device_id, cache_dir=tmp_path / "cache")
    record = orchestrator.begin(RunConfig(framework="onnxruntime", model="cnn9", iterations=395, warmup=5))
    planned = series(np.random.default_rng(45), 400, "step", change=150, drop=0.2)
    spool = SpoolWriter(orchestrator.spool_dir / f"{record.run_id}.jsonl")
    ended = subprocess.Popen([sys.executable, "-c", "pass"])
    ended.wait()  # the worker's pid: a process that has ended
    spool.write("start", pid=ended.pid, spawn_ns=1, start_ns=2)
    for i, ns in enumerate(planned):
        spool.write("lat", i=i, w=i < 5, s=10 + i, ns=int(ns))
    spool.write("end", end_ns=10_000)
    spool.close()
    orchestrator.close()  # its collect died: the next one recovers and stores the run
    Orchestrator(db, device_id=device_id, cache_dir=tmp_path / "cache").recover_orphans()
    with Store.open(db) as store:
        store.write_run(
            {"device_id": device_id, "kind": "inference", "status": "ok", "source": "import:t.csv"}
        )
        rows = store.con.execute(
            "SELECT r.source, r.steady_from, r.no_steady_state, s.steady_from, s.no_steady_state, "
            "r.environment->>'$.steady_state.block_latencies' FROM runs r JOIN run_summary s USING (run_id) "
            "ORDER BY r.source"
        ).fetchall()
    assert rows[0][1:] == (150, False, 150, False, "5"), rows
    assert rows[1][1:5] == (None, None, None, None)


def test_runs_stored_before_the_migration_are_not_judged(tmp_path):
    """0008_steady_state on a DB of schema 7 holding a run: its steady_from and no_steady_state are
    NULL (nothing judged it), never false, in runs and in run_summary."""
    import duckdb

    from edgestats.store import migrations

    path = tmp_path / "v7.duckdb"
    con = duckdb.connect(str(path))
    con.execute(migrations.CREATE_MIGRATIONS_TABLE)
    for migration in [m for m in migrations.available_migrations() if m.version <= 7]:
        con.execute(migration.sql)
        con.execute(
            "INSERT INTO schema_migrations (version, name, edgestats_version) VALUES (?, ?, 'old')",
            [migration.version, migration.name],
        )
    con.execute("INSERT INTO devices (device_id, name, registered_at) VALUES (uuid(), 'd', now())")
    con.execute(
        "INSERT INTO runs (run_id, device_id, kind, status, source, model, edgestats_version) "
        "SELECT uuid(), device_id, 'inference', 'ok', 'collect', 'cnn9', 'old' FROM devices"
    )
    con.close()
    with Store.open(path) as store:
        assert store.con.execute("SELECT model, steady_from, no_steady_state FROM runs").fetchall() == [
            ("cnn9", None, None)
        ]
        assert store.con.execute("SELECT steady_from, no_steady_state FROM run_summary").fetchall() == [
            (None, None)
        ]


# -- one real collect of each kind --------------------------------------------------------------


def collect(db: Path, cache_dir: Path, warmup) -> dict:
    from edgestats.collectors.collect import execute, open_orchestrator, plan

    sweep = build_sweep(
        {
            "framework": ["onnxruntime"],
            "model": ["cnn9"],
            "iterations": [100],
            "warmup": [warmup],
            "sample_hz": 0.0,
            "power": "none",
        }
    )
    orchestrator = open_orchestrator(db, sweep, cache_dir=cache_dir)
    [outcome] = execute(plan(db, sweep, orchestrator), orchestrator, sweep)
    assert outcome.status == "ok", outcome
    with Store.open(db, read_only=True) as store:
        [run] = store.frame(
            "SELECT r.warmup, r.steady_from, r.no_steady_state, r.config, r.environment, "
            "(SELECT count(*) FROM latencies l WHERE l.run_id = r.run_id AND l.warmup) AS n_warmup "
            "FROM runs r"
        ).to_dicts()
    run["environment"] = json.loads(run["environment"])
    return run


@pytest.mark.frameworks
def test_a_real_run_stores_its_steady_state(tmp_path, model_cache):
    """ONNX Runtime, cnn9, 5 + 100 inferences: the run is judged (a verdict, not NULL), and a run
    that reached its steady state says where, inside the run."""
    run = collect(tmp_path / "r.duckdb", model_cache, 5)
    assert run["warmup"] == run["n_warmup"] == 5
    assert run["no_steady_state"] in (True, False)
    assert (run["steady_from"] is None) == run["no_steady_state"]
    assert run["steady_from"] is None or 0 <= run["steady_from"] < 105
    assert run["environment"]["steady_state"]["block_latencies"] == 5


@pytest.mark.frameworks
def test_a_real_run_with_auto_warmup_stores_the_detected_count(tmp_path, model_cache):
    """--warmup auto:400: the stored warm-up count is the one detection decided (its latencies marked
    warm-up), at least the first check's and at most the limit, with the decision in environment."""
    run = collect(tmp_path / "r.duckdb", model_cache, "auto:400")
    decision = run["environment"]["warmup_auto"]
    assert json.loads(run["config"])["warmup"] == "auto:400"
    assert AUTO_FIRST_CHECK <= run["warmup"] == run["n_warmup"] == decision["inferences"] <= 400
    if decision["stopped_by"] == "steady state":
        assert 0 <= decision["steady_from"] <= run["warmup"] // 2
    else:
        assert decision["stopped_by"] == "limit" and run["warmup"] == 400
    assert run["no_steady_state"] in (True, False)
