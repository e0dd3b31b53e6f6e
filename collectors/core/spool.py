"""The spool: the worker's record of a run, one JSON object per line, flushed as it goes.

The worker writes it (stdlib only); the orchestrator reads it after the worker exits — or after
it was killed, timed out or crashed: every line flushed before the end is kept, so a run that
dies at iteration 700 of 1000 is stored with its 700 latencies and the phases it finished.
A torn last line (killed mid-write) is ignored.

Record types (key "t"):
  adapter  runtime (the runtime variant the adapter runs)
  start    pid, spawn_ns (orchestrator's clock at spawn), start_ns (worker main() entered)
  begin    phase: the phase starts (so a run stopped in it can say which phase ran out)
  phase    phase, seq, start_ns, end_ns                  time.monotonic_ns()
  lat      i (iteration), w (warm-up?), s (monotonic start), ns (perf_counter_ns duration)
  versions {library: version}
  model    params, flops, input_shape, file, file_bytes
  env      the adapter's environment (math library, threads, devices)
  error    text (the exception and its traceback)
  end      end_ns: the worker finished every phase
Training runs (training/worker.py) also write:
  dataset  the dataset's description (format, files, bytes, splits) and its storage (mount)
  hyper    the hyperparameters the run used (optimizer, learning rate, momentum, ...)
  batch    e (epoch), b (batch), s (monotonic start), f (fetch + preprocess ns), st (stall ns),
           c (compute ns), e2e (ns), n (samples), l (loss)
  epoch    one row of the epochs table (windows, losses, accuracies, cache residency)
  diverged epoch, batch, loss: the loss became NaN or infinite and training stopped there
"""

from __future__ import annotations

import json
import os
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO


class SpoolWriter:
    def __init__(self, path: Path):
        self._file: TextIO = open(path, "a", encoding="utf-8")

    def write(self, record_type: str, **fields: Any) -> None:
        # One write + flush per record: a killed worker loses at most the record being written.
        self._file.write(json.dumps({"t": record_type, **fields}, default=str) + "\n")
        self._file.flush()

    def close(self) -> None:
        self._file.flush()
        os.fsync(self._file.fileno())
        self._file.close()


@dataclass
class SpoolContents:
    start: dict[str, Any] | None = None
    phases: list[dict[str, Any]] = field(default_factory=list)
    latencies: list[dict[str, Any]] = field(default_factory=list)
    versions: dict[str, str] = field(default_factory=dict)
    model: dict[str, Any] = field(default_factory=dict)
    environment: dict[str, Any] = field(default_factory=dict)
    runtime: str | None = None
    error: str | None = None
    finished: bool = False
    torn_lines: int = 0
    dataset: dict[str, Any] = field(default_factory=dict)
    hyper: dict[str, Any] = field(default_factory=dict)
    epochs: list[dict[str, Any]] = field(default_factory=list)
    batches: list[dict[str, Any]] = field(default_factory=list)
    diverged: dict[str, Any] | None = None
    begun: list[str] = field(default_factory=list)  # phases begun and not ended, innermost last

    @property
    def running_phase(self) -> str | None:
        """The innermost phase that began and did not end: where a stopped run was."""
        return self.begun[-1] if self.begun else None


def read_spool(path: Path) -> SpoolContents:
    contents = SpoolContents()
    if not path.exists():
        return contents
    with open(path, encoding="utf-8") as f:
        for line in f:
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                contents.torn_lines += 1  # the worker was killed while writing this line
                continue
            _apply(contents, record)
    return contents


def _apply(contents: SpoolContents, record: dict[str, Any]) -> None:
    kind = record.pop("t", None)
    if kind == "start":
        contents.start = record
    elif kind == "adapter":
        contents.runtime = record.get("runtime")
    elif kind == "begin":
        contents.begun.append(record.get("phase"))
    elif kind == "phase":
        contents.phases.append(record)
        if record.get("phase") in contents.begun:
            del contents.begun[len(contents.begun) - 1 - contents.begun[::-1].index(record.get("phase"))]
    elif kind == "lat":
        contents.latencies.append(record)
    elif kind == "versions":
        contents.versions.update(record)
    elif kind == "model":
        contents.model.update(record)
    elif kind == "env":
        contents.environment.update(record)
    elif kind == "error":
        contents.error = record.get("text")
    elif kind == "end":
        contents.finished = True
    elif kind == "batch":
        contents.batches.append(record)
    elif kind == "epoch":
        contents.epochs.append(record)
    elif kind == "dataset":
        contents.dataset.update(record)
    elif kind == "hyper":
        contents.hyper.update(record)
    elif kind == "diverged":
        contents.diverged = record


def run_paths(spool_dir: Path, run_id: uuid.UUID) -> dict[str, Path]:
    """The files of one spooled run, all named after its run id."""
    base = spool_dir / str(run_id)
    return {
        "spool": base.with_suffix(".jsonl"),
        "config": base.with_suffix(".config.json"),
        "meta": base.with_suffix(".meta.json"),
        "log": base.with_suffix(".log"),
        "prepared": base.with_suffix(".prepared.json"),
        "samples": base.with_suffix(".samples.arrow"),
    }


def cleanup_run_files(paths: dict[str, Path]) -> None:
    """Delete a stored run's files, its record last: files left by a crash midway still have a
    record, so the next collect finds the run stored and finishes the cleanup."""
    for name, path in paths.items():
        if name != "meta":
            path.unlink(missing_ok=True)
    paths["meta"].unlink(missing_ok=True)
