"""One run per slot: concurrent collects of one sweep on one DB run each slot once.

A slot is one (configuration, repeat) pair, named by its config_hash (every field, repeat index
included: runconfig.py). Before running a slot, a collect takes an exclusive, non-blocking
flock(2) on `slot-<config_hash>.lock` in the spool folder and then looks in the DB again, under
the lock: a slot that another collect stored since this one planned is not run a second time,
and a slot that a live collect holds is left to it. The kernel drops a flock when its process
ends, however it ends (as with ownership.py's owner locks), so the slot of a collect that died
can be taken again. Its file still names the dead owner: the next holder first recovers what
that collect left spooled (recovery.py), so a run it finished but had not stored counts.

A holder removes the file, still locked, when it lets the slot go. A claimer checks after
locking that the path still names the file it locked (device and inode): a lock won on a file
just removed is dropped and taken again on the new one, so two live claims of a slot never exist.
"""

from __future__ import annotations

import fcntl
import os
import time
from pathlib import Path
from typing import TYPE_CHECKING

from edgestats.collectors.core.processes import raise_if_stopped

if TYPE_CHECKING:  # the claim itself needs no DuckDB
    from edgestats.store.results import Store

SLOT_GLOB = "slot-*.lock"
WAIT_POLL_S = 0.1  # wait_for_slot's period: a run takes seconds, so a tenth is prompt enough
OWNER_NAME_MAX_BYTES = 256


def slot_path(spool_dir: Path, config_hash: str) -> Path:
    return spool_dir / f"slot-{config_hash}.lock"


class SlotClaim:
    """This process's hold on one slot; `release()` (or leaving the `with`) lets it go.

    `previous_owner` is the owner name (ownership.py) of a collect that held the slot and died
    holding it, or None."""

    def __init__(self, path: Path, fd: int, previous_owner: str | None):
        self.path, self._fd, self.previous_owner = path, fd, previous_owner

    def release(self) -> None:
        if self._fd is None:
            return
        if _names_locked_file(self._fd, self.path):
            self.path.unlink(missing_ok=True)  # while locked: nobody can hold this file after us
        os.close(self._fd)  # releases the lock
        self._fd = None

    def __enter__(self) -> SlotClaim:
        return self

    def __exit__(self, *exc) -> None:
        self.release()

    def __del__(self) -> None:
        self.release()


def try_claim(spool_dir: Path, config_hash: str, owner: str) -> SlotClaim | None:
    """Claim the slot, or None when another live process holds it (never waits)."""
    path = slot_path(spool_dir, config_hash)
    while True:
        # O_CLOEXEC: a worker that outlives its collect must not keep the slot held
        fd = os.open(path, os.O_CREAT | os.O_RDWR | os.O_CLOEXEC, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return None
        if not _names_locked_file(fd, path):
            os.close(fd)  # its holder removed it between our open and our lock: take the new one
            continue
        try:
            previous = os.pread(fd, OWNER_NAME_MAX_BYTES, 0).decode("utf-8", "replace").strip()
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{owner}\n".encode(), 0)
        except BaseException:
            os.close(fd)
            raise
        return SlotClaim(path, fd, previous if previous and previous != owner else None)


def wait_for_slot(spool_dir: Path, config_hash: str, owner: str) -> SlotClaim:
    """Claim the slot, waiting while another collect runs it; a stop signal ends the wait."""
    while (claim := try_claim(spool_dir, config_hash, owner)) is None:
        raise_if_stopped()
        time.sleep(WAIT_POLL_S)
    return claim


def remove_dead_slot_files(spool_dir: Path) -> None:
    """Delete the slot files of collects that died holding them, once their runs are recovered.
    A file a claimer has just made and not yet locked may go too: that claimer sees the path no
    longer names its file and makes it again (try_claim)."""
    for path in spool_dir.glob(SLOT_GLOB):
        try:
            fd = os.open(path, os.O_RDWR | os.O_CLOEXEC)
        except FileNotFoundError:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            if _names_locked_file(fd, path):
                path.unlink(missing_ok=True)
        except BlockingIOError:
            pass  # a live collect holds it
        finally:
            os.close(fd)


def _names_locked_file(fd: int, path: Path) -> bool:
    try:
        named = os.stat(path)
    except FileNotFoundError:
        return False
    held = os.fstat(fd)
    return (named.st_dev, named.st_ino) == (held.st_dev, held.st_ino)


# What counts as "stored": a collected run of the slot that was not `killed` (an interrupted
# attempt is tried again, as a resumed collect does: Store.finished_config_hashes).
_STORED_SQL = "SELECT config_hash, count(*) FROM runs WHERE source = 'collect' AND status <> 'killed'"


def stored_counts(store: Store) -> dict[str, int]:
    """Per slot, the runs stored so far: a collect's baseline when it plans."""
    rows = store.con.execute(f"{_STORED_SQL} AND config_hash IS NOT NULL GROUP BY config_hash").fetchall()
    return dict(rows)


def stored_since(store: Store, config_hash: str, baseline: dict[str, int]) -> bool:
    """Whether a run of the slot was stored after `baseline` (stored_counts) was taken: another
    collect ran it (or recovered it) meanwhile."""
    row = store.con.execute(
        f"{_STORED_SQL} AND config_hash = ? GROUP BY config_hash", [config_hash]
    ).fetchone()
    return (row[1] if row else 0) > baseline.get(config_hash, 0)
