"""The orchestrator of `edgestats collect`: one fresh worker process per run, the only DB writer.

For each run: prepare the model file (cached, separate process), spawn the worker in its own
session (so a timeout kills its whole process tree), wait, read the spool, and write the run
with all its rows in one transaction. The DB is opened only for that write, so other tools can
read it between runs.

Status: ok | error (exception text kept) | timeout (--timeout) | killed (a signal, e.g. the OOM
killer). Whatever the worker flushed before it died is stored with the run. Spool files stay
until their run is in the DB: a run whose orchestrator died is recovered by the next collect.
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
from edgestats.collectors.host.facts import read_cpu_frequency_state
from edgestats.collectors.adapters.prepare import cached_artifact
from edgestats.collectors.runconfig import RunConfig
from edgestats.collectors.telemetry.sampler import SampleBatch
from edgestats.collectors.spool import SpoolContents, read_spool
from edgestats.collectors.training.rows import diverged_text, training_outcome, with_training
from edgestats.collectors.telemetry.session import RunTelemetry, Telemetry, run_telemetry, with_epoch_energy
from edgestats.collectors.worker import MEMORY_LIMIT_ENV
from edgestats.errors import DatabaseError
from edgestats.store import Store

THREAD_ENV_VARS = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "TF_NUM_INTRAOP_THREADS")
STORE_WAIT_S = 120.0  # how long a finished run waits for another process to release the DB
INTERRUPTED = "interrupted: edgestats collect stopped before this run finished"


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


def worker_env(config: RunConfig) -> dict[str, str]:
    """The worker's environment: math-library thread counts set before the framework loads."""
    env = dict(os.environ)
    if config.threads:
        for name in THREAD_ENV_VARS:
            env[name] = str(config.threads)
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    return env


def classify_exit(returncode: int | None, timed_out: bool, spool: SpoolContents, log_tail: str, timeout_s: float | None) -> tuple[str, str | None]:
    """(status, error_text) from how the worker ended."""
    if timed_out:
        return "timeout", f"exceeded --timeout {timeout_s:g} s; the worker's process tree was killed"
    if returncode is not None and returncode < 0:
        name = signal.Signals(-returncode).name if -returncode in signal.valid_signals() else str(-returncode)
        hint = " (e.g. the kernel's OOM killer)" if -returncode == signal.SIGKILL else ""
        return "killed", f"killed by {name}{hint}"
    if returncode == 0 and spool.finished:
        return ("diverged", diverged_text(spool.diverged)) if spool.diverged else ("ok", None)
    text = spool.error or (log_tail.strip() or f"worker exited with status {returncode} without a message")
    return "error", text


def _tail(path: Path, limit: int = 4000) -> str:
    if not path.exists():
        return ""
    data = path.read_bytes()[-limit:]
    return data.decode("utf-8", "replace")


