"""Damage in a lake's export folder, found where it is cheap and said in one line.

edgestats reads an export folder through its manifest (lake.py), so the manifest and the files it
lists are checked at three depths:

- when the lake is opened, by every command that reads it (`read_lake_manifest`,
  `check_lake_files`): the manifest parses and lists files as an export lists them; each listed
  file exists, has the size the manifest lists (manifests written before edgestats listed sizes:
  not checked), begins and ends with Parquet's magic bytes PAR1, and names a footer no longer
  than itself. A stat and 12 bytes read per file: a file deleted, emptied or cut short is named
  before DuckDB reads anything.
- when DuckDB meets damage later, a footer that does not parse or a page that does not decode
  (`lake_read_error`): the file its message names, or (for messages that name none, such as
  Thrift's "Variable-length int over 10 bytes") the lake's files one by one, footers first, then
  read whole, until the damaged one is found.
- on demand, for `edgestats verify` (`folder_problems`, through lake.lake_problems): all of the
  above for every file, each read whole with its rows counted, and its SHA-256 against the
  manifest's.

A flipped byte inside a value that DuckDB decodes without complaint (Parquet pages as DuckDB
writes them carry no checksum) shows only in the file's SHA-256: `edgestats verify` checks it,
and so does every command that opens the lake, once per version of each file (lake_digests.py).

Every message names the file and says what to do: copy the folder again, or export the DBs again.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb

from edgestats.errors import DamagedDatabaseError, DatabaseError
from edgestats.store.database import damage_error

# The manifest of an export folder: what `export` writes (exports/parquet.py) and a lake is read
# through (here and lake.py).
MANIFEST_NAME = "_edgestats_export.json"
MANIFEST_FORMAT = "edgestats-parquet-export"
MANIFEST_FORMAT_VERSION = 1

MAGIC = b"PAR1"
# A Parquet file: PAR1, the pages, the footer, the footer's length (4 bytes, little-endian), PAR1.
SMALLEST_FILE_BYTES = 2 * len(MAGIC) + 4
RECOVER_LAKE = (
    "copy the folder again from where it was made, or export the DBs again into a new folder "
    "(`edgestats export DB --parquet NEW`, then `edgestats export DB2 --parquet NEW --append` for each "
    "further DB)"
)
# How DuckDB words a Parquet file it cannot read (its Thrift footer reader's words included),
# for the messages that do not name the file.
_PARQUET_DAMAGE = (
    "parquet",
    "magic bytes",
    "tprotocolexception",
    "variable-length int",
    "don't know what type",
    "invalid ttype",
    "out of buffer",
    "decode bit width",
    "decompression",
    "could not read enough bytes",
    "invalid unicode",
    "corrupt",
)

# The kinds of DuckDB error a damaged file raises (its Thrift reader's raise the base duckdb.Error).
_READ_ERRORS = (duckdb.InvalidInputException, duckdb.IOException, duckdb.SerializationException)


@dataclass(frozen=True)
class LakeFile:
    """One Parquet file the manifest lists, with what the manifest says of it."""

    table: str
    path: Path
    rows: int
    size_bytes: int | None  # None: a manifest from before edgestats listed sizes
    sha256: str | None


# -- the manifest ----------------------------------------------------------------------------------


def read_lake_manifest(root: Path) -> dict[str, Any]:
    """The manifest of the export folder `root`, or one line saying why there is none to read."""
    path = root / MANIFEST_NAME
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise DatabaseError(_no_manifest(root)) from None
    except UnicodeDecodeError as exc:
        problem = f"is not text (byte {exc.start} is not UTF-8)"
    except json.JSONDecodeError as exc:
        problem = f"is not whole JSON (cut short?): {exc.msg} (line {exc.lineno}, column {exc.colno})"
    except OSError as exc:
        raise DatabaseError(f"cannot read {path}: {exc.strerror or exc}; check its permissions") from None
    else:
        problem = _shape_problem(manifest, root)
        if problem is None:
            return manifest
    raise DamagedDatabaseError(
        f"{path} {problem}. edgestats reads the lake {root} through it, so none of it can be read: "
        f"{RECOVER_LAKE}."
    )


def _no_manifest(root: Path) -> str:
    said = f"{root} holds no edgestats export ({MANIFEST_NAME} is missing)"
    if any(root.glob("*.duckdb")):
        return f"{said}; for the DBs in it, give a quoted glob: '{root}/*.duckdb'"
    if any(root.glob("*/**/*.parquet")):
        return (
            f"{said}: its manifest was deleted or not copied with it, and a lake is read through it; "
            f"{RECOVER_LAKE}"
        )
    return (
        f"{said}; give a results DB, an export folder (edgestats export DB --parquet DIR) or a quoted glob "
        "of DBs"
    )


def _shape_problem(manifest: object, root: Path) -> str | None:
    """What is wrong with a parsed manifest's shape (an export wrote none of it), or None."""
    if not isinstance(manifest, dict) or manifest.get("format") != MANIFEST_FORMAT:
        return f"is not an edgestats export manifest (its format is not {MANIFEST_FORMAT!r})"
    tables = manifest.get("tables")
    if not isinstance(tables, dict) or not all(isinstance(e, dict) for e in tables.values()):
        return "lists no tables as an export lists them"
    for table, entry in tables.items():
        files = entry.get("files", [])
        if not isinstance(files, list) or not all(
            isinstance(f, dict) and isinstance(f.get("path"), str) and isinstance(f.get("rows"), int)
            for f in files
        ):
            return f"does not list the files of table {table} as an export lists them (path, rows)"
        for f in files:
            if not (root / f["path"]).resolve().is_relative_to(root.resolve()):
                return f"lists {f['path']!r}, outside the folder: it is not the manifest an export wrote"
    return None


