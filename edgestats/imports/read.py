"""Reading a file for `edgestats import` into its staging DuckDB, a long-format table as one row per
run. Every column goes as text into the table `staged` of the import's staging DuckDB (a temporary
file: importer.py), after checking that a CSV is UTF-8 with balanced quotes; a long-format table
(one row per run and metric) is turned into one row per run (`--long`). docs/cli/import.md.
"""

from __future__ import annotations

import csv
from pathlib import Path

import duckdb

from edgestats.contracts import normalise
from edgestats.errors import ImportFileError
from edgestats.imports.checks import sql_str
from edgestats.imports.columns import resolve
from edgestats.store.database import first_row
from edgestats.store.results import quote_ident

TEXT_SUFFIXES = (".csv", ".tsv", ".txt")


DELIMITERS = (",", "\t", ";", "|")


def read_as_text(con: duckdb.DuckDBPyConnection, path: Path) -> list[str]:
    """Load the file into table `staged` (all VARCHAR, plus its 1-based row number `_row`), read
    by DuckDB straight into the staging DB (its memory limit bounds what it holds)."""
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
        columns = [r[0] for r in con.execute(f"DESCRIBE SELECT * FROM {source}", params).fetchall()]
        casts = ", ".join(f"CAST({quote_ident(c)} AS VARCHAR) AS {quote_ident(c)}" for c in columns)
        # row_number() OVER () runs as DuckDB's streaming window, in the order the file is read
        con.execute(
            f"CREATE TABLE staged AS SELECT row_number() OVER () AS _row, {casts} FROM {source}", params
        )
    except duckdb.Error as exc:
        first_line = next((line for line in str(exc).splitlines() if line.strip()), str(exc)).rstrip(".")
        hint = (
            " (it mixes \\r\\n and \\n line endings: save it with one kind)" if _mixed_endings(path) else ""
        )
        raise ImportFileError(
            f"{path}: cannot read it as {suffix[1:]}{hint}: {first_line}; nothing was imported"
        ) from exc
    return columns


def _mixed_endings(path: Path) -> bool:
    """Whether a text file ends some lines with \\r\\n and others with \\n alone."""
    if path.suffix.lower() not in TEXT_SUFFIXES:
        return False
    crlf = lf = False
    with open(path, "rb") as f:
        for line in f:
            crlf, lf = (
                crlf or line.endswith(b"\r\n"),
                lf or (line.endswith(b"\n") and not line.endswith(b"\r\n")),
            )
            if crlf and lf:
                return True
    return False


UTF8_ADVICE = "save the file as UTF-8 (e.g. iconv -f latin1 -t utf-8); nothing was imported"
CHUNK_BYTES = 1 << 20


def check_utf8(path: Path) -> None:
    """Raise ImportFileError naming the line and byte where `path` stops being UTF-8 text; read in
    chunks that end at a line's end, so memory stays that of a chunk whatever the file's size."""
    line = 1
    carry = b""
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(CHUNK_BYTES), b""):
            data = carry + block
            cut = data.rfind(b"\n") + 1  # decode whole lines; a line longer than a chunk waits
            chunk, carry = (data[:cut], data[cut:]) if cut else (b"", data)
            _decode_lines(chunk, path, line)
            line += chunk.count(b"\n")
    _decode_lines(carry, path, line)


def _decode_lines(chunk: bytes, path: Path, first_line: int) -> None:
    try:
        chunk.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = first_line + chunk.count(b"\n", 0, exc.start)
        raise ImportFileError(
            f"{path}: line {line} is not UTF-8 text (byte 0x{chunk[exc.start]:02x}); {UTF8_ADVICE}"
        ) from None


def check_text_file(path: Path) -> str:
    """The delimiter of a CSV/TSV file, after checking that it is UTF-8 text whose quotes balance.

    DuckDB's reader is lenient: with an unclosed quote it guesses another dialect and imports
    `"pi` as a device name, or drops rows. Python's csv module in strict mode finds the record
    where quoting goes wrong, so the error can name its row and line. The file is read as a
    stream, never whole."""
    check_utf8(path)
    with open(path, "rb") as f:
        header = f.readline().decode("utf-8-sig").split("\n", 1)[0]
    default = "\t" if path.suffix.lower() == ".tsv" else ","
    delimiter = max(DELIMITERS, key=lambda d: (header.count(d), d == default))
    record, start = 0, 1  # the record being read (0: the header) and the line it starts on
    with open(path, encoding="utf-8-sig", newline="") as text:
        reader = csv.reader(text, delimiter=delimiter, quotechar='"', doublequote=True, strict=True)
        try:
            for _ in reader:
                record, start = record + 1, reader.line_num + 1
        except csv.Error as exc:
            where = "the header" if record == 0 else f"row {record}"
            raise ImportFileError(
                f'{path}: {where} (line {start}): unbalanced quote — a cell opens a quote (") that '
                f"does not close, or text follows its closing quote ({exc}); close the quote or remove it; "
                "nothing was imported"
            ) from None
    return delimiter


LONG_NAME_COLUMNS = ("metric", "measure", "phase")


