"""The orchestrator of `edgestats collect`: one fresh worker process per run, the only DB writer.

For each run: prepare the model file (cached, separate process), spawn the worker in its own
session (so a timeout kills its whole process tree), wait, read the spool, and write the run
with all its rows in one transaction. The DB is opened only for that write, so other tools can
read it between runs.

Status: ok | diverged | error (exception text kept) | timeout (--timeout) | killed (a signal,
e.g. the OOM killer), decided by record.classify_exit. Whatever the worker flushed before it died
is stored with the run. Each run's record (record.py) is written next to its spool before the
worker starts, and the files stay until the run is in the DB: a run whose orchestrator died is
recovered by the next collect, with its started_at and an ended_at.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import signal
import subprocess
import sys
import time
import uuid
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Callable

import pyarrow as pa

from edgestats import __version__
from edgestats.collectors.adapters.prepare import cached_artifact
from edgestats.collectors.host.facts import read_cpu_frequency_state
from edgestats.collectors.power.meter_csv import ClockAnchor
from edgestats.collectors.record import RunEnd, RunRecord, WorkerExit, classify_exit
from edgestats.collectors.runconfig import RunConfig
from edgestats.collectors.spool import SpoolContents, read_spool
from edgestats.collectors.telemetry.sampler import SampleBatch
from edgestats.collectors.telemetry.session import RunTelemetry, Telemetry, run_telemetry, with_epoch_energy
from edgestats.collectors.training.rows import training_outcome, with_training
from edgestats.collectors.worker import MEMORY_LIMIT_ENV
from edgestats.errors import DatabaseLockedError
from edgestats.store import Store

THREAD_ENV_VARS = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "TF_NUM_INTRAOP_THREADS")
STORE_WAIT_S = 120.0  # how long a finished run waits for another process to release the DB


@dataclass
class RunOutcome:
    run_id: uuid.UUID
    config: RunConfig
    status: str
    error_text: str | None
    n_latencies: int
    seconds: float
    n_batches: int = 0                  # training runs: optimizer steps stored
    accuracy_pct: float | None = None   # training runs: the last epoch's test accuracy


def worker_env(config: RunConfig, memory_limit_bytes: int | None = None) -> dict[str, str]:
    """The worker's environment: math-library thread counts set before the framework loads, and
    the heap cap the worker applies to itself."""
    env = dict(os.environ)
    if config.threads:
        for name in THREAD_ENV_VARS:
            env[name] = str(config.threads)
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    if memory_limit_bytes:
        env[MEMORY_LIMIT_ENV] = str(memory_limit_bytes)
    return env


def _tail(path: Path, limit: int = 4000) -> str:
    if not path.exists():
        return ""
    data = path.read_bytes()[-limit:]
    return data.decode("utf-8", "replace")


def _now() -> dt.datetime:
    return dt.datetime.now(dt.timezone.utc)


def run_row(record: RunRecord, end: RunEnd, spool: SpoolContents, tele: RunTelemetry | None = None) -> dict[str, Any]:
    """The runs row of a collected run, from its record, how it ended and its spool."""
    config, versions = record.config, spool.versions
    telemetry_columns = tele.run_columns if tele is not None else {}
    return {**telemetry_columns,
        "run_id": str(record.run_id), "sweep_id": str(record.sweep_id) if record.sweep_id else None,
        "device_id": str(record.device_id), "kind": "inference", "status": end.status, "error_text": end.error_text,
        "framework": config.framework, "framework_version": next(iter(versions.values()), None),
        "runtime": spool.runtime or config.runtime,
        "model": config.model, "model_params": spool.model.get("params"), "model_flops": spool.model.get("flops"),
        "batch_size": config.batch_size, "threads": config.threads, "precision": config.precision,
        "accelerator": config.accelerator, "iterations": config.iterations, "warmup": config.warmup,
        "seed": config.seed, "repeat_index": config.repeat_index,
        "config": {**asdict(config), "sweep": record.sweep}, "config_hash": config.config_hash(),
        "environment": {"versions": versions, "runtime_detail": spool.environment, "model": spool.model,
                        "thread_env": record.thread_env, "python": sys.version.split()[0],
                        "clock": record.clock_fields, "cpu": record.cpu,
                        "memory_limit_bytes": record.memory_limit_bytes,
                        "worker_start": spool.start, "torn_spool_lines": spool.torn_lines,
                        "sampler": tele.stats if tele is not None else {}},
        "started_at": record.started_at, "ended_at": end.ended_at,
        "edgestats_version": __version__, "source": "collect",
    }


def phase_list(spool: SpoolContents) -> list[dict[str, Any]]:
    rows = sorted(spool.phases, key=lambda p: p["seq"])
    if spool.start and spool.start.get("spawn_ns"):
        # Process start-up (interpreter + edgestats) is harness time, before pCAMP's phases.
        rows = [{"phase": "process_start", "seq": -1, "start_ns": spool.start["spawn_ns"], "end_ns": spool.start["start_ns"]}, *rows]
    return rows


def phase_rows(rows: list[dict[str, Any]]) -> pa.Table:
    return pa.table({
        "seq": pa.array([p["seq"] for p in rows], pa.int32()),
        "phase": [p["phase"] for p in rows],
        "start_ns": pa.array([p["start_ns"] for p in rows], pa.int64()),
        "end_ns": pa.array([p.get("end_ns") for p in rows], pa.int64()),
    })


def latency_rows(spool: SpoolContents, energy_gross_j: list[float | None] | None = None) -> pa.Table:
    lat = spool.latencies
    return pa.table({
        "iteration": pa.array([r["i"] for r in lat], pa.int32()),
        "warmup": pa.array([bool(r["w"]) for r in lat], pa.bool_()),
        "start_ns": pa.array([r["s"] for r in lat], pa.int64()),
        "latency_ns": pa.array([r["ns"] for r in lat], pa.int64()),
        "energy_gross_j": pa.array(energy_gross_j if energy_gross_j is not None else [None] * len(lat), pa.float64()),
    })


class Orchestrator:
    def __init__(self, db_path: Path, *, device_id: uuid.UUID, cache_dir: Path, timeout_s: float | None = None,
                 python: str = sys.executable, on_spawn: Callable[[int], None] | None = None,
                 telemetry: Telemetry | None = None, memory_limit_bytes: int | None = None):
        self.db_path = Path(db_path)
        self.memory_limit_bytes = memory_limit_bytes
        self.telemetry = telemetry
        self.device_id = device_id
        self.cache_dir = cache_dir
        self.timeout_s = timeout_s
        self.python = python
        self.on_spawn = on_spawn
        self.spool_dir = self.db_path.parent / f".{self.db_path.name}.spool"
        self.spool_dir.mkdir(exist_ok=True)

    # -- preparing the model file ---------------------------------------------------------------

    def prepare(self, config: RunConfig, config_file: Path, log: Path) -> tuple[str | None, str | None]:
        """(artifact path, None) or (None, why it failed). Runs in a separate process, once."""
        if config.kind == "training":
            return None, None   # training builds the zoo model from code in the worker
        cached, artifact = cached_artifact(config, self.cache_dir)
        if cached:
            return artifact, None
        with open(log, "ab") as out:
            proc = subprocess.run([self.python, "-m", "edgestats.collectors.adapters.prepare", str(config_file), str(self.cache_dir)],
                                  stdout=subprocess.PIPE, stderr=out, env=worker_env(config), timeout=self.timeout_s)
        if proc.returncode != 0:
            return None, "preparing the model failed:\n" + _tail(log)
        return json.loads(proc.stdout.decode().strip().splitlines()[-1])["artifact"], None

    # -- one run ---------------------------------------------------------------------------------

    def run(self, config: RunConfig, *, sweep_id: uuid.UUID | None = None, sweep: dict | None = None) -> RunOutcome:
        started = time.monotonic()
        record = self.begin(config, sweep_id=sweep_id, sweep=sweep)
        paths = self._paths(record.run_id)
        artifact, prep_error = self.prepare(config, paths["config"], paths["log"])
        worker, batch = self._spawn_and_wait(record, paths, artifact) if prep_error is None else (None, None)
        ended_at = _now()
        spool = read_spool(paths["spool"])
        if worker is None:
            end = RunEnd("error", prep_error, ended_at)
        else:
            end = classify_exit(spool, worker, ended_at, timeout_s=self.timeout_s, memory_limit_bytes=record.memory_limit_bytes)
        self._store(record, end, spool, batch)
        self._cleanup(paths)
        return RunOutcome(record.run_id, config, end.status, end.error_text, len(spool.latencies),
                          time.monotonic() - started, *training_outcome(spool))

    def begin(self, config: RunConfig, *, sweep_id: uuid.UUID | None = None, sweep: dict | None = None) -> RunRecord:
        """A new run's record, complete, written next to its spool before anything of it runs, so
        that a run whose orchestrator dies is recovered with the same facts a finished run has."""
        env = worker_env(config)
        # The clock pair fixes the offset between the monotonic and the wall clock; NTP slews both
        # alike, so the pair taken here, before the model is prepared, holds for the whole run.
        record = RunRecord(run_id=uuid.uuid4(), device_id=self.device_id, config=config, started_at=_now(),
                           clock=ClockAnchor.now(), cpu=read_cpu_frequency_state(), sweep_id=sweep_id,
                           sweep=sweep or {}, thread_env={k: env.get(k) for k in THREAD_ENV_VARS},
                           memory_limit_bytes=self.memory_limit_bytes)
        paths = self._paths(record.run_id)
        paths["config"].write_text(json.dumps(asdict(config)))
        record.write(paths["meta"])
        return record

    def _paths(self, run_id: uuid.UUID) -> dict[str, Path]:
        base = self.spool_dir / str(run_id)
        return {"spool": base.with_suffix(".jsonl"), "config": base.with_suffix(".config.json"),
                "meta": base.with_suffix(".meta.json"), "log": base.with_suffix(".log")}

    def _spawn_and_wait(self, record: RunRecord, paths: dict[str, Path],
                        artifact: str | None) -> tuple[WorkerExit, SampleBatch | None]:
        cmd = [self.python, "-m", "edgestats.collectors.worker", str(paths["config"]), str(paths["spool"])]
        if artifact:
            cmd += ["--artifact", artifact]
        with open(paths["log"], "ab") as log:
            cmd += ["--spawn-ns", str(time.monotonic_ns())]
            proc = subprocess.Popen(cmd, stdout=log, stderr=log, stdin=subprocess.DEVNULL,
                                    env=worker_env(record.config, record.memory_limit_bytes), start_new_session=True)
        sampler = self.telemetry.start_sampler(proc.pid) if self.telemetry else None
        try:
            if self.on_spawn:
                self.on_spawn(proc.pid)
            returncode, timed_out = _wait(proc, self.timeout_s)
        finally:
            batch = sampler.stop() if sampler else None
        return WorkerExit(returncode, timed_out, _tail(paths["log"])), batch

    def _store(self, record: RunRecord, end: RunEnd, spool: SpoolContents, batch: SampleBatch | None = None) -> None:
        phases = phase_list(spool)
        tele = run_telemetry(self.telemetry, batch, phases, spool.latencies, record.clock_fields)
        rows = {"phases": phase_rows(phases), "latencies": latency_rows(spool, tele.latency_energy_j),
                "samples": tele.samples, "phase_energies": tele.phase_energies, "sensor_notes": tele.sensor_notes}
        run = run_row(record, end, spool, tele)
        if record.config.kind == "training":  # epochs, batches and per-run totals (training/rows.py)
            run, training = with_training(run, record.config, spool)
            if training.get("epochs") is not None:
                training["epochs"] = with_epoch_energy(training["epochs"], tele.series)
            rows.update(training)
        # Someone may be reading the DB right now (DuckDB allows one process at a time to hold a
        # file open for writing): wait for them rather than fail; the spool stays until stored.
        deadline = time.monotonic() + STORE_WAIT_S
        while True:
            try:
                with Store.open(self.db_path) as store:
                    store.write_run(run, **rows)
                return
            except DatabaseLockedError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.5)

    def _cleanup(self, paths: dict[str, Path]) -> None:
        for path in paths.values():
            path.unlink(missing_ok=True)

    # -- runs whose orchestrator died ------------------------------------------------------------

    def recover_orphans(self) -> list[RunOutcome]:
        """Store the runs a killed `edgestats collect` left behind, from their records and spools."""
        recovered = []
        for meta_path in sorted(self.spool_dir.glob("*.meta.json")):
            record = RunRecord.read(meta_path)
            paths = self._paths(record.run_id)
            ended_at = _end_orphan(paths, record.started_at)
            with Store.open(self.db_path) as store:
                done = store.has_run(record.run_id)
            if not done:
                spool = read_spool(paths["spool"])
                # The worker was not our child: its exit status is unknown (WorkerExit()).
                end = classify_exit(spool, WorkerExit(), ended_at, memory_limit_bytes=record.memory_limit_bytes)
                self._store(record, end, spool)
                recovered.append(RunOutcome(record.run_id, record.config, end.status, end.error_text,
                                            len(spool.latencies), 0.0))
            self._cleanup(paths)
        return recovered


def _end_orphan(paths: dict[str, Path], started_at: dt.datetime) -> dt.datetime:
    """Make sure an orphaned run's worker has ended, and say when it ended (UTC).

    A worker still running is stopped now: its orchestrator is gone, so nothing sampled it; what
    it measured is stored as interrupted and the resumed sweep runs it again. It ended now.
    A worker that had ended wrote last when it ended: the last modification of its spool, log or
    record (the record alone when it died before the worker started), never before started_at.
    """
    spool = read_spool(paths["spool"])
    if spool.start and _alive(spool.start.get("pid")):
        _kill_pid_group(spool.start["pid"])
        return _now()
    written_s = max(p.stat().st_mtime for p in (paths["spool"], paths["log"], paths["meta"]) if p.exists())
    return max(started_at, dt.datetime.fromtimestamp(written_s, dt.timezone.utc))


def _wait(proc: subprocess.Popen, timeout_s: float | None) -> tuple[int | None, bool]:
    """(exit status, timed out): poll every 20 ms (the harness's per-run overhead), and kill the
    whole process tree at the deadline."""
    deadline = time.monotonic() + timeout_s if timeout_s else None
    while True:
        try:
            return proc.wait(timeout=0.02), False
        except subprocess.TimeoutExpired:
            if deadline is not None and time.monotonic() > deadline:
                _kill_tree(proc)
                return proc.returncode, True


def _kill_tree(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)  # the worker leads its own session
    except ProcessLookupError:
        pass
    proc.wait()


def _kill_pid_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        return
    for _ in range(50):  # it is not our child: poll until it is gone
        if not _alive(pid):
            return
        time.sleep(0.1)


def _alive(pid: int | None) -> bool:
    if not pid:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A zombie or a reused pid that is not a worker counts as dead.
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return True
    return b"edgestats.collectors.worker" in cmdline
