"""`edgestats verify`: read a whole results DB (or lake) on demand, and mark a file found damaged.
The mark is kept beside the file, so that `collect` and `import` do not append to it.

Why a command: DuckDB checks a block's checksum only when it reads the block, and opening a file
reads its catalog only (docs/schema.md, "damaged files"); appending a run reads no old block, so
a flipped data block can sit in a file that collect keeps appending to. verify reads everything:

- every column of every table, through DuckDB (`bit_xor(hash(COLUMNS(*)))` reads each value and
  each validity mask, so every data block is read and its checksum checked; DuckDB's own words
  name a failing one);
- every other block of the file (the primary keys' indexes, the catalog, free space) that no
  table scan reads: its checksum is computed here as DuckDB computes it, the way first checked
  on blocks DuckDB has just read, so a file this edgestats cannot follow is said, not misjudged;
- the file's length against its block count (`check_intact`, the thorough check of a write).

Lakes (an export folder, a glob of DBs) are checked by edgestats/store/lake_verify.py, which
knows their layout and uses this module for each DB.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path

import duckdb

from edgestats.errors import DamagedDatabaseError, DatabaseError
from edgestats.store.database import FILE_HEADER_BYTES, RECOVER, check_intact, connect
from edgestats.store.migrations import current_version
from edgestats.store.results import quote_ident

# DuckDB's block checksum (src/common/checksum.cpp): each 8-byte word of the block after its
# 8-byte checksum field is multiplied by this constant, the products are XORed, then 5381.
CHECKSUM_MULTIPLIER = 0xBF58476D1CE4E5B9
CHECKSUM_SEED = 5381
CHECKSUM_BYTES = 8
CALIBRATION_BLOCKS = 4  # blocks DuckDB read whole that the checksum here must agree with first


@dataclass
class Finding:
    """One part of a file (a table, the file's length, its other blocks, a lake's file)."""

    name: str
    ok: bool
    detail: str  # what was read ("1,234 rows"), or what is wrong, in one line


@dataclass
class Verification:
    """What `verify` found in one DB file or export folder."""

    path: Path
    kind: str  # "db" or "lake"
    findings: list[Finding] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    recovery: list[str] = field(default_factory=list)
    mark: str = ""  # what was done with the damage mark beside the file

    @property
    def whole(self) -> bool:
        return all(f.ok for f in self.findings)

    def as_dict(self) -> dict:
        return {
            "path": str(self.path),
            "kind": self.kind,
            "whole": self.whole,
            "findings": [vars(f) for f in self.findings],
            "notes": self.notes,
            "recovery": self.recovery,
            "mark": self.mark,
        }


def verify_db(path: Path) -> Verification:
    """Every table, every other block and the length of the DB file `path`."""
    report = Verification(path, "db")
    try:
        con = connect(path, read_only=True)
    except DamagedDatabaseError as exc:
        report.findings.append(Finding("file", False, f"cannot be opened: {_damage_words(exc)}"))
        report.recovery = db_recovery(report, path)
        return report
    try:
        if current_version(con, str(path))[0] == 0:  # a DuckDB file edgestats did not make: not "whole"
            raise DatabaseError(
                f"{path} is a DuckDB file with no tables, not an edgestats results DB; verify checks "
                "results DBs and export folders."
            )
        try:
            check_intact(con, path, thorough=True)
        except DamagedDatabaseError as exc:
            report.findings.append(Finding("file length", False, _damage_words(exc)))
        tables = con.execute(
            "SELECT schema_name, table_name FROM duckdb_tables() "
            "WHERE database_name = current_database() AND NOT temporary ORDER BY schema_name, table_name"
        ).fetchall()
        con = _scan_tables(con, path, tables, report)
        _check_other_blocks(con, path, tables, report)
    finally:
        con.close()
    report.recovery = db_recovery(report, path)
    return report


def _table_name(schema: str, table: str) -> str:
    return table if schema == "main" else f"{schema}.{table}"


def _scan_tables(
    con: duckdb.DuckDBPyConnection, path: Path, tables: list[tuple[str, str]], report: Verification
) -> duckdb.DuckDBPyConnection:
    """Read every value of every table (a finding each); returns the connection to go on with,
    a fresh one after a failure (a damaged block can leave DuckDB's connection unusable)."""
    try:
        for schema, table in tables:
            con = _scan_table(con, path, schema, table, report)
    except BaseException:
        con.close()
        raise
    return con


def _scan_table(
    con: duckdb.DuckDBPyConnection, path: Path, schema: str, table: str, report: Verification
) -> duckdb.DuckDBPyConnection:
    """Read every value of one table: each value and validity mask, so each of its data blocks."""
    name = f"{quote_ident(schema)}.{quote_ident(table)}"
    try:
        rows = con.execute(f"SELECT count(*), bit_xor(hash(COLUMNS(*))) FROM {name}").fetchall()[0][0]
    except duckdb.InterruptException:
        raise
    except duckdb.OutOfMemoryException as exc:  # this machine's limit, not the file's damage
        raise DatabaseError(
            f"{path}: reading table {table} ran out of memory ({_first_line(str(exc))}); free some memory "
            "and run verify again"
        ) from exc
    except duckdb.Error as exc:  # any other error reading a table: its rows cannot be read from here
        report.findings.append(Finding(_table_name(schema, table), False, _first_line(str(exc))))
        con.close()
        return connect(path, read_only=True)
    report.findings.append(Finding(_table_name(schema, table), True, rows_text(rows)))
    return con


def _check_other_blocks(
    con: duckdb.DuckDBPyConnection, path: Path, tables: list[tuple[str, str]], report: Verification
) -> None:
    """The checksum of every block no table scan read (indexes, catalog, free space)."""
    ok_tables = {f.name for f in report.findings if f.ok}
    try:
        block_size, total_blocks = con.execute(
            "SELECT block_size, total_blocks FROM pragma_database_size() "
            "WHERE database_name = current_database()"
        ).fetchall()[0]
        read_by_duckdb, calibration = _table_blocks(con, tables, ok_tables)
        if not calibration:  # no table's data read whole: the catalog's blocks, read at open
            calibration = {
                b for (b,) in con.execute("SELECT block_id FROM pragma_metadata_info()").fetchall()
            }
    except duckdb.Error as exc:
        report.notes.append(f"blocks outside the tables were not checked: {_first_line(str(exc))}")
        return
    others = [b for b in range(total_blocks) if b not in read_by_duckdb]
    bad, checked, agrees = _checksums(path, block_size, others, sorted(calibration)[:CALIBRATION_BLOCKS])
    if not agrees:
        report.notes.append(
            "blocks outside the tables (indexes, catalog) were not checked: their checksums do not follow "
            "DuckDB's as edgestats computes them (an encrypted file, or a newer DuckDB's format)"
        )
    elif bad:
        report.findings.append(
            Finding(
                "other blocks",
                False,
                f"block {bad[0]} of {block_size} bytes fails its checksum; it holds no table's rows (a "
                "primary key's index, the catalog, or free space)"
                if len(bad) == 1
                else f"blocks {', '.join(map(str, bad))} of {block_size} bytes fail their checksums; they "
                "hold no table's rows (a primary key's index, the catalog, or free space)",
            )
        )
    else:
        report.findings.append(
            Finding("other blocks", True, f"{checked:,} checked (indexes, catalog, free space)")
        )


def _table_blocks(
    con: duckdb.DuckDBPyConnection, tables: list[tuple[str, str]], ok_tables: set[str]
) -> tuple[set[int], set[int]]:
    """(the blocks holding any table's data, those of the tables DuckDB just read whole)."""
    every: set[int] = set()
    read_whole: set[int] = set()
    for schema, table in tables:
        blocks = {
            b
            for (b,) in con.execute(
                "SELECT DISTINCT block_id FROM pragma_storage_info(?) WHERE block_id >= 0",
                [f"{quote_ident(schema)}.{quote_ident(table)}"],
            ).fetchall()
        }
        every |= blocks
        if _table_name(schema, table) in ok_tables:
            read_whole |= blocks
    return every, read_whole


def _checksums(
    path: Path, block_size: int, blocks: list[int], calibration: list[int]
) -> tuple[list[int], int, bool]:
    """(blocks whose checksum fails, blocks checked, whether the calibration blocks agree). A block
    past the end (reported by the length check) or all zeros (never written, or space the file
    system gave back) is not checked."""
    zeros = bytes(block_size)
    bad, checked = [], 0
    with open(path, "rb") as f:
        for block in calibration:
            f.seek(FILE_HEADER_BYTES + block * block_size)
            data = f.read(block_size)
            if len(data) == block_size and not checksum_matches(data):
                return [], 0, False
        for block in blocks:
            f.seek(FILE_HEADER_BYTES + block * block_size)
            data = f.read(block_size)
            if len(data) < block_size or data == zeros:
                continue
            checked += 1
            if not checksum_matches(data):
                bad.append(block)
    return bad, checked, True


def checksum_matches(block: bytes) -> bool:
    """Whether a block's first 8 bytes hold DuckDB's checksum of the rest (a little-endian file,
    as DuckDB writes on every platform it runs on)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    payload = memoryview(block)[CHECKSUM_BYTES:]
    n_words = len(payload) // 8
    words = pa.Array.from_buffers(pa.uint64(), n_words, [None, pa.py_buffer(payload)])
    mixed = pc.multiply(words, pa.scalar(CHECKSUM_MULTIPLIER, pa.uint64()))  # wraps, as C++ does
    result = CHECKSUM_SEED
    while len(mixed) > 1:  # XOR-reduce by halves: 15 vector steps for a 256 KiB block
        if len(mixed) % 2:
            result ^= mixed[len(mixed) - 1].as_py()
            mixed = mixed.slice(0, len(mixed) - 1)
        half = len(mixed) // 2
        mixed = pc.bit_wise_xor(mixed.slice(0, half), mixed.slice(half))
    if len(mixed):
        result ^= mixed[0].as_py()
    return len(payload) % 8 == 0 and result == int.from_bytes(block[:CHECKSUM_BYTES], "little")


def db_recovery(report: Verification, path: Path) -> list[str]:
    """What to do about a damaged DB, and what of it survives."""
    if report.whole:
        return []
    bad = [f.name for f in report.findings if not f.ok]
    copy = (
        "Copy the DB again from the device (its copy there is intact) or restore it from a backup, and "
        "check the copy: `edgestats verify COPY.duckdb`."
    )
    if bad == ["other blocks"]:
        return [
            f"Every table's rows read whole: `edgestats merge NEW.duckdb {path}` copies them into a new file "
            "(its indexes built afresh); use NEW.duckdb from then on.",
            copy,
        ]
    if "file" in bad:
        return [copy, "Nothing can be read from this file."]
    readable = [f.name for f in report.findings if f.ok and f.name not in ("other blocks", "file length")]
    survives = (
        f"Until then, what survives is the tables marked ok ({', '.join(readable)}): e.g. `edgestats sql "
        f'{path} "SELECT * FROM runs" --format csv`. The rows of {", ".join(bad)} cannot be read from this '
        "file; `merge` and `export` stop there."
        if readable
        else "No table can be read whole from this file."
    )
    return [copy, survives]


# -- the damage mark -------------------------------------------------------------------------------


def mark_path(db: str | Path) -> Path:
    """Where the mark of a damaged DB lives: a hidden file beside it, `.NAME.damaged`."""
    db = Path(db)
    return db.with_name(f".{db.name}.damaged")


def read_mark(db: str | Path) -> dict | None:
    """The mark of `db` (when, by what, what was found), or None when it has none."""
    try:
        mark = json.loads(mark_path(db).read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError):  # a mark cut short is still a mark
        return {"found_by": "an earlier command", "found_at": "?", "problems": ["(the mark is unreadable)"]}
    return mark if isinstance(mark, dict) else {"found_by": "?", "found_at": "?", "problems": []}


def write_mark(db: str | Path, problems: list[str], found_by: str) -> Path:
    """Record `db` as damaged (atomically: a reader sees the whole mark or none)."""
    import datetime as dt

    mark = mark_path(db)
    body = {
        "file": str(Path(db).resolve()),
        "found_at": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "found_by": found_by,
        "problems": problems,
    }
    new = mark.with_name(f"{mark.name}.{os.getpid()}.new")
    try:
        new.write_text(json.dumps(body, indent=2) + "\n", encoding="utf-8")
        os.replace(new, mark)
    finally:
        new.unlink(missing_ok=True)
    return mark


def update_mark(report: Verification) -> None:
    """Mark a damaged DB, unmark a whole one; a folder that cannot be written is said, not fatal."""
    mark = mark_path(report.path)
    try:
        if not report.whole:
            problems = [f"{f.name}: {f.detail}" for f in report.findings if not f.ok]
            write_mark(report.path, problems, "edgestats verify")
            report.mark = (
                f"marked damaged ({mark}): collect and import refuse to append to it (--force aside)"
            )
        elif mark.exists():
            mark.unlink()
            report.mark = f"found whole: its damage mark ({mark}) is removed"
    except OSError as exc:
        report.mark = f"the damage mark {mark} could not be written or removed: {exc.strerror or exc}"


def note_damage_met(db: str | Path, message: str) -> None:
    """Mark `db` as damaged after a command met damage in it (best effort: reading it goes on
    failing with its own message whether or not the mark can be written)."""
    path = Path(db)
    if not path.is_file() or str(db) not in message or "newer DuckDB" in message or read_mark(path):
        return  # a glob, another file's damage, or a file an upgrade of DuckDB reads: no mark
    try:
        write_mark(path, [message.replace(f" {RECOVER}", "")], "an edgestats command that read it")
    except OSError:
        pass


def refuse_known_damaged(db: str | Path, command: str) -> None:
    """Raise DamagedDatabaseError when `db` carries a damage mark: `command` (collect, import)
    must not append to it (its --force does)."""
    mark = read_mark(db)
    if mark is None:
        return
    found = "; ".join(str(p) for p in mark.get("problems") or []) or "no detail recorded"
    raise DamagedDatabaseError(
        f"{db} is damaged: {mark.get('found_by', '?')} found it on {mark.get('found_at', '?')} ({found}), so "
        f"{command} will not append to it: copy the DB again from the device (its copy there is intact) or "
        "restore it from a backup, and merge or export from that copy (`edgestats merge NEW.duckdb "
        f"COPY.duckdb`); `edgestats verify {db}` checks it again and removes the mark if it is whole; "
        f"`{command} --force` appends anyway."
    )


def _damage_words(exc: BaseException) -> str:
    """DuckDB's own words for a damage (the error it was raised from), else edgestats' finding."""
    cause = exc.__cause__
    if isinstance(cause, duckdb.Error):
        return _first_line(str(cause))
    return str(exc).replace(f" {RECOVER}", "").split(" is damaged: ", 1)[-1]


def rows_text(n: int) -> str:
    return f"{n:,} row" if n == 1 else f"{n:,} rows"


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0] if text.strip() else text
