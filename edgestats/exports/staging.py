"""The hidden files a `merge` or an `export` writes beside its output while it runs, whose they
are, and how the next run clears those of a dead one.

A run's hidden names share one tag, `.<OUT name>.<kind>-<pid>-<random>` (kind: `merging`,
`tmp`, `old`; DuckDB adds `.wal` and `.tmp` to a staged DB), and one lock file,
`.<OUT name>.lock-<pid>-<random>`, on which the run holds an exclusive flock(2) from before it
creates any of them until after it removed or renamed the last. The kernel drops a flock when
its process ends, however it ends (SIGKILL included), so a lock that another process can take
belongs to a dead run: only then are its files removed, by `remove_dead_leftovers`, which
every merge and export calls on its output's folder first. This is collect's spool-ownership
rule (collectors/ownership.py), which also holds for a run in another PID namespace sharing the
folder, where a PID says nothing.

Two cases without a held lock are told apart by other means. A lock file still empty belongs to
a run between creating it and locking it (a moment), so it counts as dead only once a minute
old. Files without a lock file come from an edgestats before this one: dead when the PID in
their name is not running (a reused PID only keeps them); an older export's folder named
without a PID (`.<DIR>.tmp-<random>`) cannot be told from a live one's and is left alone. A
dead run's `.old-` folder (an earlier export swapped out by `--overwrite`) is renamed back when
its output is missing: the kill came between the two renames.
"""

from __future__ import annotations

import fcntl
import os
import re
import shutil
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

SETUP_GRACE_S = 60.0  # an unlocked, empty lock file younger than this may be a run setting up

_NAME = re.compile(
    r"^\.(?P<target>.+)\.(?P<kind>merging|tmp|old|lock)-(?P<pid>\d+)-(?P<tag>[0-9a-f]{8}|[0-9a-f]{12})"
    r"(?P<suffix>\.wal|\.tmp|\.inputs)?$"
)


class Staging:
    """This process's claim on hidden names beside `target`: `path(kind)` names one, and the
    claim (the held lock) lasts until `close()`; close only once every file is gone or renamed."""

    def __init__(self, target: Path):
        self.target = target
        self.tag = f"{os.getpid()}-{uuid.uuid4().hex[:12]}"
        self.lock = self.path("lock")
        self._fd: int | None = os.open(self.lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY | os.O_CLOEXEC, 0o644)
        try:
            fcntl.flock(self._fd, fcntl.LOCK_EX)
            os.write(self._fd, f"{os.getpid()}\n".encode())  # non-empty: locked (see SETUP_GRACE_S)
        except OSError:
            self.close()
            raise

    def path(self, kind: str) -> Path:
        return self.target.with_name(f".{self.target.name}.{kind}-{self.tag}")

    def close(self) -> None:
        if self._fd is None:
            return
        with suppress(OSError):
            self.lock.unlink()
        os.close(self._fd)  # releases the lock, after the name is gone
        self._fd = None

    def __enter__(self) -> Staging:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def remove_dead_leftovers(folder: Path) -> list[Path]:
    """Remove the hidden files of merges and exports in `folder` whose run is dead (see the
    module docstring); returns what was removed or restored. Never raises: a folder it cannot
    read or write is left as it is, and the run goes on."""
    groups: dict[tuple[str, str, str], list[tuple[Path, re.Match]]] = {}
    try:
        for entry in folder.iterdir():
            match = _NAME.match(entry.name)
            if match:
                groups.setdefault((match["target"], match["pid"], match["tag"]), []).append((entry, match))
    except OSError:
        return []
    removed: list[Path] = []
    for (target, pid, _), entries in groups.items():
        lock = next((p for p, m in entries if m["kind"] == "lock"), None)
        with suppress(OSError), _owner_gone(lock, pid) as dead:
            if dead:
                removed += _remove(folder / target, [(p, m) for p, m in entries if p != lock])
    return removed


@contextmanager
def _owner_gone(lock: Path | None, pid: str) -> Iterator[bool]:
    """Whether a run's files may be removed. Its lock (when it has one) is held meanwhile, so no
    run can take it over, and is removed last."""
    if lock is None:
        yield _legacy_dead(pid)
        return
    fd = os.open(lock, os.O_RDONLY | os.O_CLOEXEC)  # no O_CREAT: it may have just been removed
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False  # a live run
            return
        info = os.fstat(fd)
        dead = info.st_size > 0 or time.time() - info.st_mtime > SETUP_GRACE_S
        yield dead
        if dead:
            lock.unlink(missing_ok=True)
    finally:
        os.close(fd)


def _legacy_dead(pid: str) -> bool:
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return True
    except (PermissionError, OverflowError):  # running as another user; a PID past the range
        return False
    return False


def _remove(target: Path, entries: list[tuple[Path, re.Match]]) -> list[Path]:
    removed = []
    for path, match in entries:
        if match["kind"] == "old" and not match["suffix"] and not target.exists() and path.is_dir():
            os.rename(path, target)  # the earlier export, swapped out when the run was killed
        elif path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        else:
            path.unlink(missing_ok=True)
        removed.append(path)
    return removed
