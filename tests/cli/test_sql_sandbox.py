"""The sandbox of `edgestats sql` (without --write) and of `analyze --where`: no file written or
deleted, none read outside the DB and --read, no extension installed or loaded, settings locked.

Each refusal is checked at the CLI (one line, exit 1, the DB's and its WAL's bytes unchanged) and,
for the DuckDB settings, on a locked-down connection alone, without the statement check in front.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from cli_asserts import one_line_error
from typer.testing import CliRunner

from edgestats.analysis.load.frames import check_where
from edgestats.cli import app
from edgestats.errors import QueryError
from edgestats.store.query import run_query
from edgestats.store.results import Store
from edgestats.store.sandbox import lock_down, refuse_writes

runner = CliRunner()


def digest(db: Path) -> tuple[str, str | None]:
    wal = Path(f"{db}.wal")
    return (
        hashlib.sha256(db.read_bytes()).hexdigest(),
        hashlib.sha256(wal.read_bytes()).hexdigest() if wal.exists() else None,
    )


@pytest.fixture
def db(results_db: Path) -> Path:
    """The results DB with a WAL holding one more table: the sandbox must leave both as they are."""
    con = duckdb.connect(str(results_db))
    con.execute("PRAGMA disable_checkpoint_on_shutdown")
    con.execute("SET checkpoint_threshold = '1GB'")
    con.execute("CREATE TABLE wal_only AS SELECT 42 AS answer")
    con.close()
    assert Path(f"{results_db}.wal").stat().st_size > 0
    return results_db


# statement (with {db}, {out} filled in) -> words the one-line error must hold
REFUSED = {
    "COPY (SELECT 'x') TO '{db}'": "COPY",
    "COPY (SELECT 'x') TO '{out}'": "COPY",
    "COPY runs TO '{out}' (FORMAT parquet)": "COPY",
    "EXPORT DATABASE '{out}'": "EXPORT DATABASE",
    "ATTACH '{out}' AS other; CREATE TABLE other.t AS SELECT 1 AS x": "ATTACH",
    "ATTACH '{out}' AS other (READ_WRITE); CREATE TABLE other.t AS SELECT 1 AS x": "ATTACH",
    "INSTALL httpfs": "extension",
    "LOAD httpfs": "extension",
    "SELECT * FROM read_csv('/etc/passwd')": "file system operations are disabled",
    "SELECT content FROM read_text('/etc/hostname')": "file system operations are disabled",
    "SELECT * FROM glob('/etc/*')": "file system operations are disabled",
    "SELECT * FROM 'https://example.com/data.csv'": "file system operations are disabled",
    "SET enable_external_access = true": "locked",
    "RESET lock_configuration": "locked",
    "PRAGMA enable_profiling": "locked",
    "EXPLAIN ANALYZE COPY (SELECT 1) TO '{out}'": "COPY",
}


@pytest.mark.slow
@pytest.mark.parametrize("statement", list(REFUSED))
def test_sql_without_write_refuses_with_one_line(db, tmp_path, statement):
    out = tmp_path / "written"
    before = digest(db)
    result = runner.invoke(app, ["sql", str(db), statement.format(db=db, out=out)])
    line = one_line_error(result)
    assert REFUSED[statement] in line
    assert digest(db) == before
    assert not out.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["results.duckdb", "results.duckdb.wal"]


# statement -> the DuckDB setting that refuses it when nothing else stands in front
SETTINGS = {
    # DuckDB >= 2.0.1 refuses this one in its binder, before the access check: either refusal will do
    "COPY (SELECT 'x') TO '{db}'": "enable_external_access or own file",
    "COPY (SELECT 'x') TO '{out}'": "enable_external_access",
    "EXPORT DATABASE '{out}'": "enable_external_access",
    "ATTACH '{out}' AS other (READ_WRITE)": "enable_external_access",
    "INSTALL httpfs": "enable_external_access",
    "LOAD httpfs": "enable_external_access",
    "SELECT * FROM read_csv('/etc/passwd')": "enable_external_access",
    "SET enable_external_access = true": "lock_configuration",
    "SET autoload_known_extensions = true": "lock_configuration",
    "SET allowed_directories = ['/']": "lock_configuration",
    "SET temp_directory = '{out}'": "lock_configuration",
    "CALL enable_logging(storage = 'file', storage_path = '{out}')": "lock_configuration",
}


@pytest.mark.parametrize("statement", list(SETTINGS))
def test_each_duckdb_setting_refuses_on_its_own(db, tmp_path, statement):
    out = tmp_path / "written"
    before = digest(db)
    with Store.open(db, read_only=True) as store:
        lock_down(store.con)
        settings = dict(
            store.con.execute(
                "SELECT name, value FROM duckdb_settings() WHERE name IN "
                "('enable_external_access', 'lock_configuration', 'autoinstall_known_extensions', "
                "'autoload_known_extensions', 'allow_persistent_secrets', 'temp_directory')"
            ).fetchall()
        )
        with pytest.raises(duckdb.Error) as caught:
            store.con.execute(statement.format(db=db, out=out))
    assert settings == {
        "enable_external_access": "false",
        "lock_configuration": "true",
        "autoinstall_known_extensions": "false",
        "autoload_known_extensions": "false",
        "allow_persistent_secrets": "false",
        "temp_directory": "",
    }
    expected = {
        "enable_external_access": ("disabled",),
        "lock_configuration": ("locked",),
        "enable_external_access or own file": ("disabled", "belongs to an attached database"),
    }[SETTINGS[statement]]
    assert any(text in str(caught.value) for text in expected), caught.value
    assert digest(db) == before and not out.exists()


@pytest.fixture
def export_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "export"
    folder.mkdir()
    pq.write_table(pa.table({"run": [1, 2, 3]}), folder / "a.parquet")
    pq.write_table(pa.table({"run": [4]}), folder / "b.parquet")
    pq.write_table(pa.table({"secret": [7]}), tmp_path / "outside.parquet")
    return folder


def test_read_lets_named_files_be_read_and_nothing_else(db, export_dir, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # relative paths, as a user types them
    ok = runner.invoke(
        app,
        [
            "sql",
            str(db),
            "--read",
            "export/",
            "-f",
            "csv",
            "SELECT count(*) AS n, max(run) AS s FROM read_parquet('export/*.parquet')",
        ],
    )
    assert ok.exit_code == 0, ok.output
    assert ok.output.split() == ["n,s", "4,4"]
    one_file = runner.invoke(
        app,
        [
            "sql",
            str(db),
            "--read",
            str(export_dir / "b.parquet"),
            "-f",
            "csv",
            f"SELECT run FROM read_parquet('{export_dir / 'b.parquet'}')",
        ],
    )
    assert one_file.exit_code == 0 and one_file.output.split() == ["run", "4"], one_file.output
    outside = runner.invoke(
        app, ["sql", str(db), "--read", "export/", "SELECT * FROM read_parquet('outside.parquet')"]
    )
    assert "outside.parquet" in one_line_error(outside)
    sibling = runner.invoke(
        app,
        [
            "sql",
            str(db),
            "--read",
            str(export_dir / "b.parquet"),
            f"SELECT * FROM read_parquet('{export_dir / 'a.parquet'}')",
        ],
    )
    assert "file system operations are disabled" in one_line_error(sibling)
    escape = runner.invoke(
        app, ["sql", str(db), "--read", "export/", "SELECT * FROM read_parquet('export/../outside.parquet')"]
    )
    one_line_error(escape)


@pytest.mark.parametrize(
    "statement",
    [
        "COPY (SELECT 1) TO 'export/new.csv'",
        "COPY (SELECT 1) TO 'export/a.parquet' (FORMAT parquet)",
        "EXPORT DATABASE 'export/dump'",
        "ATTACH 'export/new.duckdb' AS n (READ_WRITE)",
        "EXPLAIN ANALYZE COPY (SELECT 1) TO 'export/new.csv'",
        "explain (format json) copy (select 1) to 'export/new.csv'",
        "PREPARE p AS COPY (SELECT 1) TO 'export/new.csv'; EXECUTE p",
        "SELECT 1; COPY (SELECT 1) TO 'export/new.csv'",
    ],
)
def test_read_folders_cannot_be_written(db, export_dir, tmp_path, monkeypatch, statement):
    """DuckDB's allowed directories are writable too: the statement check keeps them read-only."""
    monkeypatch.chdir(tmp_path)
    before = {p.name: p.read_bytes() for p in export_dir.iterdir()}
    one_line_error(runner.invoke(app, ["sql", str(db), "--read", "export/", statement]))
    assert {p.name: p.read_bytes() for p in export_dir.iterdir()} == before


