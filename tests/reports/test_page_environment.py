"""The report's environment section: each device's facts and each framework version used, for
every device in the DB, read back from the page and compared with the DB by SQL.

The DB has two collected devices with the facts a collect records (CPU, memory, GPU, OS, kernel,
a facts JSON) and runs of three frameworks at different versions, and pCAMP's published table
imported beside them (devices that reported no facts: their rows say so with dashes).
"""

from __future__ import annotations

import html
import re
from pathlib import Path

import duckdb
import pytest
from report_builders import make_report_db

from edgestats.analysis.load.environment import load_environment
from edgestats.analysis.load.overview import load_overview
from edgestats.reports import write_report
from edgestats.reports.units import number_cell

SAMPLES = Path(__file__).resolve().parents[2] / "sample_data"
FACTS = {
    "pi5": (
        "Cortex-A76",
        8 * 1024**3,
        None,
        "Debian GNU/Linux 12",
        "6.6.31+rpt-rpi-2712",
        '{"board": "Pi 5"}',
    ),
    "jetson-nano": ("Cortex-A57", 4 * 1024**3, "Maxwell 128", "Ubuntu 18.04", "4.9.253-tegra", "{}"),
}
VERSIONS = {"pytorch": "2.5.1", "onnxruntime": "1.20.1", "tflite": "2.18.0", "tensorflow": "2.17.0"}


@pytest.fixture(scope="module")
def db(tmp_path_factory) -> Path:
    from edgestats.imports.importer import import_results

    path = make_report_db(
        tmp_path_factory.mktemp("env") / "r.duckdb",
        n_inference_runs=6,
        device_names=tuple(FACTS),
        with_power=False,
    )
    with duckdb.connect(str(path)) as con:
        for name, (cpu, mem, gpu, os_, kernel, facts) in FACTS.items():
            con.execute(
                "UPDATE devices SET cpu_model = ?, mem_total_bytes = ?, gpu = ?, os = ?, kernel = ?, "
                "facts = ? WHERE name = ?",
                [cpu, mem, gpu, os_, kernel, facts, name],
            )
        for framework, version in VERSIONS.items():
            con.execute("UPDATE runs SET framework_version = ? WHERE framework = ?", [version, framework])
    import_results(path, SAMPLES / "pcamp_inference.csv", kind="inference")
    return path


def section(page: str) -> str:
    match = re.search(r'<section id="environment">(.*?)</section>', page, re.S)
    assert match, "the page has an environment section"
    return match.group(1)


def rows_of(part: str, table: str, device: str) -> list[str]:
    """The visible text of `table`'s rows of `device` (matched by its escaped filter attribute)."""
    body = re.search(rf'<table class=sortable id="table-environment-{table}">(.*?)</table>', part, re.S)
    assert body, f"the {table} table"
    rows = re.findall(rf'<tr data-f-device="{re.escape(html.escape(device))}"[^>]*>(.*?)</tr>', body.group(1))
    return [html.unescape(re.sub(r"<[^>]+>", " ", r)) for r in rows]


@pytest.mark.slow
def test_every_device_shows_its_facts_and_framework_versions(db, tmp_path):
    files = write_report(tmp_path / "out", {}, load_overview(db), None, environment=load_environment(db))
    part = section(files.index.read_text())
    with duckdb.connect(str(db), read_only=True) as con:
        devices = con.execute(
            "SELECT name, cpu_model, mem_total_bytes, gpu, os, kernel FROM devices ORDER BY name"
        ).fetchall()
        software = con.execute(
            "SELECT DISTINCT d.name, r.framework, r.framework_version FROM runs r JOIN devices d "
            "USING (device_id) WHERE r.status IN ('ok', 'diverged')"
        ).fetchall()
    assert len(devices) >= 7, "two collected devices and pCAMP's"
    for name, cpu, mem, gpu, os_, kernel in devices:
        (row,) = rows_of(part, "devices", name)
        facts = [cpu, gpu, os_, kernel, None if mem is None else number_cell(mem, "mem_total_bytes")]
        missing = [f for f in facts if f is not None and str(f) not in row]
        assert not missing, f"{name}: {missing} not in its row {row!r}"
    assert "Pi 5" in rows_of(part, "devices", "pi5")[0], "a fact from the facts JSON"
    for name, framework, version in software:
        rows = [r for r in rows_of(part, "software", name) if framework in r]
        assert rows, f"{name} / {framework}: no software row"
        assert version is None or any(version in r for r in rows), f"{name} / {framework} {version}"


def test_without_the_environment_the_overview_devices_are_listed(tmp_path):
    from edgestats.analysis.load.overview import DeviceFacts, Overview

    overview = Overview(
        "x.duckdb", [DeviceFacts("<b>pi</b>", "aarch64", "Cortex-A76", 4, 3)], {}, None, None, []
    )
    part = section(write_report(tmp_path / "out", {}, overview).index.read_text())
    (row,) = rows_of(part, "devices", "<b>pi</b>")
    assert "<b>pi</b>" in row and "Cortex-A76" in row and "<b>" not in part, "escaped, with its facts"
    assert "software versions were not loaded" in part
