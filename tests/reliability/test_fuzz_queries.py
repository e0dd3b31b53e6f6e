"""Fuzzed `--where`, `--by` and queries for `analyze` and `sql`, run through the CLI in-process:
fragments of SQL, whole statements that write or reach outside (COPY, ATTACH, INSTALL, read_csv)
and random text. Beyond fuzz_cli.py's invariant, neither command may change a byte of the DB or
write a file. Separate from test_fuzz_inputs.py (the files and values that `import` and
`collect` read): these read an existing DB and write nothing."""

from __future__ import annotations

from pathlib import Path

import pytest
from fuzz_cli import FUZZ, db_placer, digest, invoke_checked, workdir
from hypothesis import given, settings
from hypothesis import strategies as st


@pytest.fixture
def existing_db(results_db_template: Path):
    """Copy the session's results DB into an example's folder."""
    return db_placer(results_db_template)


# -- analyze and sql: generated --where, --by and queries ------------------------------------------

FRAGMENTS = [
    "framework",
    "=",
    "'pytorch'",
    "'a;b'",
    ";",
    "(",
    ")",
    "OR",
    "AND",
    "NOT",
    "1",
    "1e309",
    "NULL",
    "--",
    "/*",
    "*/",
    "'",
    '"',
    "SELECT",
    "*",
    "FROM",
    "runs",
    "DROP TABLE runs",
    "IN",
    "batch_size",
    ">",
    "read_csv('/etc/passwd')",
    "COPY",
    "TO",
    "'out.csv'",
    "ATTACH",
    "'new.duckdb'",
    "INSTALL httpfs",
    "SET enable_external_access = true",
    "EXPORT DATABASE 'dump'",
    "EXPLAIN ANALYZE",
    "PREPARE p AS",
    "glob('*')",
    "\x00",
    "é",
]
STATEMENTS = [
    "COPY (SELECT 'x') TO '{db}'",
    "COPY runs TO 'out.csv'",
    "EXPORT DATABASE 'dump'",
    "ATTACH 'new.duckdb' AS n (READ_WRITE)",
    "INSTALL httpfs",
    "LOAD httpfs",
    "SELECT * FROM read_csv('/etc/passwd')",
    "SET enable_external_access = true",
    "EXPLAIN ANALYZE COPY (SELECT 1) TO 'out.csv'",
    "DELETE FROM runs",
    "CHECKPOINT",
    "SELECT count(*) FROM runs",
    "SELECT * FROM glob('*')",
    "CREATE TEMP TABLE t AS SELECT 1",
    "PRAGMA enable_profiling",
    "SELECT 1; SELECT 2",
]
SQL = st.one_of(
    st.sampled_from(STATEMENTS),
    st.lists(st.sampled_from(FRAGMENTS + STATEMENTS), min_size=1, max_size=8).map(" ".join),
    st.text(max_size=20),
)
COLUMNS = [
    "device",
    "framework",
    "model",
    "batch_size",
    "threads",
    "precision",
    "kind",
    "nope",
    "",
    "run_id",
    "'",
    "a b",
]


@settings(FUZZ, max_examples=15)
@given(where=st.one_of(st.none(), SQL), by=st.lists(st.sampled_from(COLUMNS), max_size=2))
def test_fuzzed_analyze_where_and_by(existing_db, where, by):
    with workdir() as folder:
        db = existing_db(folder)
        before = digest(db)
        args = ["analyze", db, "--only", "summary", "--json", "--resamples", "50"]
        args += ["--where", where] if where is not None else []
        for column in by:
            args += ["--by", column]
        invoke_checked(args, db)
        assert digest(db) == before, "analyze opens the DB read-only"
        assert sorted(p.name for p in folder.iterdir()) == ["existing.duckdb"]


@settings(FUZZ, max_examples=20)
@given(query=SQL, fmt=st.sampled_from(["table", "csv", "json", "markdown", "xml"]))
def test_fuzzed_sql_query(existing_db, monkeypatch, query, fmt):
    # The working folder is changed back before it is deleted: left in a deleted folder, the next
    # example's relative paths (Hypothesis's own among them) cannot be resolved.
    with workdir() as folder, monkeypatch.context() as patch:
        patch.chdir(folder)  # relative paths in the query land here, where they are checked
        db = existing_db(folder)
        before = digest(db)
        invoke_checked(["sql", db, query.replace("{db}", str(db)), "--format", fmt], db)
        assert digest(db) == before, "sql without --write changes no byte of the DB"
        assert sorted(p.name for p in folder.iterdir()) == ["existing.duckdb"], (
            "sql without --write writes no file"
        )
