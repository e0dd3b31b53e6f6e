"""The run record (collectors/record.py): written complete before the worker starts, read back
after a crash; one classification of how a worker ended; recovered runs keep their times.
No framework runs here: the worker's spool is written with the worker's own SpoolWriter."""

from __future__ import annotations

import datetime as dt
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from recovery_fakes import died, ended_process_pid, make_orchestrator, write_spool

from edgestats.collectors.core.runconfig import RunConfig
from edgestats.collectors.core.spool import SpoolContents
from edgestats.collectors.orchestrator import Orchestrator
from edgestats.collectors.power.meter_csv import ClockAnchor
from edgestats.collectors.record import (
    INTERRUPTED,
    RunEnd,
    RunRecord,
    RunRecordError,
    WorkerExit,
    classify_exit,
)
from edgestats.store.results import Store

CONFIG = RunConfig(framework="onnxruntime", model="cnn9", iterations=5, warmup=1, threads=2)
NOW = dt.datetime(2024, 5, 1, 12, 0, tzinfo=dt.UTC)


def stored_runs(orchestrator: Orchestrator) -> list[dict]:
    with Store.open(orchestrator.db_path, read_only=True) as store:
        return store.frame(
            "SELECT run_id, status, error_text, started_at, ended_at, threads, "
            "environment->>'$.clock.unix_ns' AS unix_ns, environment->>'$.cpu' AS cpu, "
            "environment->>'$.thread_env.OMP_NUM_THREADS' AS omp, "
            "config->>'$.sweep.shuffle_seed' AS shuffle_seed FROM runs"
        ).to_dicts()


# -- the record -------------------------------------------------------------------------------


def test_record_round_trips_through_json():
    record = RunRecord(
        run_id=uuid.uuid4(),
        device_id=uuid.uuid4(),
        config=CONFIG,
        started_at=NOW,
        clock=ClockAnchor(123, 456),
        cpu={"cpu_governor": "performance", "cpu_cur_khz": None},
        sweep_id=uuid.uuid4(),
        sweep={"shuffle_seed": 7, "axes": {"batch_size": [1, 2]}},
        thread_env={"OMP_NUM_THREADS": "2", "MKL_NUM_THREADS": None},
        memory_limit_bytes=2**29,
    )
    assert RunRecord.from_json(record.to_json()) == record
    bare = RunRecord(
        run_id=uuid.uuid4(),
        device_id=uuid.uuid4(),
        config=CONFIG,
        started_at=NOW,
        clock=ClockAnchor(1, 2),
        cpu={},
    )
    assert RunRecord.from_json(bare.to_json()) == bare


@pytest.mark.parametrize("text", ["{not json", '{"run_id": "x"}', "[]", ""])
def test_an_unreadable_record_names_its_file_and_what_to_do(tmp_path, text):
    path = tmp_path / f"{uuid.uuid4()}.meta.json"
    path.write_text(text)
    with pytest.raises(RunRecordError, match="not a readable run record") as caught:
        RunRecord.read(path)
    assert str(path) in str(caught.value) and "delete" in str(caught.value)


def test_the_record_is_complete_on_disk_before_the_model_is_prepared(tmp_path):
    orchestrator = make_orchestrator(tmp_path, memory_limit_bytes=2**30)
    before = dt.datetime.now(dt.UTC)
    record = orchestrator.begin(CONFIG, sweep_id=uuid.uuid4(), sweep={"shuffle_seed": 3})
    on_disk = RunRecord.read(orchestrator.spool_dir / f"{record.run_id}.meta.json")
    assert on_disk == record
    assert before <= on_disk.started_at <= dt.datetime.now(dt.UTC)
    assert on_disk.clock.unix_ns > 0 and "cpu_governor" in on_disk.cpu
    assert on_disk.thread_env["OMP_NUM_THREADS"] == "2" and on_disk.memory_limit_bytes == 2**30


# -- how a worker ended ---------------------------------------------------------------------------


def spool_of(**fields) -> SpoolContents:
    return SpoolContents(**fields)


