"""Runs left behind by an `edgestats collect` that died (killed, crashed, the machine rebooted),
stored by the next collect on the same DB.

Only runs whose owner is dead are touched (ownership.py): a live collect's runs are its own,
however long they take. A recovered run keeps its record's facts (started_at, clock pair, CPU
state), ends when its files were last written (or now, when its worker was still running and is
stopped), carries its sampler batch when one was written, and says in runs.environment.recovered
that it was recovered. Spool files that cannot be read are moved to `damaged/` with a warning;
they never stop a collect.
"""

from __future__ import annotations

import datetime as dt
import uuid
from pathlib import Path

from edgestats.collectors.core.processes import alive, kill_orphan_group
from edgestats.collectors.core.spool import cleanup_run_files, read_spool, run_paths
from edgestats.collectors.ownership import owner_alive, remove_dead_owner_files
from edgestats.collectors.record import RunOutcome, RunRecord, RunRecordError, WorkerExit, classify_exit
from edgestats.collectors.runrows import store_run
from edgestats.collectors.storeaccess import store_waiting
from edgestats.collectors.telemetry.batchfile import read_batch
from edgestats.collectors.telemetry.session import Telemetry
from edgestats.formatting import counted
from edgestats.store.results import RunExistsError

WORKER_MARKER = b"edgestats.collectors.worker"
DAMAGED = "damaged"


def recover_orphans(
    spool_dir: Path, owner: str, db_path: Path, telemetry: Telemetry, warnings: list[str]
) -> list[RunOutcome]:
    """Store the runs in `spool_dir` whose owner (another collect than `owner`) is dead."""
    recovered = []
    for meta_path in sorted(spool_dir.glob("*.meta.json")):
        if meta_path.name.startswith("."):
            continue  # a record being written (atomic_target's temporary file), not yet a record
        record = _read_record(meta_path, warnings)
        if record is None or record.owner == owner or owner_alive(spool_dir, record.owner):
            continue
        paths = run_paths(spool_dir, record.run_id)
        if not paths["meta"].exists():
            continue  # its owner stored it, cleaned up and ended after we read the record
        ended_at, how = _end_orphan(paths, record.started_at)
        with store_waiting(db_path, read_only=True) as store:
            done = store.has_run(record.run_id)
        if not done:
            spool = read_spool(paths["spool"])
            batch = read_batch(paths["samples"])
            # The worker was not our child: its exit status is unknown (WorkerExit()).
            end = classify_exit(spool, WorkerExit(), ended_at, memory_limit_bytes=record.memory_limit_bytes)
            note = {
                "recovered": {
                    "at": dt.datetime.now(dt.timezone.utc).isoformat(),
                    "worker": how,
                    "telemetry": "kept"
                    if batch is not None
                    else "none (the sampler's batch was not written)",
                }
            }
            try:
                store_run(db_path, telemetry, record, end, spool, batch, environment=note)
            except RunExistsError:
                # Two collects that start together after a crash may both find this orphan: the run id
                # is the key, so the second store is refused whole; the run is stored once.
                cleanup_run_files(paths)
                continue
            recovered.append(
                RunOutcome(
                    record.run_id, record.config, end.status, end.error_text, len(spool.latencies), 0.0
                )
            )
        cleanup_run_files(paths)
    remove_dead_owner_files(spool_dir)
    return recovered


def _read_record(meta_path: Path, warnings: list[str]) -> RunRecord | None:
    """The record in `meta_path`, or None after moving an unreadable one (and its run's files)
    aside to damaged/, with a warning."""
    run_name = meta_path.name.removesuffix(".meta.json")
    try:
        uuid.UUID(run_name)
        return RunRecord.read(meta_path)
    except (ValueError, RunRecordError) as exc:
        if not meta_path.exists():
            return None  # deleted since the folder was listed: its collect stored the run and cleaned up
        why = str(exc) if isinstance(exc, RunRecordError) else f"{meta_path.name} is not named after a run id"
        moved = _move_aside(meta_path.parent, run_name)
        warnings.append(
            f"moved {counted(len(moved), 'unreadable spool files')} of run {run_name} to "
            f"{meta_path.parent / DAMAGED}: {why.splitlines()[0]}"
        )
        return None


def _move_aside(spool_dir: Path, run_name: str) -> list[Path]:
    target = spool_dir / DAMAGED
    target.mkdir(exist_ok=True)
    moved = []
    for path in list(spool_dir.iterdir()):
        if path.name.startswith(f"{run_name}.") and path.is_file():
            moved.append(path.rename(target / path.name))
    return moved


def _end_orphan(paths: dict[str, Path], started_at: dt.datetime) -> tuple[dt.datetime, str]:
    """Make sure an orphaned run's worker has ended; when it ended (UTC), and how.

    A worker still running is stopped now: its orchestrator is gone, so nothing sampled it; what
    it measured is stored as interrupted and the resumed sweep runs it again. It ended now.
    A worker that had ended wrote last when it ended: the last modification of its spool, log or
    record (the record alone when it died before the worker started), never before started_at.
    """
    spool = read_spool(paths["spool"])
    if spool.start and alive(spool.start.get("pid"), WORKER_MARKER):
        kill_orphan_group(spool.start["pid"], WORKER_MARKER)
        return dt.datetime.now(dt.timezone.utc), "still running at recovery: stopped"
    written_s = max(
        (p.stat().st_mtime for p in (paths["spool"], paths["log"], paths["meta"]) if p.exists()),
        default=started_at.timestamp(),
    )
    how = "had ended" if spool.start else "never started"
    return max(started_at, dt.datetime.fromtimestamp(written_s, dt.timezone.utc)), how
