"""Opening DuckDB files, with DuckDB's low-level errors turned into ones a user can act on.

Every edgestats connection to a results file goes through `connect()`, which also checks that
the file is whole (`check_intact`) before anything reads or writes it, and creates every new file
in the storage format every DuckDB client reads (`STORAGE_COMPATIBILITY`), and sets DuckDB's
memory_limit from the memory available (`limit_memory`). Errors are translated
here and only here:

- a lock held by another process -> DatabaseLockedError (a caller that can wait retries);
- a truncated or corrupt file -> DamagedDatabaseError, at open or whenever DuckDB meets a
  damaged block later (`damage_error`);
- a write the storage refused (disk full, file too large, read-only file system, permission
  denied) -> StorageError naming the cause and the file (`storage_error`, `storage_errors`).
"""

from __future__ import annotations

import errno
import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import duckdb

import edgestats.interrupts as interrupts
from edgestats.errors import DamagedDatabaseError, DatabaseError, DatabaseLockedError, StorageError
from edgestats.store.userpaths import kind_of

# The storage format of the files edgestats creates: DuckDB's oldest with everything the schema uses
# (UUID, JSON, VARCHAR[], TIMESTAMPTZ, CHECK and PRIMARY KEY constraints, views, macros): storage
# version 64, which DuckDB 0.10, every 1.x and 2.x read. DuckDB 2.0's own default (serialization
# version 69) is refused by every DuckDB before 2.0. A file keeps the format it was created in, so
# a DB created by an older edgestats stays as it is (`edgestats merge NEW OLD` rewrites it in this one).
STORAGE_COMPATIBILITY = "v1.0.0"

# A DuckDB file is a 3 x 4096-byte header, then fixed-size blocks (block_size, 256 KiB by default).
FILE_HEADER_BYTES = 3 * 4096

RECOVER = (
    "edgestats does not read or write a damaged file. To recover, copy the DB again from the device "
    "(its copy there is intact) or restore it from a backup, and merge or export from that copy "
    "(`edgestats merge NEW.duckdb COPY.duckdb`, `edgestats export COPY.duckdb`)."
)

# OS errors a write can meet, as the OS words them (the text DuckDB's IO errors end with).
STORAGE_ERRNOS = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EROFS, errno.EACCES, errno.EPERM, errno.EIO)
STORAGE_ADVICE = {
    errno.ENOSPC: "free some space there and run the command again",
    errno.EDQUOT: "free some space within your quota and run the command again",
    errno.EFBIG: "the file reached the largest size allowed here (`ulimit -f`, or the file system's limit); "
    "raise the limit or write to another file system",
    errno.EROFS: "the file system is mounted read-only; write to a DB on a writable file system",
    errno.EACCES: "you may not write it (or read it): check the owner and permissions of the file and its "
    "folder",
    errno.EPERM: "the system does not allow writing it (an immutable file, or a security policy); check with "
    "`lsattr`",
    errno.EIO: "the storage device reported an input/output error; check the device (dmesg) before writing "
    "again",
}
_DAMAGE_MARKERS = (
    "could not read enough bytes",
    "corrupt database file",
    "checksum",
    "serialization error",
    "failed to load metadata pointer",
    "invalid metadata",
)
_QUOTED_FILE = re.compile(r'file "([^"]+)"')


def connect(
    path: str | Path, *, read_only: bool = False, must_exist: bool = False
) -> duckdb.DuckDBPyConnection:
    """Open a DuckDB file, checked whole (`check_intact`). `read_only=True` makes the connection
    itself refuse writes."""
    path = Path(path)
    kind = kind_of(path)  # by stat: a FIFO is never opened (DuckDB's open of one blocks until killed)
    if kind not in (None, "missing", "a directory"):
        raise DatabaseError(f"{path} is {kind}, not a DB file; give the path of a .duckdb file.")
    if (read_only or must_exist) and not path.exists():
        raise DatabaseError(
            f"{path}: no such file. Check the path, or create a DB with `edgestats import` / "
            "`edgestats collect`."
        )
    if path.exists() and path.is_dir():
        raise DatabaseError(f"{path} is a directory; give the path of a .duckdb file.")
    if not path.parent.exists():
        raise DatabaseError(f"{path}: the folder {path.parent} does not exist; create it first.")
    try:
        if not read_only and not path.exists():
            # Created by a connection of its own, closed at once: the format is in the file from then
            # on, and every later connection (this one included) opens it with DuckDB's default
            # configuration, which two connections to one file in a process must share.
            duckdb.connect(str(path), config={"storage_compatibility_version": STORAGE_COMPATIBILITY}).close()
        con = interrupts.track(duckdb.connect(str(path), read_only=read_only))  # a signal stops its statement
    except duckdb.Error as exc:
        raise translate_open_error(path, exc) from exc
    try:
        limit_memory(con)
        check_intact(con, path, thorough=not read_only)
    except BaseException:
        con.close()
        raise
    return con


