"""One run's record: what the orchestrator knows about a run before its worker starts, and how
the run ended.

The record (`RunRecord`) is complete before the worker is spawned, and written next to the spool
as `<run_id>.meta.json`: if `edgestats collect` dies mid-run, the next collect rebuilds the run
from that file and the spool, with the same started_at, clock pair and CPU state a finished run
gets (the energy baseline is matched on started_at). How the run ended is a separate value
(`RunEnd`), decided by one function (`classify_exit`) for a normal run and for a recovered one.
"""

from __future__ import annotations

import datetime as dt
import json
import signal
import uuid
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from edgestats.collectors.adapters.common import atomic_target
from edgestats.collectors.core.processes import Interrupted
from edgestats.collectors.core.runconfig import RunConfig
from edgestats.collectors.core.spool import SpoolContents
from edgestats.collectors.power.meter_csv import ClockAnchor
from edgestats.collectors.training.rows import diverged_text
from edgestats.errors import EdgestatsError

INTERRUPTED = "interrupted: edgestats collect stopped before this run finished"


class RunRecordError(EdgestatsError):
    """A run's meta.json cannot be read back."""


@dataclass(frozen=True)
class RunRecord:
    run_id: uuid.UUID
    device_id: uuid.UUID
    config: RunConfig
    started_at: dt.datetime  # UTC, before the model is prepared
    clock: ClockAnchor | None  # maps the run's monotonic windows to a meter's wall clock
    cpu: dict[str, Any]  # CPU governor and frequencies just before the run
    sweep_id: uuid.UUID | None = None
    sweep: dict[str, Any] = field(default_factory=dict)  # shuffle seed, axes and settings
    # Only the thread variables are recorded: the worker's full environment is a copy of the
    # orchestrator's, which may hold secrets, and the rest does not shape the measurement.
    thread_env: dict[str, str | None] = field(default_factory=dict)
    memory_limit_bytes: int | None = None  # --memory-limit-mb, as RLIMIT_DATA
    owner: str | None = None  # the owning collect's lock file (ownership.py)
    host: dict[str, Any] = field(default_factory=dict)  # OS image, kernel, container (host/container.py)

    @property
    def clock_fields(self) -> dict[str, int] | None:
        """The clock pair as runs.environment stores it and the meter alignment takes it (None:
        unknown, a record written by an edgestats older than this one)."""
        return asdict(self.clock) if self.clock else None

    def to_json(self) -> str:
        data = asdict(self)
        data.update(
            run_id=str(self.run_id),
            device_id=str(self.device_id),
            sweep_id=str(self.sweep_id) if self.sweep_id else None,
            started_at=self.started_at.isoformat(),
        )
        return json.dumps(data, sort_keys=True, default=str)

    @classmethod
    def from_json(cls, text: str, *, written_at: dt.datetime | None = None) -> RunRecord:
        """The record `to_json` wrote; ValueError, KeyError or TypeError when it is not one.

        A meta.json left by edgestats before the typed record has no started_at, clock or cpu: it
        was written just before the run started, so `written_at` (the file's mtime) stands in for
        started_at, and the clock pair and CPU state stay unknown, as they were stored then."""
        data = json.loads(text)
        if not isinstance(data, dict):
            raise TypeError(f"a JSON object was expected, not {type(data).__name__}")
        sweep_id = data.get("sweep_id")
        if "started_at" in data:
            started_at = dt.datetime.fromisoformat(data["started_at"])
        elif written_at is not None:
            started_at = written_at
        else:
            raise KeyError("started_at")
        return cls(
            run_id=uuid.UUID(data["run_id"]),
            device_id=uuid.UUID(data["device_id"]),
            config=RunConfig.from_dict(data["config"]),
            started_at=started_at,
            clock=ClockAnchor(**data["clock"]) if data.get("clock") else None,
            cpu=dict(data.get("cpu") or {}),
            sweep_id=uuid.UUID(sweep_id) if sweep_id else None,
            sweep=data.get("sweep") or {},
            thread_env=data.get("thread_env") or {},
            memory_limit_bytes=data.get("memory_limit_bytes"),
            owner=data.get("owner"),
            host=data.get("host") or {},
        )

    def write(self, path: Path) -> None:
        """Written whole or not at all (a temporary file renamed into place): another collect's
        recovery may read it at any moment, and must never see it half written."""
        with atomic_target(path) as tmp:
            tmp.write_text(self.to_json(), encoding="utf-8")

    @classmethod
    def read(cls, path: Path) -> RunRecord:
        try:
            written_at = dt.datetime.fromtimestamp(path.stat().st_mtime, dt.timezone.utc)
            return cls.from_json(path.read_text(encoding="utf-8"), written_at=written_at)
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise RunRecordError(
                f"{path}: not a readable run record ({type(exc).__name__}: {exc}). It belongs to a run whose "
                f"`edgestats collect` died; delete {path.parent / path.name.split('.')[0]}.* "
                "to drop that run and collect again"
            ) from exc