@pytest.mark.parametrize(
    "spool, worker, status, text",
    [
        (spool_of(finished=True), WorkerExit(0), "ok", None),
        (spool_of(finished=True), WorkerExit(None), "ok", None),
        (
            spool_of(finished=True, diverged={"epoch": 1, "batch": 4, "loss": "nan"}),
            WorkerExit(0),
            "diverged",
            "epoch 1, batch 4",
        ),
        (
            spool_of(finished=True, diverged={"epoch": 0, "batch": 2, "loss": "inf"}),
            WorkerExit(None),
            "diverged",
            "batch 2",
        ),
        (spool_of(), WorkerExit(None, timed_out=True), "timeout", "exceeded --timeout 12 s"),
        (spool_of(), WorkerExit(-signal.SIGKILL), "killed", "SIGKILL (e.g. the kernel's OOM killer)"),
        (spool_of(), WorkerExit(-signal.SIGTERM), "killed", "killed by SIGTERM"),
        (spool_of(error="Traceback: boom"), WorkerExit(1), "error", "Traceback: boom"),
        (spool_of(error="Traceback: boom"), WorkerExit(None), "error", "Traceback: boom"),
        (spool_of(), WorkerExit(1, log_tail="  Segmentation fault\n"), "error", "Segmentation fault"),
        (spool_of(), WorkerExit(3), "error", "worker exited with status 3 without a message"),
        (spool_of(finished=True), WorkerExit(2, log_tail="late failure"), "error", "late failure"),
        (spool_of(), WorkerExit(None), "killed", INTERRUPTED),
    ],
)
def test_one_classification_for_every_way_a_worker_ends(spool, worker, status, text):
    end = classify_exit(spool, worker, NOW, timeout_s=12.0)
    assert isinstance(end, RunEnd) and end.status == status and end.ended_at == NOW
    assert end.error_text is None if text is None else text in end.error_text


def test_a_failed_allocation_under_a_memory_limit_says_so():
    spool = spool_of(error="RuntimeError: DefaultCPUAllocator: can't allocate memory")
    end = classify_exit(spool, WorkerExit(1), NOW, memory_limit_bytes=500 * 2**20)
    assert end.status == "error" and end.error_text.startswith("out of memory under --memory-limit-mb 500:\n")
    assert classify_exit(spool, WorkerExit(1), NOW).error_text == spool.error, "no limit: the error as it was"


# -- runs whose orchestrator died -------------------------------------------------------------


def test_a_run_whose_orchestrator_died_is_recovered_with_its_times(tmp_path):
    orchestrator = make_orchestrator(tmp_path)
    record = orchestrator.begin(CONFIG, sweep={"shuffle_seed": 11})
    spool_path = orchestrator.spool_dir / f"{record.run_id}.jsonl"
    write_spool(spool_path, ended_process_pid(), n_latencies=3)  # the worker died with it
    last_write = dt.datetime.fromtimestamp(spool_path.stat().st_mtime, dt.UTC)

    [outcome] = died(orchestrator).recover_orphans()  # the next collect
    assert (outcome.run_id, outcome.status, outcome.error_text, outcome.n_latencies) == (
        record.run_id,
        "killed",
        INTERRUPTED,
        3,
    )
    [run] = stored_runs(orchestrator)
    assert run["status"] == "killed" and run["error_text"] == INTERRUPTED
    assert run["started_at"] is not None and run["ended_at"] is not None
    assert run["started_at"] <= run["ended_at"]
    assert _utc(run["started_at"]) == record.started_at, "started when the record says, not at recovery"
    assert abs((_utc(run["ended_at"]) - last_write).total_seconds()) < 1e-3, (
        "ended when the spool was last written"
    )
    assert int(run["unix_ns"]) == record.clock.unix_ns and "cpu_governor" in run["cpu"]
    assert run["omp"] == "2" and run["shuffle_seed"] == "11", "the record's facts, not recovery-time ones"
    assert list(orchestrator.spool_dir.iterdir()) == [], "its files are gone once stored"


def test_a_finished_worker_whose_orchestrator_died_is_recovered_as_ok(tmp_path):
    orchestrator = make_orchestrator(tmp_path)
    record = orchestrator.begin(CONFIG)
    write_spool(
        orchestrator.spool_dir / f"{record.run_id}.jsonl", ended_process_pid(), n_latencies=5, finished=True
    )
    [outcome] = died(orchestrator).recover_orphans()
    assert outcome.status == "ok"
    [run] = stored_runs(orchestrator)
    assert run["status"] == "ok" and run["started_at"] <= run["ended_at"]


def test_a_worker_still_running_is_stopped_and_ends_at_recovery(tmp_path):
    orchestrator = make_orchestrator(tmp_path)
    record = orchestrator.begin(CONFIG)
    # A stand-in worker: recovery only kills a process whose command line names the worker module.
    worker = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(120)", "edgestats.collectors.worker"],
        start_new_session=True,
    )
    try:
        write_spool(orchestrator.spool_dir / f"{record.run_id}.jsonl", worker.pid, n_latencies=2)
        before_recovery = dt.datetime.now(dt.UTC)
        [outcome] = died(orchestrator).recover_orphans()
        assert worker.wait(timeout=10) == -signal.SIGKILL
    finally:
        if worker.poll() is None:
            os.killpg(worker.pid, signal.SIGKILL)
    assert outcome.status == "killed" and outcome.error_text == INTERRUPTED
    [run] = stored_runs(orchestrator)
    assert run["started_at"] <= run["ended_at"] and _utc(run["ended_at"]) >= before_recovery