# DuckDB's own default memory_limit is 80 % of the machine's RAM, whatever else runs there: on an edge
# board or a shared host a large query would take the other processes down with it. edgestats gives
# it half of the memory available now (less where a cgroup limits this process), never under the floor.
MEMORY_FLOOR_BYTES = 256 * 2**20


def available_memory_bytes() -> int:
    """The memory this process may still take: the system's available memory, or what is left
    of its cgroup's limit (cgroup v2: memory.max - memory.current) when that is less."""
    import psutil  # a core dependency; imported here as the CLI's start-up time counts

    available = int(psutil.virtual_memory().available)
    try:
        with open("/proc/self/cgroup") as f:
            group = next((line.split(":", 2)[2].strip() for line in f if line.startswith("0::")), None)
        if group is not None:
            folder = Path("/sys/fs/cgroup") / group.lstrip("/")
            limit = (folder / "memory.max").read_text().strip()
            if limit != "max":
                used = int((folder / "memory.current").read_text())
                available = min(available, max(int(limit) - used, 0))
    except (OSError, ValueError, IndexError):
        pass  # no cgroup v2 (another OS, v1): the system's figure stands
    return available


def memory_limit_bytes() -> int:
    """The memory_limit edgestats sets on its DuckDB connections (see MEMORY_FLOOR_BYTES)."""
    return max(available_memory_bytes() // 2, MEMORY_FLOOR_BYTES)


def limit_memory(con: duckdb.DuckDBPyConnection, limit_bytes: int | None = None) -> None:
    """Set DuckDB's memory_limit of `con`'s database instance (memory_limit_bytes() by default).
    An instance whose configuration a sandboxed connection locked keeps the limit set when it
    was opened (every connection to a file in one process shares its instance)."""
    limit_mib = max((memory_limit_bytes() if limit_bytes is None else limit_bytes) // 2**20, 1)
    try:
        con.execute(f"SET memory_limit = '{limit_mib}MiB'")
    except duckdb.Error as exc:
        if "locked" not in str(exc).lower():
            raise


def check_intact(
    con: duckdb.DuckDBPyConnection, label: str | Path, database: str | None = None, *, thorough: bool = True
) -> None:
    """Raise DamagedDatabaseError when the file of `database` (the connection's own by default)
    is shorter than the blocks its catalog uses: a copy cut short, a truncated file. DuckDB opens
    such a file and fails only when it reads a missing block, or not at all; appending to it
    would write past the hole.

    A file may legitimately end before its last block, by at most its free blocks (DuckDB cuts
    free blocks off the end). One metadata query (~1 ms) settles it unless the file is short by
    no more than that; then, with `thorough` (before writing), the highest block any table or
    the metadata uses is looked up (10-60 ms, by the number of segments). Without it (a reader)
    a missing block is found when a query reads it, and `damage_error` names it.

    The catalog itself was read and checksummed by DuckDB when the file was opened; a damaged
    data block is found (by its checksum) when a query reads it."""
    try:
        row = first_row(
            con,
            "SELECT d.path, s.block_size, s.total_blocks, s.free_blocks FROM pragma_database_size() s "
            "JOIN duckdb_databases() d USING (database_name) "
            "WHERE d.database_name = coalesce(?, current_database())",
            [database],
        )
        if row is None or not row[0] or not row[1]:
            return  # in memory: no file to check
        file, block_size, total_blocks, free_blocks = row
        size = os.stat(file).st_size
        whole_blocks = max(size - FILE_HEADER_BYTES, 0) // block_size
        missing = total_blocks - whole_blocks
        if missing <= 0 or (missing <= free_blocks and not thorough):
            return
        last_used = total_blocks - 1 if missing > free_blocks else _last_used_block(con, database)
    except duckdb.Error as exc:
        raise translate_open_error(Path(label), exc) from exc
    if last_used is not None and last_used >= whole_blocks:
        raise DamagedDatabaseError(
            f"{label} is damaged: it is cut short ({size} bytes, but its blocks of {block_size} bytes reach "
            f"{FILE_HEADER_BYTES + (last_used + 1) * block_size}). {RECOVER}"
        )


def _last_used_block(con: duckdb.DuckDBPyConnection, database: str | None) -> int | None:
    """The highest block id holding a table segment or metadata, or None for an empty file."""
    db = database or first_row(con, "SELECT current_database()")[0]
    tables = [
        r[0]
        for r in con.execute(
            "SELECT schema_name || '.' || table_name FROM duckdb_tables() "
            "WHERE database_name = ? AND NOT temporary",
            [db],
        ).fetchall()
    ]
    quoted_db = db.replace('"', '""')
    parts = [f"SELECT max(block_id) AS b FROM pragma_metadata_info('{quoted_db}')"]
    parts += [
        f"SELECT max(block_id) FROM pragma_storage_info('{_sql_text(quoted_db + '.' + t)}')" for t in tables
    ]
    return first_row(con, f"SELECT max(b) FROM ({' UNION ALL '.join(parts)})")[0]


def _sql_text(value: str) -> str:
    return value.replace("'", "''")


def translate_open_error(path: Path, exc: Exception) -> DatabaseError:
    """Map DuckDB's open errors to messages that say what to do; a lock held by another process
    is a DatabaseLockedError, so a caller that can wait recognises it by type."""
    text = str(exc)
    # DuckDB reports the lock conflict only in its message (an IOException like any other I/O
    # failure): this is the one place that reads it.
    if "Could not set lock" in text or "Conflicting lock" in text:
        holder = re.search(r"held in (.+?) \(PID (\d+)\)", text)
        who = f" (held by PID {holder.group(2)}, {holder.group(1)})" if holder else ""
        return DatabaseLockedError(
            f"{path} is in use by another process{who}. DuckDB allows one writer per file: "
            "wait for that process to finish (e.g. a running `edgestats collect`), or query a copy."
        )
    storage = storage_error(path, exc)
    if storage is not None:
        return storage
    if "not a valid DuckDB database file" in text:
        return DatabaseError(
            f"{path} is not a DuckDB database: its header is not DuckDB's (another kind of file, or a DB "
            "damaged or cut short while copying). Check the path; if it is a results DB, copy it again from "
            "the device."
        )
    damaged = damage_error(exc, path)
    if damaged is not None:
        return damaged
    if (
        "serialization" in text.lower()
        or "storage version" in text.lower()
        or "newer version" in text.lower()
    ):
        return DatabaseError(
            f"{path} was written by a newer DuckDB than this one ({duckdb.__version__}): "
            f"upgrade duckdb (pip install -U duckdb). DuckDB said: {_first_line(text)}"
        )
    return DatabaseError(f"cannot open {path}: {_first_line(text)}")


def damage_error(exc: BaseException | None, path: str | Path | None = None) -> DamagedDatabaseError | None:
    """A DamagedDatabaseError for a DuckDB error that means a damaged file (a block missing or
    failing its checksum), else None. `path` names the DB when the error does not."""
    if not isinstance(exc, duckdb.Error):
        return None
    text = str(exc)
    lowered = text.lower()
    if not any(marker in lowered for marker in _DAMAGE_MARKERS):
        return None
    if "newer version" in lowered or "storage version" in lowered:
        return None
    quoted = _QUOTED_FILE.search(text)
    where = path if path is not None else (quoted.group(1) if quoted else "a DB file")
    newer = (
        f" (or it was written by a newer DuckDB than this one, {duckdb.__version__}: then upgrade duckdb)"
        if "serialization" in lowered
        else ""
    )
    return DamagedDatabaseError(f"{where} is damaged{newer}: DuckDB found {_first_line(text)!r}. {RECOVER}")


def storage_cause(exc: BaseException) -> int | None:
    """The errno of a storage fault behind `exc` (an OSError, or a DuckDB error whose text ends
    with the OS's words for it, on `exc` or the errors it was raised from), else None."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, OSError) and current.errno in STORAGE_ERRNOS:
            return current.errno
        if isinstance(current, duckdb.Error):
            text = str(current)
            for code in STORAGE_ERRNOS:
                if os.strerror(code) in text:
                    return code
        current = current.__cause__ or current.__context__
    return None


STORED_BEFORE = "Runs stored before are intact; this write was not stored."


def storage_error(path: str | Path, exc: BaseException, *, note: str = STORED_BEFORE) -> StorageError | None:
    """A one-line StorageError for a storage fault behind `exc` (see storage_cause): the cause,
    the file that could not be written (as the OS or DuckDB named it, else `path`), what to do,
    and `note`; None when `exc` is no storage fault."""
    code = storage_cause(exc)
    if code is None:
        return None
    file = str(path)
    for current in (exc, exc.__cause__, exc.__context__):
        if isinstance(current, OSError) and current.filename:
            file = str(current.filename)
            break
        quoted = _QUOTED_FILE.search(str(current)) if isinstance(current, duckdb.Error) else None
        if quoted:
            file = quoted.group(1)
            break
    cause = os.strerror(code)
    return StorageError(f"{cause}: {file}: {STORAGE_ADVICE[code]}. {note}".rstrip(), cause=cause, path=file)


@contextmanager
def storage_errors(path: str | Path) -> Iterator[None]:
    """Turn a DuckDB error or OSError caused by a storage fault (or a damaged block met on the
    way) into one StorageError / DamagedDatabaseError; anything else passes through as it is."""
    try:
        yield
    except (duckdb.Error, OSError) as exc:
        translated = storage_error(path, exc) or damage_error(exc, path)
        if translated is None:
            raise
        raise translated from exc


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0] if text.strip() else text


# DuckDB 2 keeps a result "unfinished" until a fetch returns no rows, and then refuses
# relation-API calls (con.sql) on that connection; fetchall() always finishes it.
def first_row(con: duckdb.DuckDBPyConnection, sql: str, params: list | None = None) -> tuple | None:
    rows = con.execute(sql, params or []).fetchall()
    return rows[0] if rows else None


def scalar(con: duckdb.DuckDBPyConnection, sql: str, params: list | None = None):
    row = first_row(con, sql, params)
    return row[0] if row else None