@dataclass(frozen=True)
class WorkerExit:
    """How the worker process ended, as far as the orchestrator could see."""

    returncode: int | None = None  # None: unknown (a recovered run's worker was not our child)
    timed_out: bool = False
    log_tail: str = ""  # the end of the worker's stdout and stderr
    interrupted_by: str | None = None  # the signal to collect that stopped the run ("SIGTERM")


@dataclass(frozen=True)
class RunEnd:
    status: str  # ok | diverged | error | timeout | killed (a signal, or collect stopped)
    error_text: str | None
    ended_at: dt.datetime  # UTC


def classify_exit(
    spool: SpoolContents,
    worker: WorkerExit,
    ended_at: dt.datetime,
    *,
    timeout_s: float | None = None,
    memory_limit_bytes: int | None = None,
) -> RunEnd:
    """The status of a run from its spool and how its worker ended: ok, diverged, error, timeout
    or killed. A worker whose exit status is unknown (recovered) and that neither finished nor
    reported an error was stopped by its orchestrator's death: killed, "interrupted"."""
    phase = f"in its {spool.running_phase} phase" if spool.running_phase else "between phases"
    if worker.timed_out:
        return RunEnd(
            "timeout",
            f"exceeded --timeout {timeout_s:g} s {phase}; the worker's process tree was killed",
            ended_at,
        )
    if worker.interrupted_by:
        return RunEnd(
            "killed",
            f"interrupted: edgestats collect received {worker.interrupted_by} while the run was "
            f"{phase}; the worker's process tree was stopped and what it measured is kept",
            ended_at,
        )
    if worker.returncode is not None and worker.returncode < 0:
        number = -worker.returncode
        name = signal.Signals(number).name if number in signal.valid_signals() else str(number)
        hint = " (e.g. the kernel's OOM killer)" if number == signal.SIGKILL else ""
        return RunEnd("killed", f"killed by {name}{hint}", ended_at)
    if spool.finished and worker.returncode in (0, None):
        return (
            RunEnd("diverged", diverged_text(spool.diverged), ended_at)
            if spool.diverged
            else RunEnd("ok", None, ended_at)
        )
    if worker.returncode is None and not spool.error:
        return RunEnd("killed", INTERRUPTED, ended_at)
    text = spool.error or (
        worker.log_tail.strip() or f"worker exited with status {worker.returncode} without a message"
    )
    if memory_limit_bytes and _out_of_memory(text):
        text = f"out of memory under --memory-limit-mb {memory_limit_bytes / 2**20:g}:\n" + text
    return RunEnd("error", text, ended_at)


def _out_of_memory(error_text: str) -> bool:
    """Whether a worker's error is a failed allocation (Python's MemoryError, or a framework's
    allocator refusing: PyTorch "can't allocate memory", TensorFlow "OOM when allocating")."""
    return any(
        s in error_text
        for s in ("MemoryError", "can't allocate memory", "OOM when allocating", "std::bad_alloc")
    )


@dataclass
class RunOutcome:
    run_id: uuid.UUID
    config: RunConfig
    status: str
    error_text: str | None
    n_latencies: int
    seconds: float
    n_batches: int = 0  # training runs: optimizer steps stored
    accuracy_pct: float | None = None  # training runs: the last epoch's test accuracy
    interrupted: Interrupted | None = None  # a signal stopped collect during this run (stored first)
    noisy: bool | None = None  # the noise sentinel's verdict (None: not judged)
    noise_reason: str | None = None
