"""Device facts from fake /proc, /sys and /etc trees, read through the real parsers."""

from __future__ import annotations

import json
import platform
import socket
import sys
import types
from pathlib import Path

import pytest

from edgestats.collectors.host.facts import (
    guess_arch,
    parse_cpuinfo,
    parse_nvpmodel_conf,
    read_device_facts,
    read_gpu,
    read_nvml_gpus,
)
from edgestats.contracts import name_uuid
from edgestats.store.results import Store


def make_tree(root: Path, files: dict[str, str | bytes]) -> Path:
    for rel, content in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content)
    return root


def cpuinfo(block: str, n: int, trailer: str = "") -> str:
    return "".join(f"processor\t: {i}\n{block}\n" for i in range(n)) + trailer


X86_BLOCK = (
    "vendor_id\t: GenuineIntel\n"
    "cpu family\t: 6\n"
    "model\t\t: 140\n"
    "model name\t: 11th Gen Intel(R) Core(TM) i7-1165G7 @ 2.80GHz\n"
    "flags\t\t: fpu vme de pse tsc msr pae mce cx8 apic sep mtrr pge mca cmov pat pse36 clflush mmx fxsr "
    "sse sse2 ss ht tm pbe syscall nx pdpe1gb rdtscp lm constant_tsc avx2\n"
)

PI4_BLOCK = """BogoMIPS\t: 108.00
Features\t: fp asimd evtstrm crc32 cpuid
CPU implementer\t: 0x41
CPU architecture: 8
CPU variant\t: 0x0
CPU part\t: 0xd08
CPU revision\t: 3
"""
PI4_TRAILER = """Hardware\t: BCM2835
Revision\t: c03114
Serial\t\t: 10000000a1b2c3d4
Model\t\t: Raspberry Pi 4 Model B Rev 1.4
"""

JETSON_BLOCK = """model name\t: ARMv8 Processor rev 0 (v8l)
BogoMIPS\t: 62.50
Features\t: fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics fphp asimdhp cpuid asimdrdm dcpop
CPU implementer\t: 0x4e
CPU architecture: 8
CPU variant\t: 0x0
CPU part\t: 0x004
CPU revision\t: 0
"""

NVPMODEL_CONF = """# NVIDIA Jetson Xavier NX power modes
< POWER_MODEL ID=0 NAME=MODE_15W_2CORE >
CPU_ONLINE CORE_0 1
CPU_ONLINE CORE_1 1
< POWER_MODEL ID=1 NAME=MODE_15W_4CORE >
CPU_ONLINE CORE_0 1
< POWER_MODEL ID=2 NAME=MODE_15W_6CORE >
CPU_ONLINE CORE_0 1
< POWER_MODEL ID=3 NAME=MODE_10W_2CORE >
CPU_ONLINE CORE_0 1
< PM_CONFIG DEFAULT=2 >
"""


def meminfo(total_kb: int, swap_kb: int = 0) -> str:
    return f"MemTotal:       {total_kb} kB\nMemFree:         1000000 kB\nSwapTotal:      {swap_kb} kB\n"


def laptop_tree(root: Path) -> Path:
    return make_tree(
        root,
        {
            "proc/cpuinfo": cpuinfo(X86_BLOCK, 8),
            "proc/meminfo": meminfo(16_135_000, 2_097_148),
            "proc/sys/kernel/osrelease": "6.5.0-35-generic\n",
            "proc/driver/nvidia/gpus/0000:01:00.0/information": (
                "Model: \t\t NVIDIA GeForce MX450\nIRQ:   151\n"
            ),
            "etc/hostname": "thinkpad\n",
            "etc/machine-id": "0123456789abcdef0123456789abcdef\n",
            "etc/os-release": 'PRETTY_NAME="Ubuntu 22.04.4 LTS"\nNAME="Ubuntu"\n'
            'VERSION_ID="22.04"\nID=ubuntu\n',
            "sys/class/dmi/id/sys_vendor": "LENOVO\n",
            "sys/class/dmi/id/product_name": "20XW0055GE\n",
            "sys/devices/system/cpu/online": "0-7\n",
            "sys/devices/system/cpu/cpu0/cpufreq/scaling_governor": "powersave\n",
            "sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq": "4700000\n",
        },
    )


def pi4_tree(root: Path) -> Path:
    return make_tree(
        root,
        {
            "proc/cpuinfo": cpuinfo(PI4_BLOCK, 4, "\n" + PI4_TRAILER),
            "proc/meminfo": meminfo(3_884_328, 102_396),
            "proc/device-tree/model": b"Raspberry Pi 4 Model B Rev 1.4\x00",
            "proc/sys/kernel/osrelease": "6.1.0-rpi7-rpi-v8\n",
            "etc/hostname": "raspberrypi\n",
            "etc/os-release": 'PRETTY_NAME="Debian GNU/Linux 12 (bookworm)"\nNAME="Debian GNU/Linux"\n'
            'VERSION_ID="12"\nID=debian\n',
            "sys/devices/system/cpu/cpu0/cpufreq/scaling_governor": "ondemand\n",
            "sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq": "1800000\n",
        },
    )


def jetson_tree(root: Path, *, status: str | None = "pmode:0003 fmode:cool\n") -> Path:
    files: dict[str, str | bytes] = {
        "proc/cpuinfo": cpuinfo(JETSON_BLOCK, 6),
        "proc/meminfo": meminfo(7_763_228, 3_881_612),
        "proc/device-tree/model": b"NVIDIA Jetson Xavier NX Developer Kit\x00",
        "proc/device-tree/compatible": b"nvidia,p3509-0000+p3668-0001\x00nvidia,jetson-xavier-nx\x00"
        b"nvidia,tegra194\x00",
        "proc/sys/kernel/osrelease": "4.9.253-tegra\n",
        "etc/hostname": "xavier-nx\n",
        "etc/machine-id": "fedcba9876543210fedcba9876543210\n",
        "etc/os-release": 'NAME="Ubuntu"\nVERSION="18.04.6 LTS (Bionic Beaver)"\n'
        'ID=ubuntu\nVERSION_ID="18.04"\n',
        "etc/nvpmodel.conf": NVPMODEL_CONF,
        "etc/nv_tegra_release": "# R32 (release), REVISION: 7.1, GCID: 29818004, BOARD: t186ref, "
        "EABI: aarch64, DATE: Sat Feb 19 17:07:00 UTC 2022\n",
        "sys/devices/system/cpu/cpu0/cpufreq/scaling_governor": "schedutil\n",
    }
    if status is not None:
        files["var/lib/nvpmodel/status"] = status
    return make_tree(root, files)


def test_x86_laptop(tmp_path: Path) -> None:
    facts = read_device_facts(laptop_tree(tmp_path))
    assert {k: v for k, v in facts.items() if k != "facts"} == {
        "device_id": str(name_uuid("device", "0123456789abcdef0123456789abcdef")),
        "name": "thinkpad",
        "hostname": "thinkpad",
        "arch": "x86_64",
        "cpu_model": "11th Gen Intel(R) Core(TM) i7-1165G7 @ 2.80GHz",
        "cores": 8,
        "mem_total_bytes": 16_135_000 * 1024,
        "gpu": "NVIDIA GeForce MX450",  # from the driver's procfs: NVML is never asked under a fake root
        "os": "Ubuntu 22.04.4 LTS",
        "kernel": "6.5.0-35-generic",
        "power_mode": "powersave",
    }
    extra = facts["facts"]
    assert extra["board"] == "LENOVO 20XW0055GE"
    assert extra["cpu_max_freq_khz"] == 4_700_000
    assert extra["swap_total_bytes"] == 2_097_148 * 1024
    assert extra["cpus_online"] == "0-7"
    assert extra["device_id_source"] == "machine-id"
    assert extra["os_id"] == "ubuntu" and extra["os_version_id"] == "22.04"
    assert extra["python"] is None and extra["cpus_usable"] is None  # live-system facts stay out
    assert "0123456789abcdef" not in json.dumps(facts)  # the raw machine-id is never stored


def test_raspberry_pi_4(tmp_path: Path) -> None:
    facts = read_device_facts(pi4_tree(tmp_path))
    assert facts["name"] == facts["hostname"] == "raspberrypi"
    assert facts["arch"] == "aarch64"
    assert facts["cpu_model"] == "Cortex-A72"
    assert facts["cores"] == 4
    assert facts["mem_total_bytes"] == 3_884_328 * 1024
    assert facts["gpu"] is None
    assert facts["os"] == "Debian GNU/Linux 12 (bookworm)"
    assert facts["kernel"] == "6.1.0-rpi7-rpi-v8"
    assert facts["power_mode"] == "ondemand"
    assert facts["facts"]["board"] == "Raspberry Pi 4 Model B Rev 1.4"  # NUL stripped
    assert facts["facts"]["cpu_hardware"] == "BCM2835"
    assert facts["facts"]["board_revision"] == "c03114"
    assert facts["facts"]["nvpmodel_id"] is None
    # No machine-id in this tree: the id falls back to the hostname, still deterministic.
    assert facts["device_id"] == str(name_uuid("device", "raspberrypi"))
    assert facts["facts"]["device_id_source"] == "hostname"
    assert "10000000a1b2c3d4" not in json.dumps(facts)  # the board serial is not collected