def test_a_run_that_died_before_its_worker_started_is_recovered_with_its_times(tmp_path):
    orchestrator = make_orchestrator(tmp_path)
    record = orchestrator.begin(CONFIG)  # died while preparing the model: no spool
    [outcome] = died(orchestrator).recover_orphans()
    assert outcome.status == "killed" and outcome.n_latencies == 0
    [run] = stored_runs(orchestrator)
    assert run["run_id"] == str(record.run_id) and run["started_at"] <= run["ended_at"]


def test_a_meta_file_from_before_the_typed_record_is_still_recovered(tmp_path):
    """A spool left by an older edgestats (meta.json without started_at, clock or cpu) is stored,
    not refused: started_at is the file's mtime, written just before that run started."""
    import json
    from dataclasses import asdict

    orchestrator = make_orchestrator(tmp_path)
    run_id = uuid.uuid4()
    meta = orchestrator.spool_dir / f"{run_id}.meta.json"
    meta.write_text(
        json.dumps(
            {
                "run_id": str(run_id),
                "sweep_id": None,
                "device_id": str(uuid.uuid4()),
                "sweep": {},
                "config": asdict(CONFIG),
                "memory_limit_bytes": None,
            }
        )
    )
    written = dt.datetime.fromtimestamp(meta.stat().st_mtime, dt.UTC)
    write_spool(orchestrator.spool_dir / f"{run_id}.jsonl", ended_process_pid(), n_latencies=4, finished=True)
    [outcome] = orchestrator.recover_orphans()
    assert (outcome.status, outcome.n_latencies) == ("ok", 4)
    [run] = stored_runs(orchestrator)
    assert abs((_utc(run["started_at"]) - written).total_seconds()) < 1e-3
    assert run["started_at"] <= run["ended_at"] and run["unix_ns"] is None


# Fixed names: xdist workers must collect the same test ids.
@pytest.mark.parametrize(
    "name, text",
    [
        ("0b7e3f4a-1111-4c2d-9e8f-000000000001.meta.json", '{"run_id": '),  # cut short
        ("notes.meta.json", "{}"),  # not a run id
        ("0b7e3f4a-1111-4c2d-9e8f-000000000002.meta.json", "\udcff"),
    ],
)  # not UTF-8
def test_an_unreadable_record_is_moved_aside_with_a_warning_and_recovery_goes_on(tmp_path, name, text):
    dead = make_orchestrator(tmp_path)
    good = dead.begin(CONFIG)
    bad = dead.spool_dir / name
    bad.write_bytes(text.encode("utf-8", "surrogateescape"))
    (bad.parent / name.replace(".meta.json", ".jsonl")).write_text("{}\n")  # its spool goes with it
    orchestrator = died(dead)
    [outcome] = orchestrator.recover_orphans()
    assert outcome.run_id == good.run_id, "the readable run is recovered all the same"
    [warning] = orchestrator.warnings
    assert "moved 2 unreadable spool files" in warning and str(dead.spool_dir / "damaged") in warning
    assert sorted(p.name for p in (dead.spool_dir / "damaged").iterdir()) == sorted(
        [name, name.replace(".meta.json", ".jsonl")]
    )
    assert orchestrator.recover_orphans() == [] and orchestrator.warnings == [warning], (
        "once moved, no longer in the way"
    )


def test_runs_of_a_live_collect_are_never_recovered_by_another(tmp_path):
    """Ownership is proven by a held lock: a second collect leaves the first one's runs alone,
    its worker included, however long the run takes."""
    first = make_orchestrator(tmp_path)
    record = first.begin(CONFIG)
    worker = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(60)", "edgestats.collectors.worker"],
        start_new_session=True,
    )
    try:
        write_spool(first.spool_dir / f"{record.run_id}.jsonl", worker.pid, n_latencies=2)
        second = make_orchestrator(tmp_path)
        assert second.recover_orphans() == []
        assert worker.poll() is None, "the live collect's worker was not killed"
        assert (first.spool_dir / f"{record.run_id}.meta.json").exists() and stored_runs(first) == []
        first.close()  # now it is gone: its run is recovered, its worker stopped
        [outcome] = second.recover_orphans()
        assert outcome.run_id == record.run_id and worker.wait(timeout=10) == -signal.SIGKILL
    finally:
        if worker.poll() is None:
            os.killpg(worker.pid, signal.SIGKILL)
    assert sorted(p.name for p in first.spool_dir.iterdir()) == [second.owner.name]