def test_statement_check_lets_reading_statements_through():
    for query in [
        "SELECT 1",
        "EXPLAIN SELECT 1",
        "EXPLAIN ANALYZE SELECT * FROM runs",
        "SUMMARIZE runs",
        "DESCRIBE run_summary",
        "PRAGMA table_info('runs')",
        "WITH x AS (SELECT 1) SELECT * FROM x",
        "SELECT 'COPY (SELECT 1) TO ''x''' AS text",
        "SET VARIABLE v = 1",
    ]:
        refuse_writes(query)
    with pytest.raises(QueryError, match="a kind of statement the sandbox does not know"):
        refuse_writes("UPDATE EXTENSIONS")  # a statement type duckdb's Python API has no name for
    with pytest.raises(QueryError, match="EXPLAIN of a statement the sandbox cannot read"):
        refuse_writes("EXPLAIN /* hidden */ ANALYZE COPY (SELECT 1) TO 'x'")


def test_read_option_errors_are_one_line(db, tmp_path):
    missing = runner.invoke(app, ["sql", str(db), "--read", str(tmp_path / "nope"), "SELECT 1"])
    assert "no such file or folder" in one_line_error(missing)
    with_write = runner.invoke(app, ["sql", str(db), "--write", "--read", str(tmp_path), "SELECT 1"])
    assert "--read" in one_line_error(with_write)


