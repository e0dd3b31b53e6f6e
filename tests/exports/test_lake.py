"""Results lakes: `sql` and `analyze` over an export folder grown with `export --append`, or over a
glob of DBs, give the answers the merged file gives; appending is idempotent; an interrupted
append is never read and is cleaned up by the next one."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest
from builders import make_results_db
from cli_asserts import one_line_error
from json_compare import same_to_12_digits
from typer.testing import CliRunner

from edgestats.cli import app
from edgestats.exports.append import append_parquet
from edgestats.exports.merge import merge
from edgestats.exports.parquet import MANIFEST_NAME, export_parquet
from edgestats.store.query import run_query

runner = CliRunner()
pytestmark = pytest.mark.xdist_group("lake")  # one worker builds the module's fleet, once
QUESTIONS = [
    "SELECT device, framework, model, count(*) AS runs, sum(n_latencies) AS n, "
    "round(avg(latency_median_ms), 9) AS median "
    "FROM run_summary GROUP BY ALL ORDER BY ALL",
    "SELECT (SELECT count(*) FROM latencies) AS l, (SELECT count(*) FROM samples) AS s, "
    "(SELECT count(*) FROM phases) AS p, "
    "(SELECT count(*) FROM epochs) AS e, (SELECT count(*) FROM batches) AS b, "
    "(SELECT count(*) FROM devices) AS d",
    "SELECT run_id, status, started_at, config->>'$.seed' AS seed FROM runs ORDER BY run_id",
    "SELECT * FROM training_summary ORDER BY run_id",
]


@pytest.fixture(scope="module")
def fleet_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Three devices' DBs, their merged file, and a lake made by exporting the first and
    appending the others (the second twice, and the merged file, which holds them all, last).
    Built once per module: the build is most of this module's time."""
    folder = tmp_path_factory.mktemp("fleet")
    dbs = [
        make_results_db(folder / f"device{i}.duckdb", device_name=f"device-{i}", seed0=10 * i)
        for i in range(3)
    ]
    merged = folder / "merged.duckdb"
    merge(merged, dbs)
    lake = folder / "lake"
    export_parquet(dbs[0], lake)
    for db in (dbs[1], dbs[2], dbs[1], merged):
        append_parquet(db, lake)
    return folder


@pytest.fixture
def fleet(fleet_template: Path, tmp_path: Path) -> dict[str, Path]:
    """The test's own copy of the fleet, in its tmp_path (tests append to the lake and add files)."""
    shutil.copytree(fleet_template, tmp_path, dirs_exist_ok=True)
    return {
        "merged": tmp_path / "merged.duckdb",
        "lake": tmp_path / "lake",
        "glob": tmp_path / "device*.duckdb",
        "all": tmp_path / "*.duckdb",
    }


def answers(source: Path) -> list:
    return [run_query(source, question).rows for question in QUESTIONS]


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["lake", "glob", "all"])
def test_sql_over_a_lake_answers_as_the_merged_file_does(fleet, kind):
    """ "all" globs the device DBs and the merged file: every run is in two files and counts once."""
    assert answers(fleet[kind]) == answers(fleet["merged"])


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["lake", "glob"])
def test_analyze_over_a_lake_equals_analyze_over_the_merged_file(fleet, kind):
    merged = runner.invoke(app, ["analyze", str(fleet["merged"]), "--json"])
    over_lake = runner.invoke(app, ["analyze", str(fleet[kind]), "--json"])
    assert merged.exit_code == 0 and over_lake.exit_code == 0, over_lake.output
    assert same_to_12_digits(json.loads(over_lake.stdout), json.loads(merged.stdout)) == []
    assert len(json.loads(merged.stdout)["summary"]) == 3 * 2, "three devices, two frameworks"


def folder_digest(folder: Path) -> dict[str, str]:
    return {
        p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def test_appending_the_same_device_twice_adds_nothing(fleet, tmp_path):
    before = folder_digest(fleet["lake"])
    result = runner.invoke(
        app, ["export", str(tmp_path / "device1.duckdb"), "--parquet", str(fleet["lake"]), "--append"]
    )
    assert result.exit_code == 0 and "nothing to add" in result.output, result.output
    assert folder_digest(fleet["lake"]) == before
    manifest = json.loads((fleet["lake"] / MANIFEST_NAME).read_text())
    assert [sum(a["rows_added"].values()) > 0 for a in manifest["appends"]] == [True, True], (
        "two appends added rows"
    )


@pytest.mark.slow
def test_an_interrupted_append_is_never_read_and_is_cleaned_up_by_the_next(fleet, tmp_path):
    """Files an append wrote before it was killed are listed in no manifest: readers that go by
    the manifest never see them, and the next append deletes them."""
    runs = fleet["lake"] / "runs"
    partition = next(runs.glob("device_id=*"))
    stray = partition / "part-deadbeef0000-0.parquet"
    stray.write_bytes(next(partition.glob("*.parquet")).read_bytes())  # a second copy of those runs
    (fleet["lake"] / ".append-deadbeef0000").mkdir()
    assert answers(fleet["lake"]) == answers(fleet["merged"])
    another = make_results_db(tmp_path / "late.duckdb", device_name="late", seed0=99)
    append_parquet(another, fleet["lake"])
    assert not stray.exists() and not (fleet["lake"] / ".append-deadbeef0000").exists()
    assert run_query(fleet["lake"], "SELECT count(DISTINCT device) FROM run_summary").rows == [(4,)]


def test_the_sandbox_holds_over_a_lake(fleet):
    result = runner.invoke(app, ["sql", str(fleet["lake"]), "SELECT * FROM read_csv('/etc/passwd')"])
    assert "disabled" in one_line_error(result) or "refused" in one_line_error(result)
    copy = runner.invoke(app, ["sql", str(fleet["lake"]), f"COPY (SELECT 1) TO '{fleet['lake']}/x.csv'"])
    assert copy.exit_code != 0 and not (fleet["lake"] / "x.csv").exists()


@pytest.mark.parametrize(
    "args, says",
    [
        (["sql", "{tmp}/nothing-*.duckdb", "SELECT 1"], "no file matches this pattern"),
        (
            ["export", "{tmp}/device0.duckdb", "--parquet", "{tmp}/lake", "--append", "--overwrite"],
            "give one of them",
        ),
        (["export", "{tmp}/device0.duckdb", "--parquet", "{tmp}", "--append"], "holds no edgestats export"),
    ],
)
def test_lake_mistakes_get_one_line(fleet, tmp_path, args, says):
    result = runner.invoke(app, [a.format(tmp=tmp_path) for a in args])
    assert says in one_line_error(result)