def test_a_recovered_run_says_so_and_keeps_its_telemetry(tmp_path):
    from edgestats.collectors.core.spool import run_paths
    from edgestats.collectors.telemetry.batchfile import write_batch
    from edgestats.collectors.telemetry.sampler import Sampler

    orchestrator = make_orchestrator(tmp_path)
    record = orchestrator.begin(CONFIG)
    paths = run_paths(orchestrator.spool_dir, record.run_id)
    write_spool(paths["spool"], ended_process_pid(), n_latencies=5, finished=True)
    with Sampler(os.getpid(), 50) as sampler:
        time.sleep(0.2)
    batch = sampler.stop()
    assert write_batch(paths["samples"], batch)
    died(orchestrator).recover_orphans()
    with Store.open(orchestrator.db_path, read_only=True) as store:
        run = store.frame(
            "SELECT status, environment->>'$.recovered.worker' AS how, "
            "environment->>'$.recovered.telemetry' AS telemetry FROM runs"
        ).to_dicts()[0]
        n_samples = store.frame("SELECT count(*) AS n FROM samples").to_dicts()[0]["n"]
    assert run == {"status": "ok", "how": "had ended", "telemetry": "kept"}
    assert n_samples == len(batch) > 0


def _utc(value: dt.datetime) -> dt.datetime:
    """A TIMESTAMPTZ read back (in the session's zone) or a naive UTC TIMESTAMP, as aware UTC."""
    return value.astimezone(dt.UTC) if value.tzinfo else value.replace(tzinfo=dt.UTC)


def test_a_record_being_written_by_a_live_collect_is_not_taken_for_a_damaged_one(tmp_path):
    """Records are written under a temporary name and renamed into place, so another collect's
    recovery never reads one half written (it used to read it as damaged and move the live run's
    files aside); the temporary file itself is not a record."""
    live = make_orchestrator(tmp_path)
    record = live.begin(CONFIG)
    written = live.spool_dir / f"{record.run_id}.meta.json"
    assert RunRecord.read(written) == record and not list(live.spool_dir.glob(".tmp-*")), "renamed into place"
    (live.spool_dir / f".tmp-{os.getpid()}-{uuid.uuid4()}.meta.json").write_text('{"run_id": ')  # mid-write
    other = make_orchestrator(tmp_path)
    assert other.recover_orphans() == [] and other.warnings == []
    assert not (live.spool_dir / "damaged").exists() and written.exists()


def test_a_record_deleted_between_listing_and_reading_is_skipped_quietly(tmp_path, monkeypatch):
    """The listing of the spool folder and the reading of each record are not one step: another
    collect may store its run, clean up and exit in between. Such a record is gone, not damaged."""
    finished = make_orchestrator(tmp_path)
    record = finished.begin(CONFIG)
    meta = finished.spool_dir / f"{record.run_id}.meta.json"
    listing = sorted(finished.spool_dir.glob("*.meta.json"))
    for path in finished.spool_dir.glob(f"{record.run_id}.*"):
        path.unlink()  # stored and cleaned up by its owner...
    finished.close()  # ...which then exited
    other = make_orchestrator(tmp_path)
    glob = Path.glob
    monkeypatch.setattr(
        Path, "glob", lambda self, pattern: iter(listing) if pattern == "*.meta.json" else glob(self, pattern)
    )
    assert other.recover_orphans() == [] and other.warnings == [] and not meta.exists()
    assert not (other.spool_dir / "damaged").exists() and stored_runs(other) == []


def test_an_orphan_two_collects_recover_at_once_is_stored_once(tmp_path, monkeypatch):
    """Two collects starting together after a crash both see the orphan not yet stored: the
    second store is refused by the run id (the key) and that collect moves on quietly."""
    orchestrator = make_orchestrator(tmp_path)
    record = orchestrator.begin(CONFIG)
    spool = orchestrator.spool_dir / f"{record.run_id}.jsonl"
    write_spool(spool, ended_process_pid(), n_latencies=5, finished=True)
    first = died(orchestrator)
    [outcome] = first.recover_orphans()
    # what the second collect saw: the dead collect's files, before the first one cleaned them up
    record.write(first.spool_dir / f"{record.run_id}.meta.json")
    write_spool(spool, ended_process_pid(), n_latencies=5, finished=True)
    real_has_run, asked = Store.has_run, []

    def not_yet_the_first_time(self, run_id):  # recovery's own check ran before the first collect stored
        asked.append(run_id)
        return len(asked) > 1 and real_has_run(self, run_id)

    monkeypatch.setattr(Store, "has_run", not_yet_the_first_time)
    assert died(first).recover_orphans() == []
    assert [run["run_id"] for run in stored_runs(orchestrator)] == [str(record.run_id)]
    assert not (first.spool_dir / f"{record.run_id}.meta.json").exists()