def lake_files(root: Path, manifest: dict[str, Any]) -> list[LakeFile]:
    """Every file the manifest lists, table by table."""
    return [
        LakeFile(table, root / f["path"], f["rows"], f.get("bytes"), f.get("sha256"))
        for table, entry in sorted(manifest["tables"].items())
        for f in entry.get("files", [])
    ]


# -- one file ----------------------------------------------------------------------------------------


def cheap_problem(file: LakeFile) -> str | None:
    """What a stat and the file's first 4 and last 8 bytes show wrong with it, or None."""
    try:
        size = os.stat(file.path).st_size
        if size == 0:
            return "is empty (0 bytes)"
        if file.size_bytes is not None and size != file.size_bytes:
            listed = f"{file.size_bytes:,}"
            return f"holds {size:,} bytes where the manifest lists {listed} (cut short, or changed since)"
        if size < SMALLEST_FILE_BYTES:
            return f"holds {size} bytes, too few for a Parquet file"
        with open(file.path, "rb") as f:
            head = f.read(len(MAGIC))
            f.seek(size - 4 - len(MAGIC))
            tail = f.read(4 + len(MAGIC))
    except FileNotFoundError:
        return "is missing (deleted, or not copied with the folder)"
    except OSError as exc:
        return f"cannot be read ({exc.strerror or exc})"
    if head != MAGIC:
        return "does not begin as a Parquet file does (no PAR1)"
    if tail[4:] != MAGIC:
        return "does not end as a Parquet file does (no PAR1 footer: cut short?)"
    footer_bytes = int.from_bytes(tail[:4], "little")
    if footer_bytes > size - SMALLEST_FILE_BYTES:
        return f"names a footer of {footer_bytes:,} bytes in a file of {size:,} (cut short?)"
    return None


def footer_problem(con: duckdb.DuckDBPyConnection, file: LakeFile) -> str | None:
    """What DuckDB finds wrong with the file's footer (its row count against the manifest's), or None."""
    try:
        rows = con.execute("SELECT sum(num_rows) FROM parquet_file_metadata(?)", [str(file.path)]).fetchall()
    except duckdb.InterruptException:
        raise
    except duckdb.Error as exc:
        return f"has a footer that does not parse: DuckDB found {_said(exc, file)!r}"
    if rows[0][0] != file.rows:
        return f"holds {rows[0][0]:,} rows where the manifest lists {file.rows:,}"
    return None


def read_problem(con: duckdb.DuckDBPyConnection, file: LakeFile) -> str | None:
    """What reading every value of every column of the file finds wrong, or None."""
    try:
        con.execute(
            "SELECT count(*), bit_xor(hash(COLUMNS(*))) FROM read_parquet(?)", [str(file.path)]
        ).fetchall()
    except duckdb.InterruptException:
        raise
    except duckdb.Error as exc:
        return f"does not read whole: DuckDB found {_said(exc, file)!r}"
    return None


DIGEST_MISMATCH = "holds other bytes than the export wrote (its SHA-256 is not the manifest's): damaged since"


