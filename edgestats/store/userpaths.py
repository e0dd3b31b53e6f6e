"""Paths a user names (meter CSVs, the device file, inputs, DBs): checked by stat to be regular
files, read with a bound, and said in one line when not.

A FIFO, a character device (/dev/zero), a directory or a socket given where a file is meant is
refused *before* it is opened: an open of a FIFO blocks until a writer comes, and a read of
/dev/zero never ends. The file is then opened with O_NONBLOCK (a FIFO swapped in after the stat
cannot block the open) and checked again on its descriptor. Standard library only: the device side
and the analysis both use it (docs/architecture.md §3).
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

MESSAGE_CHARS = 80  # a value echoed in a message: longer ones are cut, with how long they were

_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def shorten(text: str, limit: int = MESSAGE_CHARS) -> str:
    """`text` as repr() shows it, cut to about `limit` characters with its length said."""
    shown = repr(text)
    if len(shown) <= limit:
        return shown
    return f"{shown[: limit - 1]}…' ({len(text):,} characters)"


def kind_of_mode(mode: int) -> str | None:
    """What a stat mode is when it is not a regular file ('a FIFO', 'a directory', ...), else None."""
    if stat.S_ISREG(mode):
        return None
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def kind_of(path: str | Path) -> str | None:
    """None for a regular file (through symlinks); else what the path is, in words: 'missing',
    'a symlink loop', 'a FIFO', 'a character device', 'a directory', ... (stat only, never open)."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return "a broken symlink" if os.path.islink(path) else "missing"
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return "a symlink loop"
        if exc.errno == errno.ENAMETOOLONG:
            return "a path too long"
        return f"unreadable ({exc.strerror})"
    return kind_of_mode(mode)


def not_a_file(path: str | Path, what: str = "file") -> str | None:
    """The one-line reason `path` cannot be read as a `what` ('no such file', 'is a FIFO, not a
    file'), or None when it is a regular file."""
    kind = kind_of(path)
    if kind is None:
        return None
    if kind == "missing":
        return f"{path}: no such file"
    return f"{path} is {kind}, not a {what}"


def check_file(path: str | Path, error: type[Exception], what: str = "file", advice: str = "") -> Path:
    """`path` when it is a regular file; else `error` with not_a_file's line (and `advice`)."""
    reason = not_a_file(path, what)
    if reason:
        raise error(reason + (f"; {advice}" if advice else ""))
    return Path(path)


def read_bounded(path: str | Path, limit_bytes: int, error: type[Exception], what: str = "file") -> bytes:
    """The bytes of the regular file `path`, or `error` in one line when it is not one or holds more
    than `limit_bytes` (read by at most limit + 1 bytes, so a file that grows is bounded too).
    OSError from the read itself (permission denied) is left to the caller."""
    check_file(path, error, what)
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0))
    try:
        kind = kind_of_mode(os.fstat(fd).st_mode)  # swapped for another kind after the stat
        if kind:
            raise error(f"{path} is {kind}, not a {what}")
        chunks, size = [], 0
        while size <= limit_bytes and (chunk := os.read(fd, min(1 << 20, limit_bytes + 1 - size))):
            chunks.append(chunk)
            size += len(chunk)
    finally:
        os.close(fd)
    if size > limit_bytes:
        raise error(f"{path} is larger than a {what} can be ({limit_bytes:,} bytes at most)")
    return b"".join(chunks)


def check_size(path: str | Path, limit_bytes: int, error: type[Exception], what: str = "file") -> Path:
    """`path` when it is a regular file of at most `limit_bytes`; else `error` in one line."""
    check_file(path, error, what)
    size = os.stat(path).st_size
    if size > limit_bytes:
        raise error(f"{path} holds {size:,} bytes, more than a {what} can be ({limit_bytes:,} bytes at most)")
    return Path(path)
