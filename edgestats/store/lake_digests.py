"""Every lake file's SHA-256 checked when the lake is opened, once per version of the file.

Parquet pages as DuckDB writes them carry no checksum, so a byte changed inside a value that still
decodes would read as another value. The manifest lists each file's SHA-256 (parquet.py), and
`open_lake` checks every listed file against it (`check_lake_digests`) before a query reads the
lake. Reading a whole lake on every command would cost its size each time, so a file found whole
is remembered in the user's cache, `$XDG_CACHE_HOME/edgestats/lake-digests.json`, by its real path,
size, inode, mtime and ctime (ns) and the digest the manifest lists: the first read of a lake
hashes every file once (SHA-256 ran at 0.7 to 1.1 GB/s on this project's 2-core AMD EPYC, SHA-NI,
files in the page cache; from disk, the disk's read speed), later reads stat each file and hash
only those that changed (rewritten, touched, replaced, or listed with another digest); a full
cache (MAX_ENTRIES, 1.2 MB) takes about 50 ms to read.

Why ctime as well: a tool that restores a file's mtime after writing it (`cp -p`, `rsync -t`,
`touch -r`) cannot restore its ctime. A file modified in the last SETTLED_NS is hashed but not
remembered: a write within the same clock tick (2 s on FAT) could leave its mtime as it was.

The cache only saves time, so it is never an error: one that does not parse is ignored and
rewritten, one that cannot be written (a read-only home, a full disk) is left as it is (this
process still remembers what it hashed). It keeps the MAX_ENTRIES files verified last; two
commands writing it at once can lose some of each other's entries, which costs a hash, no more.
Files whose manifest lists no digest (exports made before edgestats listed them) are not checked.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
import time
from pathlib import Path

import duckdb

from edgestats.cachedir import user_cache_dir
from edgestats.store.lake_checks import (
    DIGEST_MISMATCH,
    LakeFile,
    damaged_lake_error,
    file_sha256,
    footer_problem,
    read_problem,
)

CACHE_NAME = "lake-digests.json"
CACHE_FORMAT = "edgestats-lake-digests-1"
MAX_ENTRIES = 10_000  # about 250 bytes each: a cache of at most a few MB, parsed in tens of ms
SETTLED_NS = 3_000_000_000  # more than FAT's 2 s mtime tick, and the kernel's coarse clock lag
STALE_TEMP_S = 3600  # a write takes milliseconds: a temporary file this old was left by a kill

# The files this process verified, so an API session whose cache cannot be written hashes once.
_verified: dict[str, list] = {}


def cache_path() -> Path:
    return user_cache_dir() / CACHE_NAME


def check_lake_digests(root: Path, files: list[LakeFile]) -> None:
    """Raise DamagedDatabaseError naming the first listed file whose bytes are not the ones the
    export wrote (the others counted), hashing only the files not verified before."""
    known = {**read_cache(), **_verified}
    start_ns = time.time_ns()
    found: list[tuple[LakeFile, str]] = []
    verified: dict[str, list] = {}
    try:
        for file in files:
            state = _state(file)
            if state is None or known.get(state[0]) == state[1]:
                continue  # no digest listed, or verified before (vanished files: the open checks')
            try:
                same = file_sha256(file.path) == file.sha256
            except OSError as exc:
                found.append((file, f"cannot be read ({exc.strerror or exc})"))
                continue
            if not same:
                found.append((file, DIGEST_MISMATCH))
            elif start_ns - state[1][2] > SETTLED_NS:
                verified[state[0]] = state[1]
    finally:  # what was verified before an interruption is kept too
        if verified:
            _remember(verified)
    if found:
        raise damaged_lake_error(root, _what_is_wrong(*found[0]), len(found) - 1)


def _remember(verified: dict[str, list]) -> None:
    """Add `verified` last (the entries stay in the order verified) to this process's memory and
    to the cache as it is now (another command may have written it since it was read)."""
    cache = read_cache()
    for memory in (_verified, cache):
        for path in verified:
            memory.pop(path, None)
        memory.update(verified)
    for path in list(_verified)[:-MAX_ENTRIES]:
        del _verified[path]
    write_cache(cache)


def _state(file: LakeFile) -> tuple[str, list] | None:
    """The file's cache key (its real path) and what must match for it to count as verified."""
    if file.sha256 is None:
        return None
    try:
        st = os.stat(file.path)
    except OSError:
        return None
    return os.path.realpath(file.path), [st.st_size, st.st_ino, st.st_mtime_ns, st.st_ctime_ns, file.sha256]


def _what_is_wrong(file: LakeFile, problem: str) -> tuple[LakeFile, str]:
    """For a file whose digest differs, DuckDB's words when its footer or values do not read
    (more telling than a digest), else the digest's."""
    if problem != DIGEST_MISMATCH:
        return file, problem
    con = duckdb.connect()
    try:
        return file, footer_problem(con, file) or read_problem(con, file) or problem
    finally:
        con.close()


def read_cache() -> dict[str, list]:
    """The verified files the cache holds, by real path; none when it is missing or does not parse."""
    try:
        cache = json.loads(cache_path().read_text(encoding="utf-8"))
    except (OSError, ValueError):  # missing, unreadable, not text or not JSON: start afresh
        return {}
    if not isinstance(cache, dict) or cache.get("format") != CACHE_FORMAT:
        return {}
    files = cache.get("files")
    if not isinstance(files, dict):
        return {}
    return {path: state for path, state in files.items() if isinstance(state, list) and len(state) == 5}


def write_cache(files: dict[str, list]) -> None:
    """Replace the cache with `files` (the newest MAX_ENTRIES) in one rename; any OSError ignored."""
    path = cache_path()
    kept = dict(list(files.items())[-MAX_ENTRIES:])
    temp = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        _remove_stale_temps(path)
        fd, temp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.tmp-")
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump({"format": CACHE_FORMAT, "files": kept}, f, separators=(",", ":"))
        os.replace(temp, path)
        temp = None
    except OSError:
        pass  # a cache that cannot be written costs a hash next time, nothing else
    finally:
        if temp is not None:
            with contextlib.suppress(OSError):
                os.unlink(temp)


def _remove_stale_temps(path: Path) -> None:
    """The temporary files of writers killed mid-write (SIGKILL, power loss)."""
    for temp in path.parent.glob(f".{path.name}.tmp-*"):
        with contextlib.suppress(OSError):
            if time.time() - temp.stat().st_mtime > STALE_TEMP_S:
                temp.unlink()
