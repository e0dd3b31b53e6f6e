"""`edgestats import`: results made elsewhere (CSV or Parquet, one row per run) into the store.

Everything is checked before anything is written: a wrong file is an error that names the row
and column, and the DB is left as it was. Run ids are derived from the file's content and the
row number, so importing the same file again adds nothing.

The file is read by DuckDB with every column as text (so an error can quote the value exactly
as written), checked and converted in SQL, and written with Arrow bulk inserts.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import re
from dataclasses import dataclass, field
from pathlib import Path

import duckdb
import pyarrow as pa

from edgestats import __version__
from edgestats.database import first_row
from edgestats.errors import ImportFileError
from edgestats.import_columns import CANONICAL, INT_MAX, Canonical, UnitMismatch, normalise, resolve
from edgestats.store import Store, name_uuid, quote_ident
from edgestats.textfiles import decode_utf8

RUN_STATUSES = ("ok", "error", "timeout", "killed", "diverged")
KINDS = ("inference", "training")
# Thousands separators as in published tables ("1,114.34"); only this unambiguous shape.
THOUSANDS = r"^[+-]?\d{1,3}(,\d{3})+(\.\d*)?$"
NONNEGATIVE_FAMILIES = ("time", "memory", "energy", "power", "pct")
TEXT_SUFFIXES = (".csv", ".tsv", ".txt")
DELIMITERS = (",", "\t", ";", "|")


@dataclass
class SourceColumn:
    """One column of the file and what it becomes."""

    original: str
    canonical: Canonical | None = None
    factor: float = 1.0


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


def _read_as_text(con: duckdb.DuckDBPyConnection, path: Path) -> list[str]:
    """Load the file into table `staged` (all VARCHAR, plus its 1-based row number `_row`)."""
    suffix = path.suffix.lower()
    if suffix in TEXT_SUFFIXES:
        delimiter = check_text_file(path)
        source = "read_csv(?, all_varchar = true, header = true, delim = ?, quote = '\"', escape = '\"')"
        params = [str(path), delimiter]
    elif suffix in (".parquet", ".pq"):
        source, params = "read_parquet(?)", [str(path)]
    else:
        raise ImportFileError(f"{path}: unknown file type {suffix!r}; import reads .csv, .tsv or .parquet")
    try:
        con.execute(f"CREATE TEMP TABLE raw AS SELECT * FROM {source}", params)
    except duckdb.Error as exc:
        first_line = next((line for line in str(exc).splitlines() if line.strip()), str(exc)).rstrip(".")
        data = path.read_bytes() if suffix in TEXT_SUFFIXES else b""
        mixed = b"\r\n" in data and re.search(rb"(?<!\r)\n", data) is not None
        hint = " (it mixes \\r\\n and \\n line endings: save it with one kind)" if mixed else ""
        raise ImportFileError(f"{path}: cannot read it as {suffix[1:]}{hint}: {first_line}; nothing was imported") from exc
    columns = [r[0] for r in con.execute("SELECT column_name FROM (DESCRIBE raw)").fetchall()]
    casts = ", ".join(f"CAST({quote_ident(c)} AS VARCHAR) AS {quote_ident(c)}" for c in columns)
    con.execute(f"CREATE TEMP TABLE staged AS SELECT row_number() OVER () AS _row, {casts} FROM raw")
    return columns


def check_text_file(path: Path) -> str:
    """The delimiter of a CSV/TSV file, after checking that it is UTF-8 text whose quotes balance.

    DuckDB's reader is lenient: with an unclosed quote it guesses another dialect and imports
    `"pi` as a device name, or drops rows. Python's csv module in strict mode finds the record
    where quoting goes wrong, so the error can name its row and line."""
    text = decode_utf8(path.read_bytes(), path, ImportFileError,
                       "save the file as UTF-8 (e.g. iconv -f latin1 -t utf-8); nothing was imported", encoding="utf-8-sig")
    header = text.split("\n", 1)[0]
    default = "\t" if path.suffix.lower() == ".tsv" else ","
    delimiter = max(DELIMITERS, key=lambda d: (header.count(d), d == default))
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter, quotechar='"', doublequote=True, strict=True)
    record, start = 0, 1  # the record being read (0: the header) and the line it starts on
    try:
        for _ in reader:
            record, start = record + 1, reader.line_num + 1
    except csv.Error as exc:
        where = "the header" if record == 0 else f"row {record}"
        raise ImportFileError(
            f"{path}: {where} (line {start}): unbalanced quote — a cell opens a quote (\") that does not close, or "
            f"text follows its closing quote ({exc}); close the quote or remove it; nothing was imported") from None
    return delimiter


def _plan_columns(path: Path, columns: list[str], mappings: dict[str, str]) -> list[SourceColumn]:
    missing = [src for src in mappings if src not in columns]
    if missing:
        raise ImportFileError(f"{path}: --map names column(s) {missing} that the file does not have; its columns are {columns}")
    plan, seen = [], {}
    for original in columns:
        target_name = normalise(mappings.get(original, original))
        try:
            match = resolve(target_name)
        except UnitMismatch as exc:
            raise ImportFileError(f"{path}: {exc}") from None
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


def _numeric_expr(column: str) -> str:
    """SQL turning a text cell into DOUBLE (NULL when empty), accepting 1,234.5 thousands."""
    c = f"trim({quote_ident(column)})"
    return f"TRY_CAST(CASE WHEN regexp_full_match({c}, '{THOUSANDS}') THEN replace({c}, ',', '') ELSE {c} END AS DOUBLE)"


def _fail_at(con: duckdb.DuckDBPyConnection, path: Path, column: SourceColumn, condition: str, what: str) -> None:
    """Raise naming the first row where `condition` holds."""
    row = first_row(con, f"SELECT _row, {quote_ident(column.original)} FROM staged WHERE {condition} ORDER BY _row LIMIT 1")
    if row:
        line = f" (line {row[0] + 1})" if path.suffix.lower() in (".csv", ".tsv", ".txt") else ""
        raise ImportFileError(f"{path}: row {row[0]}{line}, column {column.original!r}: {row[1]!r} {what}; nothing was imported")


def _check_values(con: duckdb.DuckDBPyConnection, path: Path, plan: list[SourceColumn], kind: str) -> None:
    for column in plan:
        spec = column.canonical
        if spec is None:
            continue
        raw = quote_ident(column.original)
        present = f"{raw} IS NOT NULL AND trim({raw}) <> ''"
        if spec.type in ("int", "float"):
            number = _numeric_expr(column.original)
            _fail_at(con, path, column, f"{present} AND {number} IS NULL", f"is not a number ({spec.name} is numeric)")
            finite = f"{present} AND isfinite({number})"
            if spec.type == "int":
                _fail_at(con, path, column, f"{finite} AND ({number} <> round({number}) OR {number} < 0)",
                         f"is not a whole number ≥ 0 ({spec.name} counts)")
                _fail_at(con, path, column, f"{finite} AND {number} > {INT_MAX}",
                         f"is too large ({spec.name} is stored as a 32-bit integer, at most {INT_MAX})")
            _fail_at(con, path, column, f"{finite} AND NOT isfinite({number} * {column.factor})",
                     f"is too large to store once converted to {spec.name}")
            if spec.family in NONNEGATIVE_FAMILIES:
                _fail_at(con, path, column, f"{finite} AND {number} < 0", f"is negative ({spec.name} cannot be)")
            if spec.name == "accuracy_pct":
                scaled = f"{number} * {column.factor}"
                _fail_at(con, path, column, f"{finite} AND {scaled} > 100", "is above 100 % (accuracy_pct is a percentage; for a fraction name the column accuracy_frac)")
            if spec.name == "learning_rate":
                _fail_at(con, path, column, f"{finite} AND {number} <= 0", "is not a positive learning rate")
        elif spec.name == "status":
            allowed = ", ".join(f"'{s}'" for s in RUN_STATUSES)
            _fail_at(con, path, column, f"{present} AND lower(trim({raw})) NOT IN ({allowed})", f"is not a run status (one of {', '.join(RUN_STATUSES)})")
        elif spec.name == "kind":
            _fail_at(con, path, column, f"{present} AND lower(trim({raw})) <> '{kind}'", f"disagrees with --kind {kind}")


def _select_rows(con: duckdb.DuckDBPyConnection, plan: list[SourceColumn]) -> pa.Table:
    """One Arrow table with the canonical columns converted, the extras as JSON, NaN flags."""
    selects, nan_checks = ["_row"], []
    for column in plan:
        spec = column.canonical
        if spec is None:
            continue
        if spec.type in ("int", "float"):
            number = _numeric_expr(column.original)
            value = f"CASE WHEN isfinite({number}) THEN {number} * {column.factor} END"
            if spec.type == "int":
                value = f"CAST({value} AS BIGINT)"
            nan_checks.append(f"CASE WHEN {number} IS NOT NULL AND NOT isfinite({number}) THEN '{column.original}' END")
            selects.append(f"{value} AS {quote_ident(spec.name)}")
        else:
            text = f"NULLIF(trim({quote_ident(column.original)}), '')"
            if spec.name in ("status", "kind"):
                text = f"lower({text})"
            selects.append(f"{text} AS {quote_ident(spec.name)}")
    extras = [c.original for c in plan if c.canonical is None]
    if extras:
        pairs = ", ".join(f"{_sql_str(c)}, NULLIF(trim({quote_ident(c)}), '')" for c in extras)
        selects.append(f"CAST(json_object({pairs}) AS VARCHAR) AS _extra")
    nan_list = f"list_filter([{', '.join(nan_checks)}], lambda x: x IS NOT NULL)" if nan_checks else "[]::VARCHAR[]"
    selects.append(f"{nan_list} AS _nan_columns")
    return con.sql(f"SELECT {', '.join(selects)} FROM staged ORDER BY _row").to_arrow_table()


def _sql_str(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def import_results(db_path: str | Path, file: str | Path, *, kind: str, mappings: list[str] | None = None,
                   device: str | None = None) -> ImportReport:
    """Import one results file; returns what was added. Raises ImportFileError on a wrong file."""
    path = Path(file)
    if kind not in KINDS:
        raise ImportFileError(f"--kind {kind!r}: use one of {', '.join(KINDS)}")
    if not path.is_file():
        raise ImportFileError(f"{path}: no such file")
    maps = parse_mappings(mappings or [])
    file_hash = hashlib.sha256(path.read_bytes()).hexdigest()

    staging = duckdb.connect()  # in memory: the file is checked here before the DB is opened
    try:
        columns = _read_as_text(staging, path)
        plan = _plan_columns(path, columns, maps)
        _check_values(staging, path, plan, kind)
        rows = _select_rows(staging, plan).to_pylist()
    finally:
        staging.close()
    if not rows:
        raise ImportFileError(f"{path}: the file has a header but no rows; nothing to import")

    has_device = any(c.canonical and c.canonical.name == "device" for c in plan)
    for row in rows:
        row["device"] = row.get("device") or device
        if not row["device"]:
            where = f"row {row['_row']} has an empty 'device'" if has_device else "the file has no 'device' column"
            raise ImportFileError(f"{path}: {where}; pass --device NAME (or --map a column to device); nothing was imported")

    runs, results, diverged = _build_tables(rows, plan, kind=kind, path=path, file_hash=file_hash)
    device_names = sorted({r["device"] for r in rows})
    created = not Path(db_path).exists()
    try:
        present = _write(Path(db_path), runs, results, device_names, path)
    except BaseException:
        if created:  # the DB this import created holds nothing: take it away again
            for leftover in (Path(db_path), Path(f"{db_path}.wal")):
                leftover.unlink(missing_ok=True)
        raise
    return ImportReport(
        file=path, rows=len(rows), runs_added=len(rows) - len(present), runs_already_present=len(present),
        devices=device_names,
        columns={c.original: c.canonical.name + (f" (×{c.factor:g})" if c.factor != 1 else "") for c in plan if c.canonical},
        extra_columns=[c.original for c in plan if c.canonical is None], diverged_rows=diverged,
    )


def _write(db_path: Path, runs: pa.Table, results: pa.Table, device_names: list[str], path: Path) -> set[str]:
    """Write the new runs in one transaction; the run ids already present (left as they are)."""
    with Store.open(db_path) as store:
        present = {str(r[0]) for r in store.con.execute(
            "SELECT run_id FROM runs WHERE run_id IN (SELECT unnest(?::UUID[]))", [runs["run_id"].to_pylist()]
        ).fetchall()}
        keep = pa.array([rid not in present for rid in runs["run_id"].to_pylist()])
        with store.transaction():
            for name in device_names:
                store.register_device({"name": name, "facts": {"registered_by": f"import:{path.name}"}})
            store.insert_rows("runs", runs.filter(keep))
            store.insert_rows("run_results", results.filter(keep))
    return present


def _arrow_type(column: str) -> pa.DataType:
    spec = CANONICAL.get(column)
    if spec is not None and spec.type == "int":
        return pa.int64()
    if spec is not None and spec.type == "float":
        return pa.float64()
    return pa.string()  # ids, text and JSON; DuckDB casts to UUID / JSON on insert


def _build_tables(rows: list[dict], plan: list[SourceColumn], *, kind: str, path: Path, file_hash: str):
    """The runs and run_results rows, as Arrow tables, from the checked and converted rows."""
    run_columns = [c.canonical.name for c in plan if c.canonical and c.canonical.table == "runs" and c.canonical.name not in ("kind", "status")]
    result_columns = [c.canonical.name for c in plan if c.canonical and c.canonical.table == "run_results"]
    runs: dict[str, list] = {k: [] for k in ["run_id", "device_id", "kind", "status", "error_text", "extra", "config", "source", "edgestats_version", *run_columns]}
    results: dict[str, list] = {k: [] for k in ["run_id", *result_columns]}
    diverged = []
    for row in rows:
        run_id = str(name_uuid("import", file_hash, str(row["_row"])))
        status, error = row.get("status") or "ok", None
        if row["_nan_columns"] and not row.get("status"):
            # The published tables write NaN for a run whose training did not converge.
            status, error = "diverged", f"imported NaN/inf in {', '.join(row['_nan_columns'])}"
            diverged.append(row["_row"])
        runs["run_id"].append(run_id)
        runs["device_id"].append(str(name_uuid("device", row["device"])))
        runs["kind"].append(kind)
        runs["status"].append(status)
        runs["error_text"].append(error)
        runs["extra"].append(row.get("_extra"))
        runs["config"].append(json.dumps({"imported_from": path.name, "row": row["_row"], "sha256": file_hash}))
        runs["source"].append(f"import:{path.name}")
        runs["edgestats_version"].append(__version__)
        for name in run_columns:
            runs[name].append(row.get(name))
        results["run_id"].append(run_id)
        for name in result_columns:
            results[name].append(row.get(name))
    runs_table = pa.table({k: pa.array(v, _arrow_type(k)) for k, v in runs.items()})
    results_table = pa.table({k: pa.array(v, pa.string() if k == "run_id" else pa.float64()) for k, v in results.items()})
    return runs_table, results_table, diverged