def pivot_long(
    con: duckdb.DuckDBPyConnection, path: Path, columns: list[str], maps: dict[str, str]
) -> tuple[list[str], dict[str, str]]:
    """Turn `staged`, a long-format table (one row per run and metric or phase, the figure in
    'value', its unit in an optional 'unit' column), into one row per run: the other columns
    identify the run, each metric becomes a column named after it (so 'latency' with unit 'us'
    becomes 'latency (us)', converted like any header). --map renames columns and metric names
    alike. A run's row number is that of its first row. Returns the new columns and the maps
    left for them."""
    name_col, value_col, unit_col = _long_columns(path, columns, maps)
    keys = [c for c in columns if c not in (name_col, value_col, unit_col)]
    name = f"trim({quote_ident(name_col)})"
    unit = f"NULLIF(trim({quote_ident(unit_col)}), '')" if unit_col else "NULL"
    group = ", ".join(quote_ident(k) for k in keys)
    _label_metrics(con, path, keys, name=name, unit=unit)
    found = con.execute(
        f"SELECT _metric, any_value({name}), any_value({unit}) FROM labelled GROUP BY _metric "
        f"ORDER BY min(_row)"
    ).fetchall()
    names = _metric_columns(path, found, columns, keys, maps)
    pivots = ", ".join(
        f"any_value({quote_ident(value_col)}) FILTER (WHERE _metric = {sql_str(label)}) AS {quote_ident(col)}"
        for label, col in names.items()
    )
    con.execute(
        f"CREATE TABLE wide AS SELECT min(_row) AS _row{', ' + group if group else ''}, {pivots} "
        f"FROM labelled {'GROUP BY ' + group if group else ''}"
    )
    con.execute("DROP TABLE staged")
    con.execute("ALTER TABLE wide RENAME TO staged")
    wide = keys + list(names.values())
    # a metric renamed by --map is now a column under its new name: its map has been applied
    left = {src: dst for src, dst in maps.items() if src in keys}
    return wide, left


def _long_columns(path: Path, columns: list[str], maps: dict[str, str]) -> tuple[str, str, str | None]:
    """The long table's columns (after --map) that name the metric, hold its value and its unit
    (None: no unit column)."""
    role = {normalise(maps.get(c, c)): c for c in columns}
    name_col = next((role[n] for n in LONG_NAME_COLUMNS if n in role), None)
    value_col, unit_col = role.get("value"), role.get("unit")
    if name_col is None or value_col is None:
        raise ImportFileError(
            f"{path}: --long needs a column naming the metric or phase ({', '.join(LONG_NAME_COLUMNS)}) and "
            "a 'value' column (rename yours with --map SRC=metric, --map SRC=value); its columns are "
            f"{columns}; nothing was imported"
        )
    return name_col, value_col, unit_col


def _label_metrics(
    con: duckdb.DuckDBPyConnection, path: Path, keys: list[str], *, name: str, unit: str
) -> None:
    """Table `labelled`: the rows that name a metric, each with its label (the name, and its unit
    in parentheses); a metric given twice for the same run is an error."""
    label = f"CASE WHEN {unit} IS NULL THEN {name} ELSE {name} || ' (' || {unit} || ')' END"
    con.execute(
        f"CREATE TABLE labelled AS SELECT *, {label} AS _metric FROM staged "
        f"WHERE NULLIF({name}, '') IS NOT NULL"
    )
    group = ", ".join(quote_ident(k) for k in keys)
    dup = first_row(
        con,
        "SELECT list(_row ORDER BY _row), any_value(_metric) FROM labelled "
        f"GROUP BY {group + ', ' if group else ''}_metric HAVING count(*) > 1 ORDER BY min(_row) LIMIT 1",
    )
    if dup:
        raise ImportFileError(
            f"{path}: rows {', '.join(map(str, dup[0]))} give {dup[1]!r} for the same run (the same values "
            f"in {keys}); a long table gives each metric once per run; nothing was imported"
        )


def _metric_columns(
    path: Path, found: list[tuple], columns: list[str], keys: list[str], maps: dict[str, str]
) -> dict[str, str]:
    """Each metric's label -> the column it becomes: its --map target (by label, or by its bare
    name with the unit column's unit), else the label itself; no column may come twice."""
    metrics = [label for label, _, _ in found] + [bare for _, bare, _ in found]
    unknown = [src for src in maps if src not in columns and src not in metrics]
    if unknown:
        raise ImportFileError(
            f"{path}: --map names {unknown}, neither a column of the file nor one of its metrics "
            f"{sorted(set(metrics))}; its columns are {columns}; nothing was imported"
        )
    names = {}
    for label, bare, unit_text in found:
        target = maps.get(label)
        if target is None and bare in maps:
            # mapped by its name alone: the unit column still says what unit the values are in
            target = maps[bare]
            match = resolve(normalise(target)) if unit_text else None
            if match and match[0].family:
                target = f"{match[0].base}_{normalise(unit_text)}"
        names[label] = target or label
    clash = [label for label, col in names.items() if normalise(col) in {normalise(k) for k in keys}]
    twice = sorted({col for col in names.values() if list(names.values()).count(col) > 1})
    if clash or twice:
        raise ImportFileError(
            f"{path}: metric(s) {clash or twice} would give a column twice (or one the file has); "
            f"rename them with --map; nothing was imported"
        )
    return names
