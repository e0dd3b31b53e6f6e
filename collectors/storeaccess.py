"""Opening the results DB from `edgestats collect`: wait while another process holds it.

DuckDB lets one process at a time hold a file open for writing (or several, read-only). Another
collect storing its run, an `edgestats sql`, a DuckDB client: each holds it for a moment, and a
run waits rather than fails. A run that still cannot be stored after STORE_WAIT_S stays in the
spool with its telemetry, and the next collect stores it.

A DB marked damaged (by `edgestats verify`, or a command that met damage in it) is not opened for
writing: appending reads no old block, so DuckDB would not notice the damage, and the new runs
would land in a file whose copy must be replaced anyway. `collect --force` (`appending_anyway`)
lifts that for its DB.
"""

from __future__ import annotations

import random
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from edgestats.collectors.core.processes import raise_if_stopped
from edgestats.errors import DatabaseLockedError
from edgestats.store.results import Store
from edgestats.store.verify import refuse_known_damaged

STORE_WAIT_S = 120.0  # how long a finished run waits for another process to release the DB

# DBs this process was told (collect --force) to append to although marked damaged: a set the
# command fills for its run, rather than a flag passed through every layer that stores a run.
_FORCED: set[Path] = set()


@contextmanager
def appending_anyway(path: Path, force: bool) -> Iterator[None]:
    """Within this block, with `force`, store_waiting writes to `path` even when it is marked damaged."""
    key = Path(path).resolve()
    added = force and key not in _FORCED
    if added:
        _FORCED.add(key)
    try:
        yield
    finally:
        if added:
            _FORCED.discard(key)


@contextmanager
def store_waiting(path: Path, *, read_only: bool = False, wait_s: float = STORE_WAIT_S) -> Iterator[Store]:
    """Store.open, retried with a growing, jittered back-off while the file is locked; a DB marked
    damaged is refused for writing (DamagedDatabaseError) unless `appending_anyway` lifted it."""
    if not read_only and Path(path).resolve() not in _FORCED:
        refuse_known_damaged(path, "collect")
    deadline = time.monotonic() + wait_s
    delay_s = 0.01
    while True:
        try:
            store = Store.open(path, read_only=read_only)
            break
        except DatabaseLockedError:
            if time.monotonic() > deadline:
                raise
            raise_if_stopped()  # a stop signal while waiting: stop waiting
            time.sleep(delay_s * random.uniform(1, 2))  # jitter: waiting collects do not retry in lockstep
            delay_s = min(delay_s * 2, 0.5)
    with store:
        yield store
