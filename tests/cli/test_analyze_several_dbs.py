"""`edgestats analyze a.duckdb b.duckdb`: several DB files as arguments give what their quoted glob
gives; one file and a glob still work."""

from __future__ import annotations

import json

from builders import make_results_db
from typer.testing import CliRunner

from edgestats.cli import app


def summary(*args: str) -> list:
    result = CliRunner().invoke(app, ["analyze", *args, "--only", "summary", "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.output)["summary"]


def test_several_dbs_are_read_as_their_glob_is(tmp_path):
    a = make_results_db(tmp_path / "a.duckdb", device_name="pi5-01")
    b = make_results_db(tmp_path / "b.duckdb", device_name="pi5-02", seed0=50)
    both = summary(str(a), str(b))
    assert {e["group"]["device"] for e in both} == {"pi5-01", "pi5-02"}
    assert both == summary(str(tmp_path / "*.duckdb"))
    assert {e["group"]["device"] for e in summary(str(a))} == {"pi5-01"}
