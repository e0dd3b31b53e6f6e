"""Which `edgestats collect` owns a spooled run: proven by a held lock, not guessed.

Each collect holds an exclusive flock(2) on its own `owner-<id>.lock` in the spool folder for as
long as it lives, and writes that name into every run record it starts. The kernel releases a
flock when its process ends, however it ends (SIGKILL and the OOM killer included), so a lock
that another process can take belongs to a dead collect: only then are its runs recovered.
Runs of a live collect are never touched, however long they take.

The lock file is made under a temporary name, locked, then renamed into place (an atomic
rename), so no other collect can see an owner file that is not yet locked.
"""

from __future__ import annotations

import fcntl
import os
import uuid
from pathlib import Path

OWNER_GLOB = "owner-*.lock"


class SpoolOwner:
    """This process's claim on the runs it spools; `close()` (or exit) gives it up."""

    def __init__(self, spool_dir: Path):
        self.name = f"owner-{uuid.uuid4()}.lock"
        self.path = spool_dir / self.name
        staging = spool_dir / f".{self.name}.new"
        self._fd = os.open(staging, os.O_CREAT | os.O_RDWR | os.O_CLOEXEC, 0o644)  # not inherited by workers
        try:
            fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            os.write(self._fd, f"{os.getpid()}\n".encode())
            os.replace(staging, self.path)
        except OSError as exc:  # a full disk: the write's error names no file, so name it here
            os.close(self._fd)
            self._fd = None
            staging.unlink(missing_ok=True)
            raise OSError(exc.errno, exc.strerror, str(staging)) from exc

    def __del__(self) -> None:  # an orchestrator dropped without close() (tests, embedding code)
        self.close()

    def close(self) -> None:
        if getattr(self, "_fd", None) is None:
            return
        self.path.unlink(missing_ok=True)
        os.close(self._fd)  # releases the lock
        self._fd = None


def owner_alive(spool_dir: Path, name: str | None) -> bool:
    """Whether the collect that wrote `name` into a run record still runs. A record without an
    owner (written by an edgestats before owners) or whose lock file is gone has no live owner."""
    if not name or "/" in name or not name.startswith("owner-"):
        return False
    try:
        fd = os.open(spool_dir / name, os.O_RDWR | os.O_CLOEXEC)
    except FileNotFoundError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)  # also drops the lock if we just took it
    return False


def remove_dead_owner_files(spool_dir: Path) -> None:
    """Delete the lock files of collects that ended without removing theirs (killed)."""
    for path in spool_dir.glob(OWNER_GLOB):
        try:
            fd = os.open(path, os.O_RDWR | os.O_CLOEXEC)
        except FileNotFoundError:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            path.unlink(missing_ok=True)  # locked by us: its owner is gone
        except BlockingIOError:
            pass
        finally:
            os.close(fd)
