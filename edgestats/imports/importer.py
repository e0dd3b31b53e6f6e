"""`edgestats import`: results made elsewhere (CSV or Parquet, one row per run) into the store.

Everything is checked before anything is written: a wrong file is an error that names the row
and column, and the DB is left as it was. Run ids are derived from the file's content, the row
number and the import's --map/--device/--long, so importing the same file again adds nothing
(identity.py). Reading: read.py; checks and notes: checks.py; the rows as the runs and
run_results tables: tables.py; the typed view of the extra columns: edgestats/store/run_extra.py.

The file is read by DuckDB with every column as text (so an error can quote the value exactly
as written) into a staging DB of the import's own (a temporary file under $TMPDIR, about the
size of the file), checked and converted in SQL there, and copied into the store by DuckDB in one
transaction. No row passes through Python, and DuckDB works under a memory_limit, so an import's
memory does not grow with the file (but for the store's primary-key indexes: identity.py).
"""

from __future__ import annotations

import hashlib
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb

import edgestats.interrupts as interrupts
from edgestats.contracts import normalise
from edgestats.errors import ImportFileError
from edgestats.imports.checks import (
    SourceColumn,
    check_measured,
    check_name_option,
    check_values,
    fractional_epochs,
    measure_hints,
    numeric_expr,
    sql_str,
    unset_threads,
)
from edgestats.imports.columns import CANONICAL, UnitMismatch, resolve
from edgestats.imports.identity import describe_identity, import_identity, write_import
from edgestats.imports.native import FORMAT_EMPTY_RUNS, FORMAT_KINDS, FORMATS, read_native
from edgestats.imports.read import check_text_file, pivot_long, read_as_text
from edgestats.imports.tables import DIGEST, StagedRuns, digest_sql, run_id_sql, stage_runs
from edgestats.store.database import first_row, limit_memory, memory_limit_bytes
from edgestats.store.results import quote_ident
from edgestats.store.userpaths import check_file

__all__ = ["ImportReport", "check_text_file", "describe_identity", "import_results", "parse_mappings"]

KINDS = ("inference", "training", "generation")


@dataclass
class ImportReport:
    file: Path
    rows: int
    runs_added: int
    runs_already_present: int
    devices: list[str]
    columns: dict[str, str]  # source column -> canonical name (with unit conversion noted)
    extra_columns: list[str]
    diverged_rows: list[int] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # what the import decided that the user should know
    runs_replaced: int = 0  # runs of an earlier import of this file that --replace took away
    extra_view: dict[str, str] = field(default_factory=dict)  # extra column -> 'its column in run_extra TYPE'


def parse_mappings(mappings: list[str]) -> dict[str, str]:
    """`--map SRC=DST` pairs; SRC is a column of the file as written, DST a column name."""
    result = {}
    for item in mappings:
        if "=" not in item:
            raise ImportFileError(f"--map {item!r}: expected SRC=DST, e.g. --map 'Train (s)=training_time_s'")
        src, dst = item.rsplit("=", 1)
        if not src.strip() or not dst.strip():
            raise ImportFileError(f"--map {item!r}: both SRC and DST must be non-empty")
        result[src.strip()] = dst.strip()
    return result


def _plan_columns(path: Path, columns: list[str], mappings: dict[str, str]) -> list[SourceColumn]:
    missing = [src for src in mappings if src not in columns]
    if missing:
        raise ImportFileError(
            f"{path}: --map names column(s) {missing} that the file does not have; its columns are {columns}"
        )
    plan, seen = [], {}
    for original in columns:
        target_name = normalise(mappings.get(original, original))
        try:
            match = resolve(target_name)
        except UnitMismatch as exc:
            raise ImportFileError(f"{path}: {exc}") from None
        if match is None and original in mappings:
            # a --map is a request to import the column as something: never drop it into extra
            raise ImportFileError(
                f"{path}: --map '{original}={mappings[original]}': {mappings[original]!r} is not a column "
                f"edgestats imports; use one of {', '.join(sorted(CANONICAL))} (a measure may carry another "
                "unit of its kind, e.g. latency_us, training_time_min); nothing was imported"
            )
        column = SourceColumn(original)
        if match:
            column.canonical, column.factor = match
            if column.canonical.name in seen:
                raise ImportFileError(
                    f"{path}: columns {seen[column.canonical.name]!r} and {original!r} both give "
                    f"{column.canonical.name}; drop one or rename it with --map"
                )
            seen[column.canonical.name] = original
        plan.append(column)
    if not any(c.canonical for c in plan):
        names = ", ".join(sorted(CANONICAL))
        raise ImportFileError(
            f"{path}: none of its columns {columns} is one edgestats knows. Rename them with "
            f"--map SRC=DST; known columns: {names}"
        )
    return plan


