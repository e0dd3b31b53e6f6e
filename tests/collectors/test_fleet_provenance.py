"""A run's provenance in a fleet (collectors/core/provenance.py, collectors/host/container.py):
collect's --device-class, --unit-id and --tag, from flags, a sweep file or the Python API's
keywords, checked in one line and stored on every run; and the per-run host facts (OS image,
kernel, container kind) read through fake trees.

One real collect through the CLI (ONNX Runtime, cnn9, 3 inferences, no sampler).
Cost: about 10 s of test time (one real collect on a busy 2-core machine).
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest
from recovery_fakes import died, ended_process_pid, make_orchestrator, write_spool
from typer.testing import CliRunner

from edgestats.cli import app
from edgestats.collectors.core.runconfig import RunConfig
from edgestats.collectors.core.sweep_limits import SweepError
from edgestats.collectors.host.container import read_container, read_run_host
from edgestats.collectors.options import COLLECT_OPTIONS
from edgestats.collectors.sweep import sweep_of
from edgestats.options import check_keywords
from edgestats.store.results import Store

BASE = {"framework": ["onnxruntime"], "model": ["cnn9"]}


# -- the per-run host facts, from fake trees -------------------------------------------------------


def tree(tmp_path: Path, files: dict[str, str | bytes]) -> Path:
    root = tmp_path / "root"
    for rel, content in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content if isinstance(content, bytes) else content.encode())
    root.mkdir(parents=True, exist_ok=True)
    return root


V1_DOCKER = "12:memory:/docker/3f1e2a\n11:cpu,cpuacct:/docker/3f1e2a\n"
V1_K8S = "9:pids:/kubepods/besteffort/pod1234/abcd\n"
V1_LXC = "5:cpuset:/lxc/web01\n"
HOST_V2 = "0::/init.scope\n"


@pytest.mark.parametrize(
    "files, kind, evidence",
    [
        ({".dockerenv": ""}, "docker", "/.dockerenv"),
        ({"run/.containerenv": "engine=podman"}, "podman", "/run/.containerenv"),
        ({"proc/1/cgroup": V1_DOCKER}, "docker", "/proc/1/cgroup"),
        ({"proc/1/cgroup": V1_K8S}, "kubernetes", "/proc/1/cgroup"),
        ({"proc/1/cgroup": V1_LXC}, "lxc", "/proc/1/cgroup"),
        (
            {"proc/1/cgroup": HOST_V2, "proc/1/environ": b"HOME=/\0container=systemd-nspawn\0"},
            "systemd-nspawn",
            "/proc/1/environ",
        ),
        ({"proc/1/cgroup": HOST_V2, "proc/1/environ": b"HOME=/\0TERM=linux\0"}, None, None),
        ({}, None, None),
    ],
)
def test_the_container_kind_is_read_from_what_its_engine_leaves(tmp_path, files, kind, evidence):
    found = read_container(tree(tmp_path, files))
    assert found == {"inside": kind is not None, "kind": kind, "evidence": evidence}


def test_the_os_image_and_kernel_come_from_the_tree(tmp_path):
    root = tree(
        tmp_path,
        {
            "etc/os-release": 'NAME="Debian GNU/Linux"\nPRETTY_NAME="Raspberry Pi OS (bookworm)"\n',
            "proc/sys/kernel/osrelease": "6.6.31+rpt-rpi-2712\n",
            "proc/1/cgroup": HOST_V2,
        },
    )
    assert read_run_host(root) == {
        "os_image": "Raspberry Pi OS (bookworm)",
        "kernel": "6.6.31+rpt-rpi-2712",
        "container": {"inside": False, "kind": None, "evidence": None},
    }
    assert read_run_host(tree(tmp_path / "bare", {}))["os_image"] is None


# -- the options --------------------------------------------------------------------------------


def test_a_sweep_file_gives_them_and_flags_override_its_keys(tmp_path):
    path = tmp_path / "sweep.toml"
    path.write_text(
        '[sweep]\nframework = ["onnxruntime"]\nmodel = ["cnn9"]\ndevice_class = " pi5 "\n'
        'unit_id = "SN-0001"\ntags = { lab = "b2", rack = 3 }\n'
    )
    settings = sweep_of(path, COLLECT_OPTIONS, {}).settings
    assert (settings["device_class"], settings["unit_id"], settings["tags"]) == (
        "pi5",
        "SN-0001",
        {"lab": "b2", "rack": "3"},
    )
    flags = {"unit_id": "SN-0002", "tags": ["lab=b3", "psu = official"]}
    settings = sweep_of(path, COLLECT_OPTIONS, flags).settings
    assert (settings["device_class"], settings["unit_id"], settings["tags"]) == (
        "pi5",
        "SN-0002",
        {"lab": "b3", "psu": "official"},
    )
    # the Python API's keywords are the options' names; tags may be a mapping there
    check_keywords(COLLECT_OPTIONS, {"device_class": "pi5", "unit_id": "x", "tags": {"a": "b"}}, "collect")
    assert sweep_of(None, COLLECT_OPTIONS, {**BASE, "tags": {"a": "b"}}).settings["tags"] == {"a": "b"}


@pytest.mark.parametrize(
    "values, says",
    [
        ({"device_class": ""}, "device_class (--device-class) '' is empty"),
        ({"unit_id": "x" * 65}, "unit_id (--unit-id) 'xxxx"),
        ({"unit_id": "a\tb"}, "control character (U+0009)"),
        ({"tags": ["lab"]}, "--tag 'lab': expected KEY=VALUE"),
        ({"tags": ["2x=a"]}, "the key '2x' is not an identifier"),
        ({"tags": ["lab=a\nb"]}, "tags.lab: the value contains a control character"),
        ({"tags": {"lab": ["a"]}}, "tags.lab: expected text, got list"),
    ],
)
def test_a_bad_value_is_refused_in_one_line(values, says):
    with pytest.raises(SweepError, match=None) as caught:
        sweep_of(None, COLLECT_OPTIONS, {**BASE, **values})
    assert says in str(caught.value) and "\n" not in str(caught.value)


def test_the_cli_refuses_a_bad_tag_in_one_line(tmp_path):
    result = CliRunner().invoke(
        app, ["collect", "-f", "onnxruntime", "-m", "cnn9", "--db", str(tmp_path / "r.duckdb"), "--tag", "x"]
    )
    assert result.exit_code != 0 and "Traceback" not in result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and "--tag 'x': expected KEY=VALUE" in lines[0]


# -- stored on every run ------------------------------------------------------------------------


def test_a_recovered_run_keeps_the_provenance_its_record_held(tmp_path, monkeypatch):
    fake = tree(tmp_path, {".dockerenv": "", "etc/os-release": 'PRETTY_NAME="Ubuntu 22.04.4 LTS"\n'})
    monkeypatch.setattr("edgestats.collectors.orchestrator.read_run_host", lambda: read_run_host(fake))
    orchestrator = make_orchestrator(tmp_path)
    settings = {"device_class": "orin", "unit_id": "A7", "tags": {"lab": "b2"}}
    record = orchestrator.begin(
        RunConfig(framework="onnxruntime", model="cnn9", iterations=5, warmup=1, threads=2),
        sweep_id=uuid.uuid4(),
        sweep={"shuffle_seed": 1, "axes": {}, "settings": settings},
    )
    write_spool(
        orchestrator.spool_dir / f"{record.run_id}.jsonl", ended_process_pid(), n_latencies=5, finished=True
    )
    died(orchestrator).recover_orphans()
    with Store.open(orchestrator.db_path, read_only=True) as store:
        row = store.con.execute("SELECT device_class, unit_id, tags, environment FROM runs").fetchone()
    env = json.loads(row[3])
    assert row[:2] == ("orin", "A7") and json.loads(row[2]) == {"lab": "b2"}
    assert env["os_image"] == "Ubuntu 22.04.4 LTS" and env["container"]["kind"] == "docker"
    assert "kernel" in env and env["python"]


@pytest.mark.frameworks
def test_collect_stores_the_class_unit_and_tags_on_every_run(tmp_path, model_cache):
    sweep = tmp_path / "sweep.toml"
    sweep.write_text('[sweep]\ndevice_class = "pi5"\ntags = { lab = "b2" }\n')
    db = tmp_path / "r.duckdb"
    args = [
        "collect",
        str(sweep),
        "-f",
        "onnxruntime",
        "-m",
        "cnn9",
        "-n",
        "3",
        "--warmup",
        "1",
        "--repeat",
        "2",
    ]
    args += ["--sample-hz", "0", "--power", "none", "--db", str(db), "--cache-dir", str(model_cache)]
    result = CliRunner().invoke(
        app, [*args, "--unit-id", "SN-42", "--tag", "psu=official"], env={"XDG_CONFIG_HOME": str(tmp_path)}
    )
    assert result.exit_code == 0, result.output
    with Store.open(db, read_only=True) as store:
        rows = store.con.execute(
            "SELECT device_class, unit_id, tags->>'$.psu', environment->>'$.os_image', "
            "environment->'$.container'->>'$.inside', environment->>'$.kernel' FROM runs"
        ).fetchall()
    host = read_run_host()
    expected = (
        "pi5",
        "SN-42",
        "official",
        host["os_image"],
        str(host["container"]["inside"]).lower(),
        host["kernel"],
    )
    assert rows == [expected] * 2
