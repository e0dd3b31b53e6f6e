"""The collect that died, faked for recovery tests (tests/collectors/test_record.py): an
orchestrator on a fresh DB, its death (the ownership lock released, as the kernel releases it),
and the spool its worker left, written with the worker's own SpoolWriter."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from edgestats.collectors.core.spool import SpoolWriter
from edgestats.collectors.orchestrator import Orchestrator
from edgestats.store.results import Store


def make_orchestrator(tmp_path: Path, memory_limit_bytes: int | None = None) -> Orchestrator:
    db = tmp_path / "r.duckdb"
    with Store.open(db) as store:
        device_id = store.register_device({"name": "test-device"})
    return Orchestrator(
        db, device_id=device_id, cache_dir=tmp_path / "cache", memory_limit_bytes=memory_limit_bytes
    )


def died(orchestrator: Orchestrator) -> Orchestrator:
    """The collect that owned `orchestrator`'s runs is gone: its ownership lock is released, as
    the kernel releases it when a process dies. Returns the next collect on the same DB."""
    orchestrator.close()
    return make_orchestrator(orchestrator.db_path.parent)


def write_spool(path: Path, pid: int, *, n_latencies: int, finished: bool = False) -> None:
    """What a worker flushes as it goes: start, the phases it finished, latencies, maybe end."""
    spool = SpoolWriter(path)
    t0 = time.monotonic_ns()
    spool.write("start", pid=pid, spawn_ns=t0 - 1_000_000, start_ns=t0)
    spool.write("phase", phase="import", seq=0, start_ns=t0, end_ns=t0 + 1_000)
    for i in range(n_latencies):
        spool.write("lat", i=i, w=False, s=t0 + 2_000 + i * 10, ns=5)
    if finished:
        spool.write("end", end_ns=t0 + 10_000)
    spool.close()


def ended_process_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid
