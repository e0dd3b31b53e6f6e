"""`edgestats analyze --only fleet` on a DB of a small fleet (tests/fleet_builders.py): the unit
planted 10 % slower is flagged in words, the identical class flags none, the JSON has the
documented entries, and a DB whose runs have no device class says so in one line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from answers_builders import make_answers_db
from fleet_builders import make_fleet_db
from typer.testing import CliRunner

from edgestats.cli import app

runner = CliRunner()


@pytest.fixture(scope="module")
def fleet_db(tmp_path_factory) -> Path:
    return make_fleet_db(tmp_path_factory.mktemp("fleet-cli") / "fleet.duckdb")


def test_the_slow_unit_is_flagged_and_the_identical_class_is_not(fleet_db):
    result = runner.invoke(app, ["analyze", str(fleet_db), "--only", "fleet", "--json"])
    assert result.exit_code == 0, result.output
    entries = {e["group"]["device_class"]: e for e in json.loads(result.stdout)["fleet"]}
    assert set(entries) == {"pi5", "orin"}
    pi5, orin = entries["pi5"], entries["orin"]
    assert {r["device"]: r["verdict"] for r in pi5["unit_ratios"]} == {
        f"pi5-{u:02d}": ("slower" if u == 3 else "as its class") for u in range(1, 6)
    }
    slow = next(r for r in pi5["unit_ratios"] if r["flagged"])
    assert 1.05 < slow["ratio"] < 1.16 and slow["ratio_ci_low"] > 1 and slow["p_holm"] < 0.05
    assert not any(r["flagged"] for r in orin["unit_ratios"])
    between = pi5["components"][0]
    assert between["metric"] == "between_unit_sd_pct" and 0 <= between["ci_low"] <= between["ci_high"]
    assert pi5["n"] == 25 and pi5["units"] == 5 and orin["n"] == 12


def test_the_text_output_says_it_in_one_sentence_per_class(fleet_db):
    result = runner.invoke(app, ["analyze", str(fleet_db), "--only", "fleet"], env={"COLUMNS": "300"})
    assert result.exit_code == 0, result.output
    text = " ".join(result.stdout.split())
    assert "pi5-03 ran 1.1" in text and "as long as its class: slower" in text
    assert "orin / onnxruntime / cnn9" in text and "no unit differs from its class" in text


def test_runs_without_a_device_class_are_one_line(tmp_path):
    db = make_answers_db(tmp_path / "a.duckdb", runs=2)
    result = runner.invoke(app, ["analyze", str(db), "--only", "fleet"], env={"COLUMNS": "300"})
    assert result.exit_code == 0, result.output
    (line,) = result.stdout.strip().splitlines()
    assert line.startswith("fleet: skipped") and "--device-class" in line
