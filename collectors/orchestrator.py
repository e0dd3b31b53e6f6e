"""The orchestrator of `edgestats collect`: one fresh worker process per run, the only DB writer.

For each run: prepare the model file (cached, separate process), spawn the worker in its own
session (so a timeout kills its whole process tree), wait, read the spool, and write the run
with all its rows in one transaction. The DB is opened only for that write, so other tools can
read it between runs.

Status: ok | diverged | error (exception text kept) | timeout (--timeout) | killed (a signal,
e.g. the OOM killer), decided by record.classify_exit. Whatever the worker flushed before it died
is stored with the run. Each run's record (record.py) is written next to its spool before the
worker starts, and the files stay until the run is in the DB: a run whose orchestrator died is
recovered by the next collect, with its started_at and an ended_at, and with its telemetry
when the sampler's batch was written beside the spool (telemetry/batchfile.py).

Concurrency: any number of collects may share a DB. Each owns the runs it spools (a held lock,
ownership.py) and recovery touches only runs whose owner is dead (recovery.py); the DB is opened
only to write a finished run, waiting while another process holds it (storeaccess.py). Signals
stop the worker's whole tree and the run is stored as interrupted (processes.py).
"""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any

from edgestats.collectors.core.processes import (
    GroupExit,
    Interrupted,
    module_command,
    raise_if_stopped,
    spawn_group,
    wait_group,
)
from edgestats.collectors.core.runconfig import RunConfig
from edgestats.collectors.core.spool import SpoolContents, cleanup_run_files, read_spool, run_paths
from edgestats.collectors.generation.engines import needs_prepare
from edgestats.collectors.host.container import read_run_host
from edgestats.collectors.host.facts import read_cpu_frequency_state
from edgestats.collectors.ownership import SpoolOwner
from edgestats.collectors.power.meter_csv import ClockAnchor
from edgestats.collectors.prepare import cached_artifact
from edgestats.collectors.record import RunEnd, RunOutcome, RunRecord, WorkerExit, classify_exit
from edgestats.collectors.recovery import recover_orphans
from edgestats.collectors.runrows import noise_columns, store_run
from edgestats.collectors.telemetry.batchfile import write_batch
from edgestats.collectors.telemetry.gpu_clocks import clock_check
from edgestats.collectors.telemetry.sampler import SampleBatch
from edgestats.collectors.telemetry.sentinel import (
    MachineState,
    NoisePolicy,
    batch_temperatures,
    noise_record,
    read_state,
    wait_until_quiet,
)
from edgestats.collectors.telemetry.session import Telemetry
from edgestats.collectors.training.rows import training_outcome
from edgestats.collectors.worker import MEMORY_LIMIT_ENV

THREAD_ENV_VARS = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "TF_NUM_INTRAOP_THREADS")


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


def _sleep_unless_stopped(seconds: float) -> None:
    """A stop signal while --on-noise wait watches the machine ends the wait (within a window)."""
    time.sleep(seconds)
    raise_if_stopped()


