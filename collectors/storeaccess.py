"""Opening the results DB from `edgestats collect`: wait while another process holds it.

DuckDB lets one process at a time hold a file open for writing (or several, read-only). Another
collect storing its run, an `edgestats sql`, a DuckDB client: each holds it for a moment, and a
run waits rather than fails. A run that still cannot be stored after STORE_WAIT_S stays in the
spool with its telemetry, and the next collect stores it.
"""

from __future__ import annotations

import random
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from edgestats.collectors.processes import raise_if_stopped
from edgestats.errors import DatabaseLockedError
from edgestats.store.results import Store

STORE_WAIT_S = 120.0  # how long a finished run waits for another process to release the DB


@contextmanager
def store_waiting(path: Path, *, read_only: bool = False, wait_s: float = STORE_WAIT_S) -> Iterator[Store]:
    """Store.open, retried with a growing, jittered back-off while the file is locked."""
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
