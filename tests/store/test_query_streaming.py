"""`edgestats sql` streams its result: every format written batch by batch reads as the whole
result printed at once would, JSON stays one document, an error mid-result is one line, and a
child process's peak RSS does not grow with the rows (the 100 M-row figure: bench/memory.py).
DuckDB's memory_limit on edgestats' connections comes from the memory available.

Cost: the two memory tests run `edgestats sql` on 1 M and 4 M rows (about 8 s of CPU: `slow`);
the rest well under a second.
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest
from peak_rss import peak_rss_bytes
from typer.testing import CliRunner

import edgestats.store.database as database
import edgestats.store.query as query
from edgestats.cli import app
from edgestats.errors import QueryError
from edgestats.store.database import MEMORY_FLOOR_BYTES, connect, memory_limit_bytes
from edgestats.store.query import format_result, print_query, run_query
from edgestats.store.sandbox import sandboxed_store

runner = CliRunner()
MIB = 2**20
# 11 rows, widest first (so a table measured on the first batch is the table of all rows), with
# the types the formats treat apart: numbers, text to escape, NULL, a list, a timestamp.
ROWS = (
    "SELECT 10 - range AS n, repeat('w', 11 - range) || CASE WHEN range = 0 THEN ' |\"q\"' ELSE '' END "
    "AS text, CASE WHEN range % 3 = 2 THEN NULL ELSE (10 - range) / 4 END AS quarter, "
    "[10 - range, 2] AS pair, TIMESTAMPTZ '2024-05-01 12:00:00+00' + to_seconds(range) AS at, "
    "10 - range AS n FROM range(11)"
)


def streamed(db: Path, sql: str, fmt: str, width: int | None = None) -> str:
    out = io.StringIO()
    print_query(db, sql, fmt, width=width, out=out)
    return out.getvalue()


@pytest.mark.parametrize("fmt", ["table", "line", "csv", "json", "markdown", "auto"])
@pytest.mark.parametrize("width", [None, 40])
def test_a_result_in_many_batches_prints_as_the_whole_result_would(results_db, monkeypatch, fmt, width):
    monkeypatch.setattr(query, "BATCH_ROWS", 3)  # 11 rows: 4 batches
    whole = format_result(run_query(results_db, ROWS), fmt, width=width) + "\n"
    assert streamed(results_db, ROWS, fmt, width) == whole


def test_json_of_many_batches_is_one_document(results_db, monkeypatch):
    monkeypatch.setattr(query, "BATCH_ROWS", 4)
    rows = json.loads(streamed(results_db, "SELECT range AS n, 'r' || range AS n FROM range(25)", "json"))
    # a name given twice keeps its last value, as a dict (and the result printed whole) does
    assert rows == [{"n": f"r{i}"} for i in range(25)]
    assert json.loads(streamed(results_db, "SELECT 1 AS n WHERE false", "json")) == []


def test_a_longer_value_after_the_first_batch_runs_past_its_column(results_db, monkeypatch):
    monkeypatch.setattr(query, "BATCH_ROWS", 2)
    sql = "SELECT CASE WHEN range = 3 THEN 'a-much-longer-value' ELSE 'v' || range END AS v, range AS n "
    sql += "FROM range(4)"
    lines = streamed(results_db, sql, "table").splitlines()
    assert lines[:2] == ["v   n", "--  -"]  # widths of the first batch
    assert lines[5] == "a-much-longer-value  3" and lines[-1] == "(4 rows)"


def test_csv_streams_every_row(results_db, monkeypatch):
    monkeypatch.setattr(query, "BATCH_ROWS", 1000)
    text = streamed(results_db, "SELECT range AS n, 'a,b' AS s FROM range(2500)", "csv")
    assert list(csv.reader(io.StringIO(text))) == [["n", "s"]] + [[str(i), "a,b"] for i in range(2500)]


def test_an_error_mid_result_is_one_line_after_the_rows_before(results_db):
    sql = (
        "SELECT CASE WHEN range < 25000 THEN range ELSE error('boom at ' || range) END AS n FROM range(50000)"
    )
    result = runner.invoke(app, ["sql", str(results_db), sql, "--format", "csv"])
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert result.stderr.strip().splitlines() == ["error: Invalid Input Error: boom at 25000"]
    # the rows DuckDB produced before the error may have been written: a prefix of the result
    written = result.stdout.splitlines()
    assert written == ["n", *map(str, range(25000))][: len(written)]


def test_memory_limit_is_half_the_available_memory_with_a_floor(tmp_path, results_db, monkeypatch):
    con = connect(results_db, read_only=True)
    try:
        set_mib = con.execute("SELECT current_setting('memory_limit')").fetchone()[0]
    finally:
        con.close()
    expected = memory_limit_bytes()
    number, unit = set_mib.split()
    assert abs(float(number) * {"MiB": MIB, "GiB": 1024 * MIB}[unit] - expected) < 0.05 * expected
    assert MEMORY_FLOOR_BYTES <= expected <= database.available_memory_bytes() // 2 + MEMORY_FLOOR_BYTES
    monkeypatch.setattr(database, "available_memory_bytes", lambda: 10 * MIB)
    assert memory_limit_bytes() == MEMORY_FLOOR_BYTES
    # the sandbox locks the configuration after the limit is set: the limit holds there too
    with sandboxed_store(results_db) as store:
        assert store.con.execute("SELECT current_setting('memory_limit')").fetchone()[0] == "256.0 MiB"


def test_a_query_larger_than_the_memory_limit_is_one_line(results_db, monkeypatch):
    monkeypatch.setattr(database, "available_memory_bytes", lambda: 10 * MIB)  # the 256 MiB floor
    with pytest.raises(QueryError, match="(?i)out of memory.*half of the memory available"):
        run_query(results_db, "SELECT length(string_agg('xxxxxxxxxxxxxxxx', '')) FROM range(30000000)")


@pytest.mark.slow
@pytest.mark.parametrize("fmt", ["csv", "json"])
def test_sql_memory_does_not_grow_with_the_result(results_db, fmt):
    peaks = {
        rows: peak_rss_bytes(
            "sql", str(results_db), f"SELECT range AS n, 'row ' || range AS s FROM range({rows})", "-f", fmt
        )
        for rows in (1_000_000, 4_000_000)
    }
    # a fixed overhead (Python, DuckDB, one batch), not the rows: 4 M rows are ~60 MB of text
    assert peaks[4_000_000] < 400 * MIB, peaks
    assert peaks[4_000_000] - peaks[1_000_000] < 40 * MIB, peaks
