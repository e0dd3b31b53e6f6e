"""A run's sampler batch kept next to its spool until the run is in the DB.

The sampler lives in the orchestrator, not the worker, so its samples are in memory only. They
are written here (Arrow IPC, with the unavailable sensors and the sampler's stats in the schema
metadata) before the run is stored: if storing fails (a full disk, a DB held too long by another
process) or collect dies in between, the next collect recovers the run with its telemetry.
"""

from __future__ import annotations

import json
import os
from array import array
from pathlib import Path

import pyarrow as pa
import pyarrow.ipc

from edgestats.collectors.telemetry.sampler import SampleBatch


def write_batch(path: Path, batch: SampleBatch) -> bool:
    """Write `batch` atomically; False when it could not be written (the run is still stored now,
    only a later recovery would lack the samples)."""
    table = batch.to_arrow().replace_schema_metadata(
        {"unavailable": json.dumps(batch.unavailable), "stats": json.dumps(batch.stats, default=str)}
    )
    staging = path.with_name(f".{path.name}.new")
    try:
        with pa.OSFile(str(staging), "wb") as sink, pa.ipc.new_file(sink, table.schema) as writer:
            writer.write_table(table)
        os.replace(staging, path)
        return True
    except OSError:
        staging.unlink(missing_ok=True)
        return False


def read_batch(path: Path) -> SampleBatch | None:
    """The batch `write_batch` wrote, or None when there is none (or it is unreadable)."""
    try:
        with pa.memory_map(str(path)) as source:
            table = pa.ipc.open_file(source).read_all()
    except (OSError, pa.ArrowInvalid):
        return None
    meta = table.schema.metadata or {}
    metrics = table.column("metric").to_pylist()
    names = list(dict.fromkeys(metrics))
    code = {name: i for i, name in enumerate(names)}
    return SampleBatch(
        t_ns=array("q", table.column("t_ns").to_pylist()),
        codes=array("i", [code[m] for m in metrics]),
        names=names,
        value=array("d", table.column("value").to_pylist()),
        unavailable=[tuple(u) for u in json.loads(meta.get(b"unavailable", b"[]"))],
        stats=json.loads(meta.get(b"stats", b"{}")),
    )
