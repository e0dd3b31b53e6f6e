"""Lakes are inputs like a DB file in every output mode: `analyze` as text, --json and --out (the
report's header and the terminal's device order read devices, runs and the overview through the
lake's views), `compare` with --out, `sql` and the Python API, over an export folder and over a
quoted glob of DBs."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from export_builders import two_device_lake
from typer.testing import CliRunner

import edgestats
from edgestats.cli import app

runner = CliRunner()
pytestmark = pytest.mark.xdist_group("lake_inputs")  # one worker builds the module's fleet, once
DEVICES = ("dev-0", "dev-1")


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Two devices' DBs, and a lake: the first exported, the second appended. Read only."""
    folder = tmp_path_factory.mktemp("inputs")
    return {"lake": two_device_lake(folder, DEVICES, seed_step=5), "glob": folder / "d*.duckdb"}


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["lake", "glob"])
def test_analyze_out_writes_the_report_of_every_device(fleet, kind, tmp_path):
    result = runner.invoke(
        app, ["analyze", str(fleet[kind]), "--only", "summary", "--out", str(tmp_path / "report")]
    )
    assert result.exit_code == 0, result.output
    page = (tmp_path / "report" / "index.html").read_text()
    assert all(device in page for device in DEVICES), "the header lists every device of the lake"
    analysis = json.loads((tmp_path / "report" / "analysis.json").read_text())
    assert {row["group"]["device"] for row in analysis["summary"]} == set(DEVICES)


@pytest.mark.parametrize("kind", ["lake", "glob"])
def test_analyze_text_lists_every_device(fleet, kind):
    result = runner.invoke(app, ["analyze", str(fleet[kind]), "--only", "summary"])
    assert result.exit_code == 0, result.output
    assert all(device in result.stdout for device in DEVICES)


def test_analyze_json_and_out_together_over_a_lake(fleet, tmp_path):
    result = runner.invoke(
        app, ["analyze", str(fleet["lake"]), "--only", "summary", "--json", "--out", str(tmp_path / "r")]
    )
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["summary"] and (tmp_path / "r" / "index.html").is_file()


def test_compare_a_lake_with_a_glob_writes_its_page(fleet, tmp_path):
    """The same runs on both sides: no regression, and the page's header reads both inputs."""
    result = runner.invoke(
        app, ["compare", str(fleet["lake"]), str(fleet["glob"]), "--out", str(tmp_path / "c")]
    )
    assert result.exit_code == 0, result.output
    assert "no significant regression" in result.stdout and (tmp_path / "c" / "index.html").is_file()


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["lake", "glob"])
def test_sql_and_the_api_read_a_lake(fleet, kind):
    query = "SELECT device, count(*) AS runs FROM run_summary GROUP BY ALL ORDER BY ALL"
    result = runner.invoke(app, ["sql", str(fleet[kind]), query, "--format", "csv"])
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[1:] == ["dev-0,4", "dev-1,4"]
    with edgestats.open(str(fleet[kind])) as results:
        assert results.sql(query).rows() == [("dev-0", 4), ("dev-1", 4)]
        assert set(results.analyze("summary").frame["device"].to_list()) == set(DEVICES)


def test_a_lake_copied_elsewhere_reads_the_same(fleet, tmp_path):
    """The manifest lists files by paths relative to the folder: a moved lake still reads."""
    shutil.copytree(fleet["lake"], tmp_path / "moved")
    query = "SELECT count(*) FROM latencies"
    before = runner.invoke(app, ["sql", str(fleet["lake"]), query, "--format", "csv"])
    after = runner.invoke(app, ["sql", str(tmp_path / "moved"), query, "--format", "csv"])
    assert after.exit_code == 0 and after.stdout == before.stdout, after.output