def _convert(
    con: duckdb.DuckDBPyConnection, plan: list[SourceColumn], file_hash: str, identity: dict
) -> None:
    """Table `converted`: the canonical columns converted, the extras as JSON, NaN flags and each
    row's run id, in the file's row order."""
    selects, nan_checks = ["_row", f"{run_id_sql()} AS _run_id"], []
    for column in plan:
        spec = column.canonical
        if spec is None:
            continue
        if spec.type in ("int", "float"):
            number = numeric_expr(column.original)
            value = f"CASE WHEN isfinite({number}) THEN {number} * {column.factor} END"
            if spec.type == "int":
                value = f"CAST({value} AS BIGINT)"
            name = sql_str(column.original)
            nan_checks.append(f"CASE WHEN {number} IS NOT NULL AND NOT isfinite({number}) THEN {name} END")
            selects.append(f"{value} AS {quote_ident(spec.name)}")
        else:
            text = f"NULLIF(trim({quote_ident(column.original)}), '')"
            if spec.name in ("status", "kind"):
                text = f"lower({text})"
            selects.append(f"{text} AS {quote_ident(spec.name)}")
    extras = [c.original for c in plan if c.canonical is None]
    if extras:
        pairs = ", ".join(f"{sql_str(c)}, NULLIF(trim({quote_ident(c)}), '')" for c in extras)
        selects.append(f"CAST(json_object({pairs}) AS VARCHAR) AS _extra")
    nan_list = (
        f"list_filter([{', '.join(nan_checks)}], lambda x: x IS NOT NULL)" if nan_checks else "[]::VARCHAR[]"
    )
    selects.append(f"{nan_list} AS _nan_columns")
    con.execute(
        f"CREATE TABLE converted AS SELECT {', '.join(selects)} FROM "
        f"(SELECT *, {digest_sql(file_hash, identity)} AS {DIGEST} FROM staged)"
    )


# The staging DB's memory_limit: beyond it DuckDB writes blocks out (to its file, or to scratch
# files in the import's temporary folder), so an import's memory does not grow with the file.
STAGING_MEMORY_BYTES = 128 * 2**20
# A file larger than this is staged in a DuckDB file (compressed on disk, about the size of the
# file) in the import's temporary folder under $TMPDIR; a smaller one in memory, writing nothing.
STAGE_ON_DISK_BYTES = 16 * 2**20


@contextmanager
def _staging(path: Path) -> Iterator[duckdb.DuckDBPyConnection]:
    """The import's own DuckDB, for the file's rows while they are read, checked, converted and
    copied into the store; with its temporary folder, removed after."""
    with tempfile.TemporaryDirectory(prefix="edgestats-import-") as folder:
        on_disk = path.stat().st_size > STAGE_ON_DISK_BYTES
        con = duckdb.connect(str(Path(folder) / "staging.duckdb") if on_disk else ":memory:")
        interrupts.track(con)  # a signal stops its statement
        try:
            limit_memory(con, min(memory_limit_bytes(), STAGING_MEMORY_BYTES))
            con.execute(f"SET temp_directory = {sql_str(folder)}")
            with suppress(duckdb.Error):  # Jupyter's client refuses the setting without ipywidgets
                con.execute("SET enable_progress_bar = false")
            yield con
        finally:
            con.close()


def _stage(
    staging: duckdb.DuckDBPyConnection,
    path: Path,
    maps: dict[str, str],
    *,
    kind: str,
    long: bool,
    notes: list[str],
    **run: Any,
) -> tuple[list[SourceColumn], StagedRuns]:
    """Read, plan, check and convert the file in the staging DB, before the DB is opened: the
    column plan and the staged runs (tables.py). `run`: fmt (a benchmark tool's output:
    native.py), file_hash, identity and device."""
    fmt = run.pop("fmt")
    columns = read_native(staging, path, fmt) if fmt else read_as_text(staging, path)
    column_maps = maps
    if long:
        columns, column_maps = pivot_long(staging, path, columns, maps)
    plan = _plan_columns(path, columns, column_maps)
    fractional_epochs(staging, path, plan, notes)
    unset_threads(staging, plan, notes)
    check_values(staging, path, plan, kind)
    hints = measure_hints(staging, plan)
    _convert(staging, plan, run["file_hash"], run["identity"])
    if not first_row(staging, "SELECT 1 FROM converted LIMIT 1"):
        raise ImportFileError(f"{path}: the file has a header but no rows; nothing to import")
    check_measured(path, plan, staging, hints, notes, long, FORMAT_EMPTY_RUNS.get(fmt))
    staged = stage_runs(staging, plan, kind=kind, path=path, **run)
    for table in ("converted", "staged"):  # only new_runs and new_results are written (identity.py)
        staging.execute(f"DROP TABLE IF EXISTS {table}")
    return plan, staged


