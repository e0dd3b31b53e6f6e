"""`edgestats export`: what it prints, its help, and its one-line errors."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from edgestats.cli import app
from edgestats.exports.parquet import MANIFEST_NAME, read_manifest

runner = CliRunner()


def test_cli_export_prints_what_it_wrote(results_db: Path, tmp_path: Path):
    out = tmp_path / "export"
    result = runner.invoke(app, ["export", str(results_db), "--parquet", str(out)])
    assert result.exit_code == 0, result.output
    assert "latencies" in result.stdout and "150 rows" in result.stdout and "1 device" in result.stdout
    assert "baselines" in result.stdout and "empty" in result.stdout
    assert f"to {out}" in result.stdout
    assert read_manifest(out)["tables"]["latencies"]["rows"] == 150


def test_cli_export_help():
    result = runner.invoke(app, ["export", "--help"])
    assert result.exit_code == 0
    for text in (
        "--parquet",
        "--overwrite",
        "hive-partitioned",
        "device_id=UUID",
        "read-only",
        MANIFEST_NAME,
    ):
        assert text in result.output, text


def test_cli_refuses_a_non_empty_folder_then_overwrites(results_db: Path, tmp_path: Path):
    out = tmp_path / "export"
    assert runner.invoke(app, ["export", str(results_db), "--parquet", str(out)]).exit_code == 0
    refused = runner.invoke(app, ["export", str(results_db), "--parquet", str(out)])
    assert refused.exit_code == 1
    assert refused.stderr.startswith("error: ") and "--overwrite" in refused.stderr
    assert "Traceback" not in refused.output
    again = runner.invoke(app, ["export", str(results_db), "--parquet", str(out), "--overwrite"])
    assert again.exit_code == 0, again.output
    assert read_manifest(out)["tables"]["runs"]["rows"] == 4


def test_cli_missing_db_is_one_line(tmp_path: Path):
    result = runner.invoke(app, ["export", str(tmp_path / "nope.duckdb"), "--parquet", str(tmp_path / "x")])
    assert result.exit_code == 1
    assert result.stderr.strip().startswith("error: ") and "no such file" in result.stderr
    assert not (tmp_path / "x").exists()


def test_cli_needs_the_parquet_option(results_db: Path):
    result = runner.invoke(app, ["export", str(results_db)])
    assert result.exit_code != 0 and "--parquet" in result.output
