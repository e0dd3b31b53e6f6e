"""edgestats sql: formats, and read-only enforced by the connection itself."""

from __future__ import annotations

import csv
import io
import json

import pytest
from typer.testing import CliRunner

from edgestats.cli import app
from edgestats.errors import QueryError
from edgestats.store.query import run_query
from edgestats.store.results import Store

runner = CliRunner()
QUERY = (
    "SELECT framework, count(*) AS runs FROM runs WHERE kind = 'inference' "
    "GROUP BY framework ORDER BY framework"
)


@pytest.mark.parametrize(
    "statement",
    [
        "DELETE FROM runs",
        "  delete from runs",
        "/* harmless */ UPDATE runs SET status = 'error'",
        "CREATE TABLE t AS SELECT 1",
        "WITH x AS (SELECT 1) INSERT INTO devices (device_id, name, registered_at) "
        "SELECT uuid(), 'x', now() FROM x",
        "DROP VIEW run_summary",
        "INSERT INTO runs SELECT * FROM runs",
        "ALTER TABLE runs ADD COLUMN x INT",
    ],
)
def test_read_only_is_enforced_by_the_connection(results_db, statement):
    with pytest.raises(QueryError, match="(?i)read-only|read only"):
        run_query(results_db, statement)
    with Store.open(results_db, read_only=True) as store:
        assert store.counts()["runs"] == 4


def test_write_flag_allows_changes(results_db):
    run_query(results_db, "UPDATE runs SET status = 'error' WHERE framework = 'onnxruntime'", write=True)
    result = run_query(results_db, "SELECT count(*) FROM runs WHERE status = 'error'")
    assert result.rows == [(1,)]


def test_formats(results_db):
    table = runner.invoke(app, ["sql", str(results_db), QUERY])
    assert table.exit_code == 0, table.output
    assert table.output.splitlines()[0].split() == ["framework", "runs"] and "(2 rows)" in table.output
    as_csv = runner.invoke(app, ["sql", str(results_db), QUERY, "--format", "csv"]).output
    assert list(csv.reader(io.StringIO(as_csv))) == [
        ["framework", "runs"],
        ["onnxruntime", "1"],
        ["pytorch", "2"],
    ]
    as_json = json.loads(runner.invoke(app, ["sql", str(results_db), QUERY, "--format", "json"]).output)
    assert as_json == [{"framework": "onnxruntime", "runs": 1}, {"framework": "pytorch", "runs": 2}]
    md = runner.invoke(app, ["sql", str(results_db), QUERY, "--format", "markdown"]).output.splitlines()
    assert md[0] == "| framework | runs |" and md[1] == "|---|---|" and md[2] == "| onnxruntime | 1 |"


def test_json_handles_uuids_and_timestamps(results_db):
    out = runner.invoke(
        app,
        [
            "sql",
            str(results_db),
            "SELECT run_id, device_id, registered_at FROM runs JOIN devices USING (device_id) LIMIT 1",
            "-f",
            "json",
        ],
    )
    row = json.loads(out.output)[0]
    assert len(row["run_id"]) == 36 and "T" in row["registered_at"]


def test_errors_are_one_line_without_traceback(results_db, tmp_path):
    bad = runner.invoke(app, ["sql", str(results_db), "SELECT nope FROM runs"])
    assert bad.exit_code == 1 and "error:" in bad.output and "Traceback" not in bad.output
    denied = runner.invoke(app, ["sql", str(results_db), "DELETE FROM runs"])
    assert denied.exit_code == 1 and "--write" in denied.output
    missing = runner.invoke(app, ["sql", str(tmp_path / "none.duckdb"), "SELECT 1"])
    assert missing.exit_code == 1 and "no such file" in missing.output
    fmt = runner.invoke(app, ["sql", str(results_db), "SELECT 1", "--format", "xml"])
    flat = " ".join(fmt.output.replace("│", " ").split())  # the usage error's box wraps the list
    assert fmt.exit_code != 0 and "auto, table, line, csv, json, markdown" in flat


WIDE = "SELECT * FROM run_summary ORDER BY run_id"


@pytest.mark.parametrize("columns", [80, 120])
def test_a_row_wider_than_the_terminal_prints_one_field_per_line(results_db, columns):
    """run_summary has about 60 columns: as a table its lines run to well over 1,000 characters."""
    result = runner.invoke(app, ["sql", str(results_db), WIDE], env={"COLUMNS": str(columns)})
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0].startswith("-[ row 1 ]") and lines[-1] == "(4 rows)"
    assert max(len(line) for line in lines) <= columns
    fields = [
        line.split(" |", 1)[0].strip() for line in lines[1:] if " |" in line and not line.startswith(" ")
    ]
    with Store.open(results_db, read_only=True) as store:
        n_columns = len(store.frame("SELECT * FROM run_summary LIMIT 0").columns)
    assert len(fields) == 4 * n_columns and fields[:2] == ["run_id", "sweep_id"]


def test_a_narrow_result_stays_a_table_and_an_asked_format_is_kept(results_db):
    narrow = runner.invoke(app, ["sql", str(results_db), QUERY], env={"COLUMNS": "80"})
    assert narrow.output.splitlines()[0].split() == ["framework", "runs"]
    table = runner.invoke(app, ["sql", str(results_db), WIDE, "--format", "table"], env={"COLUMNS": "80"})
    assert (
        table.output.splitlines()[0].startswith("run_id") and max(map(len, table.output.splitlines())) > 800
    )
    lines = runner.invoke(
        app, ["sql", str(results_db), QUERY, "-f", "line"], env={"COLUMNS": "80"}
    ).output.splitlines()
    assert lines[:3] == ["-[ row 1 ]" + "-" * 69, "framework | onnxruntime", "runs      | 1"]


def test_piped_output_is_never_switched(results_db):
    """No terminal and no $COLUMNS: scripts reading the output get a table whatever its width."""
    result = runner.invoke(app, ["sql", str(results_db), WIDE], env={"COLUMNS": ""})
    assert result.output.splitlines()[0].startswith("run_id")