def test_raspberry_pi_board_from_cpuinfo_when_no_device_tree(tmp_path: Path) -> None:
    (pi4_tree(tmp_path) / "proc/device-tree/model").unlink()  # older kernels name the board only in cpuinfo
    assert read_device_facts(tmp_path)["facts"]["board"] == "Raspberry Pi 4 Model B Rev 1.4"


def test_jetson_xavier_nx(tmp_path: Path) -> None:
    facts = read_device_facts(jetson_tree(tmp_path))
    assert facts["name"] == "xavier-nx"
    assert facts["device_id"] == str(name_uuid("device", "fedcba9876543210fedcba9876543210"))
    assert facts["arch"] == "aarch64"
    assert facts["cpu_model"] == "NVIDIA Carmel"  # from the part code, not "ARMv8 Processor rev 0"
    assert facts["cores"] == 6
    assert facts["gpu"] == "NVIDIA Volta iGPU (tegra194)"
    assert facts["os"] == "Ubuntu 18.04.6 LTS (Bionic Beaver)"  # no PRETTY_NAME: NAME + VERSION
    assert facts["kernel"] == "4.9.253-tegra"
    # The status file says mode 3, which wins over the config's default (2).
    assert facts["power_mode"] == "MODE_10W_2CORE"
    extra = facts["facts"]
    assert extra["board"] == "NVIDIA Jetson Xavier NX Developer Kit"
    assert extra["nvpmodel_id"] == 3 and extra["nvpmodel_name"] == "MODE_10W_2CORE"
    assert extra["cpu_governor"] == "schedutil"
    assert extra["l4t_release"] == "R32.7.1"
    assert extra["soc"] == "tegra194"


def test_jetson_without_status_file_uses_default_mode(tmp_path: Path) -> None:
    facts = read_device_facts(jetson_tree(tmp_path, status=None))
    assert facts["power_mode"] == "MODE_15W_6CORE"
    assert facts["facts"]["nvpmodel_id"] == 2


def test_jetson_mode_missing_from_conf_is_named_by_number(tmp_path: Path) -> None:
    facts = read_device_facts(jetson_tree(tmp_path, status="pmode:0007\n"))
    assert facts["power_mode"] == "nvpmodel 7"


def test_empty_tree_gives_none_not_errors(tmp_path: Path) -> None:
    facts = read_device_facts(tmp_path)
    for column in (
        "hostname",
        "arch",
        "cpu_model",
        "cores",
        "mem_total_bytes",
        "gpu",
        "os",
        "kernel",
        "power_mode",
    ):
        assert facts[column] is None, column
    assert facts["name"] == "unknown-device"
    assert facts["device_id"] == str(name_uuid("device", "unknown-device"))
    assert all(value is None for key, value in facts["facts"].items() if key != "device_id_source")


def test_unreadable_files_give_none(tmp_path: Path) -> None:
    # A directory where a file should be cannot be read: the fact is None, nothing raises.
    for rel in ("proc/cpuinfo", "proc/meminfo", "etc/os-release", "etc/machine-id", "proc/device-tree/model"):
        (tmp_path / rel).mkdir(parents=True)
    make_tree(tmp_path, {"etc/hostname": "box\n", "etc/nvpmodel.conf": "garbage\x00\xff"})
    (tmp_path / "proc/cpuinfo").rmdir()
    (tmp_path / "proc/cpuinfo").write_bytes(b"\xff\xfe not text at all")
    facts = read_device_facts(tmp_path)
    assert facts["cpu_model"] is None and facts["cores"] is None
    assert facts["mem_total_bytes"] is None and facts["os"] is None and facts["power_mode"] is None
    assert facts["facts"]["board"] is None
    assert facts["device_id"] == str(name_uuid("device", "box"))


def test_same_machine_same_id_and_different_machines_differ(tmp_path: Path) -> None:
    a = read_device_facts(laptop_tree(tmp_path / "a"))
    b = read_device_facts(laptop_tree(tmp_path / "b"))
    assert a["device_id"] == b["device_id"]
    (tmp_path / "b/etc/machine-id").write_text("11111111111111111111111111111111\n")
    assert read_device_facts(tmp_path / "b")["device_id"] != a["device_id"]


