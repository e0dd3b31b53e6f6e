"""A damaged lake (export folder) gives one line naming the file and what to do, never a traceback:
each damage of the probe (a Parquet file cut short, emptied or deleted; the manifest cut short;
flipped bytes in a file's footer or in a page header) through `sql`, `analyze` (text, --json,
--out) and `export --append`, through the real CLI; `lake_problems` (what `edgestats verify`
calls) names every damaged file, a changed value that DuckDB reads without complaint included."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import duckdb
import pytest
from builders import make_results_db
from cli_asserts import one_line_error
from export_builders import two_device_lake
from typer.testing import CliRunner

import edgestats
from edgestats.cli import app
from edgestats.errors import DamagedDatabaseError
from edgestats.exports.parquet import MANIFEST_NAME
from edgestats.store.lake import lake_problems

runner = CliRunner()
pytestmark = pytest.mark.xdist_group("lake_damage")  # one worker builds the module's lake, once
RECOVERY = "export the DBs again into a new folder"


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two devices' DBs and a lake: the first exported, the second appended."""
    folder = tmp_path_factory.mktemp("damage")
    two_device_lake(folder)
    return folder


@pytest.fixture
def lake(template: Path, tmp_path: Path) -> Path:
    """The test's own copy of the lake (and the DBs beside it)."""
    shutil.copytree(template, tmp_path, dirs_exist_ok=True)
    return tmp_path / "lake"


def first_file(lake: Path, table: str) -> Path:
    return sorted((lake / table).rglob("*.parquet"))[0]


def cut_in_half(path: Path) -> None:
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


def flip(path: Path, start: int, n_bytes: int = 16) -> None:
    data = bytearray(path.read_bytes())
    for i in range(start, start + n_bytes):
        data[i] ^= 0xFF
    path.write_bytes(bytes(data))


def flip_footer(path: Path) -> None:
    """Bytes of the Thrift footer (DuckDB reads it when the lake's views are made)."""
    data = path.read_bytes()
    footer_bytes = int.from_bytes(data[-8:-4], "little")
    flip(path, len(data) - 8 - footer_bytes)


def flip_page_header(path: Path) -> None:
    """The header of the latency_ns column's first page: read only when a query reads the column."""
    [(offset,)] = duckdb.execute(
        "SELECT coalesce(dictionary_page_offset, data_page_offset) FROM parquet_metadata(?) "
        "WHERE path_in_schema = 'latency_ns'",
        [str(path)],
    ).fetchall()
    flip(path, offset)


# damage: (what it does to the lake, the file it damages)
DAMAGES: dict[str, Callable[[Path], Path]] = {
    "parquet cut short": lambda lake: _done(cut_in_half, first_file(lake, "runs")),
    "parquet emptied": lambda lake: _done(lambda p: p.write_bytes(b""), first_file(lake, "latencies")),
    "parquet deleted": lambda lake: _done(Path.unlink, first_file(lake, "samples")),
    "manifest cut short": lambda lake: _done(cut_in_half, lake / MANIFEST_NAME),
    "footer bytes flipped": lambda lake: _done(flip_footer, first_file(lake, "runs")),
    "page header bytes flipped": lambda lake: _done(flip_page_header, first_file(lake, "latencies")),
}


def _done(damage: Callable[[Path], object], path: Path) -> Path:
    damage(path)
    return path


COMMANDS = {
    "sql": ["sql", "{lake}", "SELECT sum(latency_ns) FROM latencies"],
    "analyze text": ["analyze", "{lake}"],
    "analyze --json": ["analyze", "{lake}", "--json"],
    "analyze --out": ["analyze", "{lake}", "--out", "{tmp}/report"],
}


@pytest.mark.slow
@pytest.mark.parametrize("command", list(COMMANDS))
@pytest.mark.parametrize("damage", list(DAMAGES))
def test_each_damage_is_one_line_naming_the_file(lake, tmp_path, damage, command):
    damaged = DAMAGES[damage](lake)
    args = [a.format(lake=lake, tmp=tmp_path) for a in COMMANDS[command]]
    line = one_line_error(runner.invoke(app, args))
    assert str(damaged) in line and RECOVERY in line, line
    assert not (tmp_path / "report").exists(), "no report from a lake that cannot be read"