def run_row(config: RunConfig, spool: SpoolContents, meta: dict[str, Any], tele: RunTelemetry | None = None) -> dict[str, Any]:
    """The runs row of a collected run, from its config, its spool and the orchestrator's notes."""
    versions = spool.versions
    telemetry_columns = tele.run_columns if tele is not None else {}
    return {**telemetry_columns,
        "run_id": meta["run_id"], "sweep_id": meta.get("sweep_id"), "device_id": meta["device_id"],
        "kind": "inference", "status": meta["status"], "error_text": meta["error_text"],
        "framework": config.framework, "framework_version": next(iter(versions.values()), None),
        "runtime": spool.runtime or config.runtime,
        "model": config.model, "model_params": spool.model.get("params"), "model_flops": spool.model.get("flops"),
        "batch_size": config.batch_size, "threads": config.threads, "precision": config.precision,
        "accelerator": config.accelerator, "iterations": config.iterations, "warmup": config.warmup,
        "seed": config.seed, "repeat_index": config.repeat_index,
        "config": {**asdict(config), "sweep": meta.get("sweep", {})}, "config_hash": config.config_hash(),
        "environment": {"versions": versions, "runtime_detail": spool.environment, "model": spool.model,
                        "thread_env": {k: meta["env"].get(k) for k in THREAD_ENV_VARS},
                        "python": sys.version.split()[0], "clock": meta.get("clock"), "cpu": meta.get("cpu"),
                        "memory_limit_bytes": meta.get("memory_limit_bytes"),
                        "worker_start": spool.start, "torn_spool_lines": spool.torn_lines,
                        "sampler": tele.stats if tele is not None else {}},
        "started_at": meta.get("started_at"), "ended_at": meta.get("ended_at"),
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
        run_id = uuid.uuid4()
        paths = self._paths(run_id)
        meta = {"run_id": str(run_id), "sweep_id": str(sweep_id) if sweep_id else None, "device_id": str(self.device_id),
                "sweep": sweep or {}, "config": asdict(config), "env": worker_env(config),
                "memory_limit_bytes": self.memory_limit_bytes}
        if self.memory_limit_bytes:
            meta["env"][MEMORY_LIMIT_ENV] = str(self.memory_limit_bytes)
        paths["config"].write_text(json.dumps(asdict(config)))
        paths["meta"].write_text(json.dumps({k: v for k, v in meta.items() if k != "env"}))
        started = time.monotonic()
        meta["started_at"] = dt.datetime.now(dt.timezone.utc)
        artifact, prep_error = self.prepare(config, paths["config"], paths["log"])
        returncode, timed_out, batch = None, False, None
        if prep_error is None:
            returncode, timed_out, batch = self._spawn_and_wait(config, paths, artifact, meta)
        meta["ended_at"] = dt.datetime.now(dt.timezone.utc)
        spool = read_spool(paths["spool"])
        if prep_error:
            meta["status"], meta["error_text"] = "error", prep_error
        else:
            meta["status"], meta["error_text"] = classify_exit(returncode, timed_out, spool, _tail(paths["log"]), self.timeout_s)
            if meta["status"] == "error" and self.memory_limit_bytes and _out_of_memory(meta["error_text"]):
                meta["error_text"] = (f"out of memory under --memory-limit-mb {self.memory_limit_bytes / 2**20:g}:\n"
                                      + meta["error_text"])
        self._store(config, spool, meta, batch)
        self._cleanup(paths)
        return RunOutcome(run_id, config, meta["status"], meta["error_text"], len(spool.latencies), time.monotonic() - started,
                          *training_outcome(spool))

    def _paths(self, run_id: uuid.UUID) -> dict[str, Path]:
        base = self.spool_dir / str(run_id)
        return {"spool": base.with_suffix(".jsonl"), "config": base.with_suffix(".config.json"),
                "meta": base.with_suffix(".meta.json"), "log": base.with_suffix(".log")}

    def _spawn_and_wait(self, config: RunConfig, paths: dict[str, Path], artifact: str | None,
                        meta: dict) -> tuple[int | None, bool, SampleBatch | None]:
        cmd = [self.python, "-m", "edgestats.collectors.worker", str(paths["config"]), str(paths["spool"])]
        if artifact:
            cmd += ["--artifact", artifact]
        meta["clock"] = {"monotonic_ns": time.monotonic_ns(), "unix_ns": time.time_ns()}
        meta["cpu"] = read_cpu_frequency_state()
        with open(paths["log"], "ab") as log:
            cmd += ["--spawn-ns", str(time.monotonic_ns())]
            proc = subprocess.Popen(cmd, stdout=log, stderr=log, stdin=subprocess.DEVNULL,
                                    env=meta["env"], start_new_session=True)
        sampler = self.telemetry.start_sampler(proc.pid) if self.telemetry else None
        try:
            if self.on_spawn:
                self.on_spawn(proc.pid)
            returncode, timed_out = _wait(proc, self.timeout_s)
        finally:
            batch = sampler.stop() if sampler else None
        return returncode, timed_out, batch

    def _store(self, config: RunConfig, spool: SpoolContents, meta: dict[str, Any], batch: SampleBatch | None = None) -> None:
        # Someone may be reading the DB right now (DuckDB allows one process at a time to hold a
        # file open for writing): wait for them rather than fail; the spool stays until stored.
        phases = phase_list(spool)
        tele = run_telemetry(self.telemetry, batch, phases, spool.latencies, meta.get("clock"))
        rows = {"phases": phase_rows(phases), "latencies": latency_rows(spool, tele.latency_energy_j),
                "samples": tele.samples, "phase_energies": tele.phase_energies, "sensor_notes": tele.sensor_notes}
        run = run_row(config, spool, meta, tele)
        if config.kind == "training":  # epochs, batches and per-run totals (training/rows.py)
            run, training = with_training(run, config, spool)
            if training.get("epochs") is not None:
                training["epochs"] = with_epoch_energy(training["epochs"], tele.series)
            rows.update(training)
        deadline = time.monotonic() + STORE_WAIT_S
        while True:
            try:
                with Store.open(self.db_path) as store:
                    store.write_run(run, **rows)
                return
            except DatabaseError as exc:
                if "in use" not in str(exc) or time.monotonic() > deadline:
                    raise
                time.sleep(0.5)

    def _cleanup(self, paths: dict[str, Path]) -> None:
        for path in paths.values():
            path.unlink(missing_ok=True)

    # -- runs whose orchestrator died ------------------------------------------------------------

    def recover_orphans(self) -> list[RunOutcome]:
        """Store the spools a killed `edgestats collect` left behind (their worker has ended)."""
        recovered = []
        for meta_path in sorted(self.spool_dir.glob("*.meta.json")):
            run_id = uuid.UUID(meta_path.name.split(".")[0])
            paths = self._paths(run_id)
            spool = read_spool(paths["spool"])
            if spool.start and _alive(spool.start.get("pid")):
                # Its orchestrator is gone, so nothing sampled it: stop it, store what it
                # measured as interrupted, and let the resumed sweep run it again.
                _kill_pid_group(spool.start["pid"])
                spool = read_spool(paths["spool"])
            meta = json.loads(meta_path.read_text())
            config = RunConfig.from_dict(meta["config"])
            with Store.open(self.db_path) as store:
                done = store.has_run(run_id)
            if not done:
                meta["env"] = worker_env(config)
                if spool.finished:
                    meta["status"], meta["error_text"] = ("diverged", diverged_text(spool.diverged)) if spool.diverged else ("ok", None)
                elif spool.error:
                    meta["status"], meta["error_text"] = "error", spool.error
                else:
                    meta["status"], meta["error_text"] = "killed", INTERRUPTED
                self._store(config, spool, meta)
                recovered.append(RunOutcome(run_id, config, meta["status"], meta["error_text"], len(spool.latencies), 0.0))
            self._cleanup(paths)
        return recovered


def _out_of_memory(error_text: str | None) -> bool:
    """Whether a worker's error is a failed allocation (Python's MemoryError, or a framework's
    allocator refusing: PyTorch "can't allocate memory", TensorFlow "OOM when allocating")."""
    text = error_text or ""
    return any(s in text for s in ("MemoryError", "can't allocate memory", "OOM when allocating", "std::bad_alloc"))


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