def file_sha256(path: Path) -> str:
    """The SHA-256 of the file's bytes, read in 1 MiB blocks (memory stays one block)."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def digest_problem(file: LakeFile) -> str | None:
    """Whether the file's bytes are still those the export wrote (its SHA-256), where listed."""
    if file.sha256 is None:
        return None
    try:
        same = file_sha256(file.path) == file.sha256
    except OSError as exc:
        return f"cannot be read ({exc.strerror or exc})"
    return None if same else DIGEST_MISMATCH


def _said(exc: duckdb.Error, file: LakeFile) -> str:
    """DuckDB's first line, the file's path (said before it) shortened to its name."""
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return text.replace(str(file.path), file.path.name)


def problem_line(root: Path, file: LakeFile, problem: str) -> str:
    return f"{file.path} (a file of table {file.table} in the lake {root}) {problem}"


# -- the lake ----------------------------------------------------------------------------------------


def check_lake_files(root: Path, manifest: dict[str, Any]) -> None:
    """Raise DamagedDatabaseError naming the first listed file that `cheap_problem` finds wrong."""
    found = [(f, p) for f in lake_files(root, manifest) if (p := cheap_problem(f)) is not None]
    if found:
        raise damaged_lake_error(root, found[0], len(found) - 1)


def damaged_lake_error(root: Path, first: tuple[LakeFile, str], n_more: int) -> DamagedDatabaseError:
    """The one line for a lake with damaged files: the first named, the others counted."""
    more = f"; {n_more} more of its files too (`edgestats verify {root}` lists them)" if n_more else ""
    return DamagedDatabaseError(f"{problem_line(root, *first)}{more}. To read the lake, {RECOVER_LAKE}.")


def folder_problems(root: Path, *, thorough: bool = True) -> list[str]:
    """One line per problem of the export folder `root`, each naming the file (none: it reads
    whole): its manifest, then every file it lists, with the checks made at open and, with
    `thorough`, its footer, every value read and its SHA-256 (lake.lake_problems)."""
    try:
        manifest = read_lake_manifest(root)
    except DatabaseError as exc:
        return [str(exc)]
    problems = []
    con = duckdb.connect()  # in memory: reads only the files named to it
    try:
        for file in lake_files(root, manifest):
            problem = cheap_problem(file)
            if problem is None and thorough:
                problem = footer_problem(con, file) or read_problem(con, file) or digest_problem(file)
            if problem is not None:
                problems.append(problem_line(root, file, problem))
    finally:
        con.close()
    return problems


def lake_read_error(exc: BaseException, spec: str | Path) -> DamagedDatabaseError | None:
    """The one line for a DuckDB error (behind `exc`) that reading the lake `spec` met in a
    damaged file, naming the file; None when `exc` is no such error (a query's own mistake)."""
    duck = _duckdb_cause(exc)
    if duck is None or not (type(duck) is duckdb.Error or isinstance(duck, _READ_ERRORS)):
        return None  # a query's own mistake (parser, binder, catalog, sandbox), or an interruption
    if not Path(str(spec)).is_dir():  # a glob of DBs: a damaged block of one of them
        return damage_error(duck, None if 'file "' in str(duck) else f"one of the DBs {spec} matches")
    root = Path(str(spec))
    try:
        files = lake_files(root, read_lake_manifest(root))
    except DamagedDatabaseError as damaged:  # the manifest itself, damaged since the lake was opened
        return damaged
    except DatabaseError:
        return None
    text = str(duck)
    named = [f for f in files if str(f.path) in text]
    if not named and not any(marker in text.lower() for marker in _PARQUET_DAMAGE):
        return None
    found = _find_damaged(named or files)
    if found is None and named:
        found = named[0], f"could not be read: DuckDB found {_said(duck, named[0])!r}"
    if found is None:
        return None
    return DamagedDatabaseError(f"{problem_line(root, *found)}. To read the lake, {RECOVER_LAKE}.")


def _find_damaged(files: list[LakeFile]) -> tuple[LakeFile, str] | None:
    """The first damaged file of `files`: the cheap checks and footers of all first, then each read."""
    con = duckdb.connect()
    try:
        for check in (lambda f: cheap_problem(f) or footer_problem(con, f), lambda f: read_problem(con, f)):
            for file in files:
                problem = check(file)
                if problem is not None:
                    return file, problem
    finally:
        con.close()
    return None


def _duckdb_cause(exc: BaseException) -> duckdb.Error | None:
    """`exc` when it is a DuckDB error, else the DuckDB error it was raised from (a QueryError's)."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, duckdb.Error):
            return current
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return None