def import_results(
    db_path: str | Path,
    file: str | Path,
    *,
    kind: str | None,
    mappings: list[str] | None = None,
    device: str | None = None,
    replace: bool = False,
    long: bool = False,
    fmt: str | None = None,
) -> ImportReport:
    """Import one results file; returns what was added. Raises ImportFileError on a wrong file.

    `replace`: take away the runs of an earlier import of this file (same content, or same file
    name) before adding these; without it, a file imported before with another --map or
    --device is refused (its runs would stand beside these, counted twice). `long`: the file is
    a long-format table (see pivot_long). `fmt`: the file is the output of a benchmark tool
    (benchmark_model, benchmark_app, perf_test, mlperf: one inference run; llama-bench: generation
    runs; native.py)."""
    path = Path(file)
    kind = _checked_kind(kind, long=long, fmt=fmt)
    check_name_option("--device", device)
    check_file(path, ImportFileError, advice="give the path of a results file")  # a FIFO: never opened
    maps = parse_mappings(mappings or [])
    digest = hashlib.sha256()  # hashlib.file_digest would do this from Python 3.11
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    file_hash = digest.hexdigest()
    identity = import_identity(maps, device, long, fmt)

    notes: list[str] = []
    run = {"file_hash": file_hash, "identity": identity}
    with _staging(path) as staging:
        plan, staged = _stage(
            staging, path, maps, kind=kind, long=long, notes=notes, fmt=fmt, device=device, **run
        )
        present, replaced, extra_view = _write_or_leave_nothing(
            db_path, staging, staged.devices, path, replace=replace, notes=notes, **run
        )
    extras = [c.original for c in plan if c.canonical is None]
    return ImportReport(
        file=path,
        rows=staged.rows,
        runs_added=staged.rows - present,
        runs_already_present=present,
        devices=staged.devices,
        columns=_columns_read(plan),
        extra_columns=extras,
        diverged_rows=staged.diverged,
        notes=notes,
        runs_replaced=replaced,
        extra_view={c.key: f"{c.column} {c.type}" for c in extra_view if c.key in set(extras)},
    )


def _columns_read(plan: list[SourceColumn]) -> dict[str, str]:
    """Source column -> the canonical name it was read as, with its unit conversion noted."""
    return {
        c.original: c.canonical.name + (f" (×{c.factor:g})" if c.factor != 1 else "")
        for c in plan
        if c.canonical
    }


def _checked_kind(kind: str | None, *, long: bool, fmt: str | None) -> str:
    """--kind, checked against --format and --long; a benchmark tool's output is the kind of run
    the tool measures (inference; llama-bench: generation)."""
    if fmt is not None and fmt not in FORMATS:
        raise ImportFileError(
            f"--format {fmt!r}: use one of {', '.join(FORMATS)} (or no --format for CSV/TSV/Parquet)"
        )
    tool_kind = FORMAT_KINDS.get(fmt, "inference") if fmt else None
    if fmt is not None and (long or kind not in (None, tool_kind)):
        runs = "one inference run" if tool_kind == "inference" else f"{tool_kind} runs"
        raise ImportFileError(f"--format {fmt}: a benchmark tool's output is {runs}; drop --long and --kind")
    kind = tool_kind or kind
    if kind is None:
        raise ImportFileError("--kind is missing: say what the rows are, inference, training or generation")
    if kind not in KINDS:
        raise ImportFileError(f"--kind {kind!r}: use one of {', '.join(KINDS)}")
    return kind


def _write_or_leave_nothing(db_path: str | Path, *args, **kwargs):
    """write_import into `db_path`; when it fails, a DB this import created is taken away again."""
    created = not Path(db_path).exists()
    try:
        return write_import(Path(db_path), *args, **kwargs)
    except BaseException:
        if created:  # the DB this import created holds nothing: take it away again
            for leftover in (Path(db_path), Path(f"{db_path}.wal")):
                leftover.unlink(missing_ok=True)
        raise