@pytest.mark.parametrize(
    "damage, words",
    [
        ("parquet cut short", "bytes where the manifest lists"),
        ("parquet emptied", "is empty (0 bytes)"),
        ("parquet deleted", "is missing (deleted, or not copied with the folder)"),
        ("manifest cut short", "is not whole JSON (cut short?)"),
        ("footer bytes flipped", "has a footer that does not parse"),
        ("page header bytes flipped", "does not read whole"),
    ],
)
@pytest.mark.slow
def test_each_damage_says_its_words_to_sql_the_api_and_verify(lake, damage, words):
    damaged = DAMAGES[damage](lake)
    line = one_line_error(runner.invoke(app, ["sql", str(lake), "SELECT sum(latency_ns) FROM latencies"]))
    assert words in line, line
    with pytest.raises(DamagedDatabaseError, match="export the DBs again"):
        edgestats.open(lake).sql("SELECT sum(latency_ns) FROM latencies")
    problems = lake_problems(lake)
    assert len(problems) == 1 and str(damaged) in problems[0] and words in problems[0], problems


def test_a_changed_value_duckdb_reads_without_complaint_is_found_by_lake_problems(lake):
    """Parquet pages as DuckDB writes them carry no checksum: a changed byte inside a value reads
    as another value. The SHA-256 the manifest lists for every file finds it."""
    path = first_file(lake, "latencies")
    [(offset, size)] = duckdb.execute(
        "SELECT data_page_offset, total_compressed_size FROM parquet_metadata(?) "
        "WHERE path_in_schema = 'latency_ns'",
        [str(path)],
    ).fetchall()
    flip(path, offset + size // 2, n_bytes=1)
    assert lake_problems(lake, thorough=False) == [], "the cheap checks (size, PAR1) cannot see it"
    [problem] = lake_problems(lake)
    assert str(path) in problem and "SHA-256" in problem


def test_a_whole_lake_has_no_problems_and_lists_every_file_with_its_size_and_digest(lake):
    import json

    assert lake_problems(lake) == []
    manifest = json.loads((lake / MANIFEST_NAME).read_text())
    files = [f for entry in manifest["tables"].values() for f in entry["files"]]
    assert files and all(f["bytes"] == (lake / f["path"]).stat().st_size for f in files)
    assert all(len(f["sha256"]) == 64 for f in files)
    appended = [f for f in files if not f["path"].endswith("/part-0.parquet")]
    assert appended, "the append's files are listed with their facts too"


def test_every_damaged_file_is_counted_in_the_one_line(lake):
    for table in ("runs", "latencies", "samples"):
        first_file(lake, table).write_bytes(b"")
    line = one_line_error(runner.invoke(app, ["analyze", str(lake), "--json"]))
    assert "2 more of its files too" in line and f"edgestats verify {lake}" in line
    assert len(lake_problems(lake)) == 3


@pytest.mark.parametrize("damage", ["parquet cut short", "manifest cut short"])
def test_export_append_refuses_a_damaged_lake_and_changes_nothing(lake, damage):
    DAMAGES[damage](lake)
    before = sorted(p.relative_to(lake) for p in lake.rglob("*"))
    another = make_results_db(lake.parent / "late.duckdb", device_name="late", seed0=99)
    line = one_line_error(runner.invoke(app, ["export", str(another), "--parquet", str(lake), "--append"]))
    assert "damaged" in line or "manifest lists" in line, line
    assert sorted(p.relative_to(lake) for p in lake.rglob("*")) == before


def test_a_folder_without_a_manifest_says_so(lake, tmp_path):
    (lake / MANIFEST_NAME).unlink()
    line = one_line_error(runner.invoke(app, ["analyze", str(lake)]))
    assert f"{lake} holds no edgestats export" in line and RECOVERY in line, line
    line = one_line_error(runner.invoke(app, ["sql", str(tmp_path), "SELECT 1"]))
    assert f"give a quoted glob: '{tmp_path}/*.duckdb'" in line, "a folder of DBs: the glob to give"


@pytest.mark.parametrize("command", ["sql", "analyze --json"])
def test_a_glob_with_a_damaged_db_names_that_db(lake, command):
    damaged = lake.parent / "d1.duckdb"
    cut_in_half(damaged)
    args = [a.format(lake=lake.parent / "d*.duckdb", tmp=lake.parent) for a in COMMANDS[command]]
    line = one_line_error(runner.invoke(app, args))
    assert f"{damaged} is damaged" in line, line


def test_compare_with_a_damaged_lake_is_one_line_and_exit_2(lake):
    DAMAGES["parquet emptied"](lake)
    result = runner.invoke(app, ["compare", str(lake), str(lake.parent / "d*.duckdb")])
    assert result.exit_code == 2 and "Traceback" not in result.output, result.output
    [line] = result.output.strip().splitlines()
    assert line.startswith("error: ") and "is empty (0 bytes)" in line, line