def test_32bit_pi_zero_cpuinfo() -> None:
    text = cpuinfo(
        "model name\t: ARMv6-compatible processor rev 7 (v6l)\nCPU implementer\t: 0x41\n"
        "CPU architecture: 7\nCPU part\t: 0xb76\n",
        1,
        "Hardware\t: BCM2835\n",
    )
    cpu = parse_cpuinfo(text)
    assert cpu["model"] == "ARM1176" and cpu["processors"] == 1
    # "CPU architecture" says 7 even for this ARMv6 core; the model name's "(v6l)" is what uname says.
    assert guess_arch(cpu) == "armv6l"


def test_nvpmodel_conf_parser() -> None:
    names, default = parse_nvpmodel_conf(NVPMODEL_CONF)
    assert names == {0: "MODE_15W_2CORE", 1: "MODE_15W_4CORE", 2: "MODE_15W_6CORE", 3: "MODE_10W_2CORE"}
    assert default == 2
    assert parse_nvpmodel_conf(None) == ({}, None)


def test_live_system() -> None:
    facts = read_device_facts()
    assert facts["arch"] == platform.machine()
    assert facts["hostname"] == socket.gethostname()
    assert facts["kernel"] == platform.release()
    assert facts["cores"] >= 1
    assert facts["facts"]["python"] == platform.python_version()
    assert read_device_facts()["device_id"] == facts["device_id"]


def test_facts_register_in_the_store(tmp_path: Path) -> None:
    facts = read_device_facts(jetson_tree(tmp_path / "tree"))
    with Store.open(tmp_path / "r.duckdb") as store:
        device_id = store.register_device(facts)
        row = store.con.execute(
            "SELECT name, cores, gpu, power_mode, facts FROM devices WHERE device_id = ?", [str(device_id)]
        ).fetchone()
    assert str(device_id) == facts["device_id"]
    assert row[:4] == ("xavier-nx", 6, "NVIDIA Volta iGPU (tegra194)", "MODE_10W_2CORE")
    assert json.loads(row[4])["l4t_release"] == "R32.7.1"


def fake_pynvml(names: list[str], *, init_error: Exception | None = None) -> types.ModuleType:
    """Just enough of pynvml's API for read_nvml_gpus (this machine has no NVIDIA GPU)."""
    nvml = types.ModuleType("pynvml")
    nvml.shutdowns = 0

    def init() -> None:
        if init_error:
            raise init_error

    def shutdown() -> None:
        nvml.shutdowns += 1

    nvml.nvmlInit, nvml.nvmlShutdown = init, shutdown
    nvml.nvmlDeviceGetCount = lambda: len(names)
    nvml.nvmlDeviceGetHandleByIndex = lambda i: i
    nvml.nvmlDeviceGetName = lambda h: names[h].encode()  # older pynvml returns bytes
    nvml.nvmlDeviceGetMemoryInfo = lambda h: types.SimpleNamespace(total=80 * 2**30)
    nvml.nvmlSystemGetDriverVersion = lambda: "550.54.15"
    return nvml


def test_nvml_gpus(monkeypatch: pytest.MonkeyPatch) -> None:
    nvml = fake_pynvml(["NVIDIA H100 80GB HBM3"] * 2)
    monkeypatch.setitem(sys.modules, "pynvml", nvml)
    names, facts = read_nvml_gpus()
    assert names == ["NVIDIA H100 80GB HBM3"] * 2
    assert facts == {
        "nvml": "ok",
        "gpu_names": names,
        "gpu_mem_total_bytes": [80 * 2**30] * 2,
        "nvidia_driver": "550.54.15",
    }
    assert nvml.shutdowns == 1
    gpu, _ = read_gpu(Path("/"), board=None, soc=None)
    assert gpu == "2 x NVIDIA H100 80GB HBM3"


def test_nvml_without_driver_gives_a_reason(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pynvml", fake_pynvml([], init_error=RuntimeError("Driver Not Loaded")))
    assert read_nvml_gpus() == ([], {"nvml": "not usable: Driver Not Loaded"})


def test_nvml_is_never_asked_under_a_fake_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pynvml", fake_pynvml(["NVIDIA H100 80GB HBM3"]))
    facts = read_device_facts(pi4_tree(tmp_path))
    assert facts["gpu"] is None and "nvml" not in facts["facts"]
