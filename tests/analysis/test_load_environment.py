"""The environment of the report (devices' facts, software versions), read from a DB written
through the real Store, under the analysis' own selection of runs."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from edgestats.analysis.load.environment import load_environment
from edgestats.analysis.load.frames import AnalysisInputError
from edgestats.store.results import Store

PI_FACTS = {
    "name": "pi5",
    "hostname": "pi5-lab",
    "arch": "aarch64",
    "cpu_model": "Cortex-A76",
    "cores": 4,
    "mem_total_bytes": 8 * 1024**3,
    "gpu": None,
    "os": "Debian GNU/Linux 12 (bookworm)",
    "kernel": "6.6.31+rpt-rpi-2712",
    "power_mode": "ondemand",
    "facts": {
        "board": "Raspberry Pi 5 Model B Rev 1.0",
        "python": "3.11.2",
        "cpu_max_freq_khz": 2400000,
        "soc": None,
        "device_id_source": "machine-id",
        "device_name_source": "remembered",
    },
}
VM_FACTS = {
    "name": "vm",
    "hostname": "vm-1",
    "arch": "x86_64",
    "cpu_model": "Intel Xeon",
    "cores": 16,
    "mem_total_bytes": 64 * 1024**3,
    "gpu": "NVIDIA H100",
    "os": "Ubuntu 24.04 LTS",
    "kernel": "6.8.0",
    "facts": {"python": "3.11.9", "cpu_max_freq_khz": "unknown"},
}


def _run(store: Store, device_id: uuid.UUID, framework: str, version: str, **extra) -> None:
    versions = {framework: version, "numpy": "2.1.3"}
    store.write_run(
        {
            "device_id": device_id,
            "kind": "inference",
            "status": extra.pop("status", "ok"),
            "framework": framework,
            "framework_version": version,
            "runtime": framework,
            "model": extra.pop("model", "cnn9"),
            "accelerator": extra.pop("accelerator", "cpu"),
            "environment": {"versions": versions, "python": extra.pop("python", "3.11.2")},
            **extra,
        }
    )


@pytest.fixture(scope="module")
def environment_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Built once: the tests only read it."""
    path = tmp_path_factory.mktemp("environment") / "env.duckdb"
    with Store.open(path) as store:
        pi, vm = store.register_device(PI_FACTS), store.register_device(VM_FACTS)
        store.register_device({"name": "idle-board", "cores": 2})  # registered, never ran
        _run(store, pi, "onnxruntime", "1.20.1")
        _run(store, pi, "onnxruntime", "1.20.1", python="3.11.4", edgestats_version="0.0.9")
        _run(store, pi, "tflite", "2.18.0", model="squeezenet")
        _run(store, pi, "tflite", "2.18.0", status="error")  # not a result: left out, as analyze does
        _run(store, vm, "onnxruntime", "1.19.0", accelerator="cuda")
        _run(store, vm, "onnxruntime", "1.19.0", accelerator="cpu")
    return path


def test_devices_have_every_stored_fact(environment_db: Path):
    devices = load_environment(environment_db)["devices"]
    assert devices["device"].to_list() == ["idle-board", "pi5", "vm"], "every device of the DB, by name"
    pi = devices.row(1, named=True)
    for column in ("hostname", "arch", "cpu_model", "cores", "mem_total_bytes", "os", "kernel", "power_mode"):
        assert pi[column] == PI_FACTS[column], column
    assert pi["board"] == "Raspberry Pi 5 Model B Rev 1.0" and pi["python"] == "3.11.2", (
        "facts JSON flattened"
    )
    assert pi["accelerators"] == "cpu" and pi["n_runs"] == 3, "ok runs only"
    assert "soc" not in devices.columns, "a fact no device has is no column"
    assert not {"device_id_source", "device_name_source"} & set(devices.columns), "how the id/name was made"
    vm = devices.row(2, named=True)
    assert vm["gpu"] == "NVIDIA H100" and vm["accelerators"] == "cpu, cuda"
    assert devices["cpu_max_freq_khz"].to_list() == [None, "2400000", "unknown"], "mixed types become text"
    assert devices.row(0, named=True)["n_runs"] == 0
    assert devices.columns[-1] == "n_runs"


def test_software_one_row_per_device_framework_runtime_version(environment_db: Path):
    software = load_environment(environment_db)["software"]
    assert software.select("device", "framework", "framework_version", "n_runs").rows() == [
        ("pi5", "onnxruntime", "1.20.1", 2),
        ("pi5", "tflite", "2.18.0", 1),
        ("vm", "onnxruntime", "1.19.0", 2),
    ]
    first = software.row(0, named=True)
    assert first["libraries"] == "numpy 2.1.3", (
        "the other libraries; the framework's own version is its column"
    )
    assert first["python"] == "3.11.2, 3.11.4"
    assert (
        first["edgestats_version"].split(", ")[0] == "0.0.9"
        and len(first["edgestats_version"].split(", ")) == 2
    )


def test_the_analysis_selection_applies(environment_db: Path):
    env = load_environment(environment_db, where="model = 'cnn9'", filters={"device": ["pi5"]})
    assert env["devices"]["device"].to_list() == ["pi5"], "with a selection: only devices with selected runs"
    assert env["devices"]["n_runs"].to_list() == [2]
    assert env["software"].select("framework", "n_runs").rows() == [("onnxruntime", 2)]
    empty = load_environment(environment_db, filters={"framework": ["ncnn"]})
    assert empty["devices"].height == 0 and empty["software"].height == 0
    assert "n_runs" in empty["software"].columns


def test_a_bad_where_is_refused(environment_db: Path):
    with pytest.raises(AnalysisInputError, match="one expression"):
        load_environment(environment_db, where="1 = 1; DROP TABLE runs")
