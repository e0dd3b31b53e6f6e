"""Where a dataset lives and how much of it is in the page cache (the Jetson study's storage and
cache experiments). With the standard library only and no root.

- residency: each file is mapped (PROT_READ, nothing is faulted in) and mincore(2) reports which
  of its pages are resident; the fraction of all pages is the dataset's residency.
- eviction: posix_fadvise(POSIX_FADV_DONTNEED) per file, after fdatasync, because the kernel
  keeps dirty pages (a dataset written a moment ago) whatever the advice says. Works on files
  the user can open for reading; it cannot evict pages another process has locked or mapped.
- storage: the mount that holds the directory, from /proc/self/mountinfo: filesystem type and
  source device, e.g. "ext4:/dev/vda", "nfs4:server:/export", "tmpfs:tmpfs" (tmpfs is memory:
  eviction cannot work there, residency is always 1).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import mmap
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

PROT_READ = 0x1
MAP_SHARED = 0x01
MAP_FAILED = ctypes.c_void_p(-1).value
PAGE_BYTES = mmap.PAGESIZE

_libc: Any = None


def _c() -> Any:
    global _libc
    if _libc is None:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        libc.mmap.restype = ctypes.c_void_p
        libc.mmap.argtypes = (
            ctypes.c_void_p,
            ctypes.c_size_t,
            ctypes.c_int,
            ctypes.c_int,
            ctypes.c_int,
            ctypes.c_long,
        )
        libc.munmap.argtypes = (ctypes.c_void_p, ctypes.c_size_t)
        libc.mincore.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.POINTER(ctypes.c_ubyte))
        _libc = libc
    return _libc


def file_residency(path: str | Path) -> tuple[int, int]:
    """(resident pages, total pages) of one file; (0, 0) for an empty file."""
    size = os.path.getsize(path)
    if size == 0:
        return 0, 0
    pages = (size + PAGE_BYTES - 1) // PAGE_BYTES
    libc = _c()
    fd = os.open(path, os.O_RDONLY)
    try:
        addr = libc.mmap(None, size, PROT_READ, MAP_SHARED, fd, 0)
        if addr in (None, MAP_FAILED):
            err = ctypes.get_errno()
            raise OSError(err, f"mmap of {path} failed: {os.strerror(err)}")
        try:
            vec = (ctypes.c_ubyte * pages)()
            if libc.mincore(addr, size, vec) != 0:
                err = ctypes.get_errno()
                raise OSError(err, f"mincore on {path} failed: {os.strerror(err)}")
            resident = sum(b & 1 for b in bytes(vec))
        finally:
            libc.munmap(addr, size)
    finally:
        os.close(fd)
    return resident, pages


def residency(files: Iterable[str | Path]) -> float | None:
    """Fraction (0..1) of the files' pages that are in the page cache; None if there are none."""
    resident = total = 0
    for path in files:
        r, t = file_residency(path)
        resident, total = resident + r, total + t
    return resident / total if total else None


def evict(files: Iterable[str | Path]) -> int:
    """Drop the files' pages from the page cache (no root needed); returns how many files."""
    count = 0
    for path in files:
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fdatasync(fd)  # dirty pages are not dropped by the advice
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)
        count += 1
    return count


# -- storage ----------------------------------------------------------------------------------------


def _unescape(field: str) -> str:
    """mountinfo escapes space, tab, newline and backslash as octal (\\040 ...)."""
    return field.encode().decode("unicode_escape") if "\\" in field else field


def parse_mountinfo(text: str) -> list[dict[str, str]]:
    """The mounts of a /proc/<pid>/mountinfo text, in order (later mounts hide earlier ones)."""
    mounts = []
    for line in text.splitlines():
        if " - " not in line:
            continue
        before, after = line.split(" - ", 1)
        left, right = before.split(), after.split()
        if len(left) < 5 or len(right) < 2:
            continue
        mounts.append(
            {
                "mount_id": left[0],
                "dev": left[2],
                "root": _unescape(left[3]),
                "mount_point": _unescape(left[4]),
                "options": left[5] if len(left) > 5 else "",
                "fstype": right[0],
                "source": _unescape(right[1]),
            }
        )
    return mounts


def mount_of(path: str | Path, mounts: list[dict[str, str]]) -> dict[str, str] | None:
    """The mount that holds `path`: the longest mount point that is a prefix (the last one wins)."""
    target = os.path.realpath(path)
    best: dict[str, str] | None = None
    for m in mounts:
        point = m["mount_point"]
        inside = target == point or target.startswith(point.rstrip("/") + "/") or point == "/"
        if inside and (best is None or len(point) >= len(best["mount_point"])):
            best = m
    return best


def storage_of(path: str | Path, proc_root: str | Path = "/") -> dict[str, Any]:
    """Where `path` is stored: {"storage": "fstype:source", fstype, source, mount_point, ...}."""
    try:
        text = (Path(proc_root) / "proc/self/mountinfo").read_text()
    except OSError as exc:
        return {"storage": None, "why": f"cannot read mountinfo: {exc.strerror}"}
    mount = mount_of(path, parse_mountinfo(text))
    if mount is None:
        return {"storage": None, "why": f"no mount holds {path}"}
    st = os.stat(path)
    return {
        "storage": f"{mount['fstype']}:{mount['source']}",
        "fstype": mount["fstype"],
        "source": mount["source"],
        "mount_point": mount["mount_point"],
        "mount_options": mount["options"],
        "dev": mount["dev"],
        "st_dev": f"{os.major(st.st_dev)}:{os.minor(st.st_dev)}",
    }
