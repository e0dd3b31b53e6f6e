"""ina260 (the plug-in guide's example power source) on a fake hwmon tree, through the real
parsing and selection code. tests/test_plugin_guide.py writes this file as
tests/collectors/test_power_ina260.py in a copy of the repository."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from power_fakes import fake_pynvml

from edgestats.collectors.power.ina260 import Ina260Source
from edgestats.collectors.power.selection import describe_sources, select_power_source


def make_hwmon_tree(root: Path, microwatts: int) -> None:
    """A temperature sensor first (not ours), then the INA260."""
    for index, name in enumerate(["coretemp", "ina260"]):
        device = root / "sys" / "class" / "hwmon" / f"hwmon{index}"
        device.mkdir(parents=True)
        (device / "name").write_text(name + "\n")
    (device / "power1_input").write_text(f"{microwatts}\n")


@pytest.fixture
def no_nvml(monkeypatch):
    monkeypatch.setitem(
        sys.modules, "pynvml", fake_pynvml([], [], init_error="NVML Shared Library Not Found")
    )


def test_reads_the_board_rail_in_watts(tmp_path):
    make_hwmon_tree(tmp_path, 5_120_000)
    source = Ina260Source(tmp_path)
    assert source.is_available() == (True, None) and source.rails() == ["board"]
    assert source.read(7).metrics() == [("power_w:board", 5.12)] and source.read(7).t_ns == 7


def test_says_why_not_without_the_chip(tmp_path):
    available, why = Ina260Source(tmp_path).is_available()
    assert not available and "no INA260 power monitor" in why


def test_chosen_by_name_and_by_auto_and_listed_for_doctor(tmp_path, no_nvml):
    make_hwmon_tree(tmp_path, 4_000_000)
    for spec in ("ina260", "auto"):
        source, chosen, _ = select_power_source(spec, tmp_path)
        assert chosen == "ina260" and isinstance(source, Ina260Source)
    row = next(row for row in describe_sources(tmp_path) if row["name"] == "ina260")
    assert row["usable"] and row["rails"] == ["board"]