def test_write_is_not_sandboxed_and_the_sandbox_does_not_outlive_its_query(db, tmp_path):
    """--write keeps the plain writable connection (documented as not sandboxed); a sandboxed
    query before it leaves no locked setting behind in the process."""
    assert run_query(db, "SELECT answer FROM wal_only").rows == [(42,)]
    out = tmp_path / "copy.csv"
    result = runner.invoke(app, ["sql", str(db), "--write", f"COPY (SELECT 1 AS x) TO '{out}'"])
    assert result.exit_code == 0, result.output
    assert out.read_text().split() == ["x", "1"]
    with pytest.raises(QueryError, match="file system operations are disabled"):
        run_query(db, f"SELECT * FROM read_csv('{out}')")


# -- analyze --where ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "where",
    [
        "device IN (SELECT * FROM read_csv('/etc/passwd'))",
        "framework IN (SELECT content FROM read_text('/etc/hostname'))",
        "EXISTS (SELECT * FROM glob('/etc/*'))",
    ],
)
def test_analyze_where_is_sandboxed(db, where):
    before = digest(db)
    line = one_line_error(runner.invoke(app, ["analyze", str(db), "--only", "summary", "--where", where]))
    assert "--where" in line and "file system operations are disabled" in line
    assert digest(db) == before


def test_where_accepts_a_semicolon_inside_a_string(results_db):
    assert check_where("framework = 'a;b'") == "(framework = 'a;b')"
    assert check_where("\"framework\" = 'x;' OR model = ';'") == "(\"framework\" = 'x;' OR model = ';')"
    result = runner.invoke(
        app, ["analyze", str(results_db), "--only", "summary", "--json", "--where", "framework = 'a;b'"]
    )
    assert result.exit_code == 0, result.output
    for statement in ["1; DROP TABLE runs", "TRUE; SELECT 1", "framework = 'a'; SELECT 'b'"]:
        refused = runner.invoke(app, ["analyze", str(results_db), "--where", statement])
        assert "must be one expression" in one_line_error(refused)