class Orchestrator:
    def __init__(
        self,
        db_path: Path,
        *,
        device_id: uuid.UUID,
        cache_dir: Path,
        timeout_s: float | None = None,
        python: str = sys.executable,
        on_spawn: Callable[[int], None] | None = None,
        telemetry: Telemetry | None = None,
        memory_limit_bytes: int | None = None,
        noise: NoisePolicy | None = None,
    ):
        self.db_path = Path(db_path)
        self.noise = noise or NoisePolicy()
        self.on_noise_wait: Callable[[list[str]], None] | None = None  # told why --on-noise wait waits
        self._states: tuple[MachineState, MachineState] | None = None  # around this run's worker
        self.memory_limit_bytes = memory_limit_bytes
        self.telemetry = telemetry
        self.device_id = device_id
        self.cache_dir = cache_dir
        self.timeout_s = timeout_s
        self.python = python
        self.on_spawn = on_spawn
        self.spool_dir = self.db_path.parent / f".{self.db_path.name}.spool"
        self.spool_dir.mkdir(exist_ok=True)
        self.owner = SpoolOwner(self.spool_dir)
        self.warnings: list[str] = []  # for the user: spool files moved aside, runs left spooled
        self.device_line: str | None = None  # the device's name, where the user did not give it now
        self.host = read_run_host()  # recorded with each run: OS image, kernel, container
        self._model_cache: str | None = None  # this run's model file: cache hit, built or rebuilt (why)

    def close(self) -> None:
        """Give up the claim on this collect's spool (runs still there become recoverable)."""
        self.owner.close()

    def __enter__(self) -> Orchestrator:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- preparing the model file ---------------------------------------------------------------

    def prepare(
        self, config: RunConfig, paths: dict[str, Path]
    ) -> tuple[str | None, RunEnd | None, Interrupted | None]:
        """(artifact path, None, None), or (None, how the run ended, the signal if one stopped it)
        when preparing failed, ran past --timeout or was interrupted. A separate process, once
        per cache key."""
        if not needs_prepare(config):
            return None, None, None  # training (and generation in PyTorch) builds the model in the worker
        cached, artifact = cached_artifact(config, self.cache_dir)
        if cached:
            self._model_cache = "hit"
            return artifact, None, None
        cmd = [*module_command(self.python, "edgestats.collectors.prepare"), str(paths["config"])]
        cmd.append(str(self.cache_dir))
        with open(paths["log"], "ab") as log, open(paths["prepared"], "wb") as out:
            proc = spawn_group(cmd, stdout=out, stderr=log, stdin=subprocess.DEVNULL, env=worker_env(config))
        ended = wait_group(proc, self.timeout_s)
        if ended.timed_out:
            return (
                None,
                RunEnd(
                    "timeout",
                    f"model preparation (phase prepare) exceeded --timeout {self.timeout_s:g} s; "
                    "its process tree was killed",
                    _now(),
                ),
                None,
            )
        if ended.interrupted:
            return (
                None,
                RunEnd(
                    "killed",
                    f"interrupted: edgestats collect received {ended.interrupted.name} while "
                    "the model was being prepared (phase prepare)",
                    _now(),
                ),
                ended.interrupted,
            )
        if ended.returncode != 0:
            return None, RunEnd("error", "preparing the model failed:\n" + _tail(paths["log"]), _now()), None
        prepared = json.loads(paths["prepared"].read_text().strip().splitlines()[-1])
        self._model_cache = prepared.get("cache")  # "built", or "rebuilt: why" (a damaged cached file)
        return prepared["artifact"], None, None

    # -- one run ---------------------------------------------------------------------------------

    def run(
        self,
        config: RunConfig,
        *,
        sweep_id: uuid.UUID | None = None,
        sweep: dict | None = None,
        extra_environment: Callable[[RunEnd, SpoolContents], dict[str, Any]] | None = None,
    ) -> RunOutcome:
        """Run one configuration and store it; `extra_environment(end, spool)` adds entries to the
        run's environment before it is stored (collect --precision's decision, precision.py)."""
        started = time.monotonic()
        self._model_cache, self._states = None, None
        # before the record, so that a stop signal while waiting leaves nothing to recover
        waited = (
            wait_until_quiet(
                self.noise.limits, self.noise.wait_s, sleep=_sleep_unless_stopped, on_busy=self.on_noise_wait
            )
            if self.noise.on_noise == "wait"
            else None
        )
        record = self.begin(config, sweep_id=sweep_id, sweep=sweep)
        paths = self._paths(record.run_id)
        end, spool, batch, stop = self._execute(record, paths)
        environment = {
            "model_cache": self._model_cache,
            **(extra_environment(end, spool) if extra_environment else {}),
        }
        if self._states is not None:
            clocks = clock_check(
                batch, spool.phases, self.noise.limits, uses_gpu=config.accelerator == "cuda"
            )
            environment["noise"] = noise_record(
                *self._states, self.noise.limits, batch_temperatures(batch), waited, gpu_clocks=clocks
            )
        self.store(record, end, spool, batch, environment=environment)
        self._cleanup(paths)
        noisy, reason = noise_columns(environment.get("noise"))
        return RunOutcome(
            record.run_id,
            config,
            end.status,
            end.error_text,
            len(spool.latencies),
            time.monotonic() - started,
            *training_outcome(spool),
            interrupted=stop,
            noisy=noisy,
            noise_reason=reason,
        )

    def _execute(
        self, record: RunRecord, paths: dict[str, Path]
    ) -> tuple[RunEnd, SpoolContents, SampleBatch | None, Interrupted | None]:
        """Prepare the model, run the worker and classify how the run ended: (how it ended, its
        spool, the sampler's batch, the signal if one stopped it)."""
        artifact, prep_end, stop = self.prepare(record.config, paths)
        worker, batch = None, None
        if prep_end is None:
            worker, batch, stop = self._spawn_and_wait(record, paths, artifact)
            if batch is not None:
                write_batch(paths["samples"], batch)  # so a run not stored now keeps its telemetry
        ended_at = _now()
        spool = read_spool(paths["spool"])
        if worker is None:
            end = prep_end
        else:
            end = classify_exit(
                spool,
                worker,
                ended_at,
                timeout_s=self.timeout_s,
                memory_limit_bytes=record.memory_limit_bytes,
            )
        return end, spool, batch, stop

    def begin(
        self, config: RunConfig, *, sweep_id: uuid.UUID | None = None, sweep: dict | None = None
    ) -> RunRecord:
        """A new run's record, complete, written next to its spool before anything of it runs, so
        that a run whose orchestrator dies is recovered with the same facts a finished run has."""
        env = worker_env(config)
        # The clock pair fixes the offset between the monotonic and the wall clock; NTP slews both
        # alike, so the pair taken here, before the model is prepared, holds for the whole run.
        record = RunRecord(
            run_id=uuid.uuid4(),
            device_id=self.device_id,
            config=config,
            started_at=_now(),
            clock=ClockAnchor.now(),
            cpu=read_cpu_frequency_state(),
            sweep_id=sweep_id,
            sweep=sweep or {},
            thread_env={k: env.get(k) for k in THREAD_ENV_VARS},
            memory_limit_bytes=self.memory_limit_bytes,
            owner=self.owner.name,
            host=self.host,
        )
        paths = self._paths(record.run_id)
        paths["config"].write_text(json.dumps(asdict(config)))
        record.write(paths["meta"])
        return record

    def _paths(self, run_id: uuid.UUID) -> dict[str, Path]:
        return run_paths(self.spool_dir, run_id)

    def _spawn_and_wait(
        self, record: RunRecord, paths: dict[str, Path], artifact: str | None
    ) -> tuple[WorkerExit, SampleBatch | None, Interrupted | None]:
        # module_command: the current directory is not on the worker's sys.path (the installed package wins)
        cmd = [
            *module_command(self.python, "edgestats.collectors.worker"),
            str(paths["config"]),
            str(paths["spool"]),
        ]
        if artifact:
            cmd += ["--artifact", artifact]
        before = read_state()  # the noise sentinel's: just before, and just after (below)
        with open(paths["log"], "ab") as log:
            cmd += ["--spawn-ns", str(time.monotonic_ns())]
            proc = spawn_group(
                cmd,
                stdout=log,
                stderr=log,
                stdin=subprocess.DEVNULL,
                env=worker_env(record.config, record.memory_limit_bytes),
            )
        sampler = self.telemetry.start_sampler(proc.pid) if self.telemetry else None
        ended = GroupExit(None)
        try:
            if self.on_spawn:
                self.on_spawn(proc.pid)
            ended = wait_group(proc, self.timeout_s)
        finally:
            self._states = (before, read_state())  # the worker is reaped: its CPU time is ours now
            batch = sampler.stop() if sampler else None
        signame = ended.interrupted.name if ended.interrupted else None
        return (
            WorkerExit(ended.returncode, ended.timed_out, _tail(paths["log"]), signame),
            batch,
            ended.interrupted,
        )

    def store(
        self,
        record: RunRecord,
        end: RunEnd,
        spool: SpoolContents,
        batch: SampleBatch | None = None,
        environment: dict[str, Any] | None = None,
    ) -> None:
        """Write one run with all its rows, in one transaction (runrows.py)."""
        store_run(self.db_path, self.telemetry, record, end, spool, batch, environment)

    def _cleanup(self, paths: dict[str, Path]) -> None:
        cleanup_run_files(paths)

    def recover_orphans(self) -> list[RunOutcome]:
        """Store the runs that collects which died left behind (recovery.py); never a live one's."""
        return recover_orphans(self.spool_dir, self.owner.name, self.db_path, self.telemetry, self.warnings)
