"""Naming a device: `collect --device-name NAME` (sweep key device_name) names it, the name is its
identity (the device-id rule on the name), a later collect on the same machine without the flag
reuses it, and doctor says how the name was chosen (collectors/host/device_name.py).

The collects are real (ONNX Runtime, cnn9, 3 steady inferences, no sampler), into a real DB; the
remembered name lives in a per-test XDG_CONFIG_HOME.
Cost: about 25 s of test time (two real collects and a third that runs nothing; a busy 2-core machine).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from edgestats.cli import app
from edgestats.collectors.host.device_name import (
    DeviceNameError,
    check_device_name,
    choose_name,
    how_named,
    remember,
    remembered,
)
from edgestats.collectors.host.facts import read_device_facts
from edgestats.collectors.sweep import build_sweep
from edgestats.contracts import device_uuid
from edgestats.reports.terminal.doctor import render_text
from edgestats.store.results import Store

MACHINE = "75226000-1e22-5fcd-89b9-be9c454f2334"  # a machine-id's device id


def test_a_given_name_is_the_device_id_rule_on_the_name_and_the_host_name_keeps_the_machine_id(tmp_path):
    path = tmp_path / "device.json"
    named = choose_name("  lab-pi-3 ", "vm", MACHINE, path=path)
    assert (named.name, named.source, named.device_id) == ("lab-pi-3", "flag", device_uuid("lab-pi-3"))
    unnamed = choose_name(None, "vm", MACHINE, path=path)
    assert (unnamed.name, unnamed.source, unnamed.device_id, unnamed.note) == (
        "vm",
        "hostname",
        MACHINE,
        None,
    )


def test_a_remembered_name_is_reused_on_its_machine_only_and_a_damaged_file_says_why(tmp_path):
    path = tmp_path / "config" / "device.json"
    assert remember("lab-pi-3", MACHINE, path) is None
    assert json.loads(path.read_text())["machine"] == MACHINE
    again = choose_name(None, "vm", MACHINE, path=path)
    assert (again.name, again.source, again.device_id) == ("lab-pi-3", "remembered", device_uuid("lab-pi-3"))
    assert again.note.startswith(f"remembered in {path} (set 20")
    # under a fake root (another machine's files) nothing of this machine's is used
    assert choose_name(None, "vm", MACHINE, path=path, live=False).source == "hostname"
    other = choose_name(None, "pi", str(device_uuid("other")), path=path)
    assert (other.name, other.source) == ("pi", "hostname")
    assert "names another machine's device (lab-pi-3)" in other.note
    path.write_text("{not json")
    assert (
        remembered(MACHINE, path)[0] is None
        and "cannot be used (it is not JSON: " in remembered(MACHINE, path)[1]
    )
    blocked = tmp_path / "file"
    blocked.write_text("")
    assert "is not remembered" in remember("lab-pi-3", MACHINE, blocked / "device.json")


@pytest.mark.parametrize("bad", ["", "   ", "lab\npi", "x" * 65])
def test_a_name_that_cannot_name_a_device_is_refused_in_one_line(bad):
    with pytest.raises(DeviceNameError, match="give a printable name of 1 to 64 characters"):
        check_device_name(bad)


def test_the_sweep_key_device_name_is_a_setting():
    sweep = build_sweep({"framework": "onnxruntime", "model": "cnn9", "device_name": "pi5-lab-3"})
    assert sweep.settings["device_name"] == "pi5-lab-3" and "device_name" not in sweep.axes


def test_doctor_says_how_the_name_was_chosen():
    facts = {"facts": {"device_name_source": "remembered", "device_name_note": "remembered in F (set T)"}}
    assert how_named({"name": "lab-pi-3", **facts}) == "lab-pi-3 (remembered: remembered in F (set T))"
    assert (
        how_named({"name": "lab-pi-3", "facts": {"device_name_source": "flag"}}) == "lab-pi-3 (--device-name)"
    )
    assert how_named({"name": "vm", "facts": {}}) == "vm (host name)"


def collect(db: Path, cache: Path, config: Path, *extra: str):
    args = [
        "collect",
        "-f",
        "onnxruntime",
        "-m",
        "cnn9",
        "--warmup",
        "1",
        "--sample-hz",
        "0",
        "--power",
        "none",
    ]
    return CliRunner().invoke(
        app, [*args, "--db", str(db), "--cache-dir", str(cache), *extra], env={"XDG_CONFIG_HOME": str(config)}
    )


@pytest.mark.frameworks
def test_collect_stores_the_given_name_and_the_next_collect_here_reuses_it(
    tmp_path, model_cache, monkeypatch
):
    db, config = tmp_path / "r.duckdb", tmp_path / "config"
    first = collect(db, model_cache, config, "-n", "3", "--device-name", "lab-pi-3")
    assert first.exit_code == 0, first.output
    second = collect(db, model_cache, config, "-n", "4")  # another configuration, no flag
    assert second.exit_code == 0, second.output
    # said before the runs: a name given once names every later collect here
    assert f"device: lab-pi-3, remembered in {config / 'edgestats' / 'device.json'} (set 20" in second.output
    assert "; --device-name names it otherwise" in second.output and "device: " not in first.output
    with Store.open(db, read_only=True) as store:
        runs = store.con.execute(
            "SELECT r.iterations, d.name, r.device_id::VARCHAR, d.facts->>'$.device_name_source' "
            "FROM runs r JOIN devices d USING (device_id) ORDER BY r.iterations"
        ).fetchall()
        devices = store.con.execute("SELECT count(*) FROM devices").fetchone()[0]
    lab = str(device_uuid("lab-pi-3"))
    assert runs == [(3, "lab-pi-3", lab, "flag"), (4, "lab-pi-3", lab, "flag")] and devices == 1
    # what doctor shows on this machine now, and that the name was kept for this machine's id
    monkeypatch.setenv("XDG_CONFIG_HOME", str(config))
    device = read_device_facts()
    assert (device["name"], device["device_id"]) == ("lab-pi-3", lab)
    assert "  name        lab-pi-3 (remembered: remembered in " in render_text(
        {
            "edgestats_version": "x",
            "python": {"version": "3", "executable": "p"},
            "device": device,
            "probes": {},
        }
    )
    kept = json.loads((config / "edgestats" / "device.json").read_text())
    assert kept["name"] == "lab-pi-3" and kept["machine"] == device["facts"]["machine_device_id"]
    # a config folder that names another machine's device: the host name, and collect says why
    (config / "edgestats" / "device.json").write_text(json.dumps({**kept, "machine": str(device_uuid("x"))}))
    third = collect(db, model_cache, config, "-n", "3")  # already stored: runs nothing
    assert third.exit_code == 0, third.output
    assert "warning: " in third.output and "names another machine's device (lab-pi-3)" in third.output
