"""Each power source through its real parser: RAPL and Jetson on fake sysfs trees, NVML on a
fake pynvml module with the real one's names."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

import pytest
from power_fakes import (
    DRAM_MAX_UJ,
    JETSON_RAILS,
    LAPTOP_ZONES,
    NVML_FUNCTIONS,
    PACKAGE_MAX_UJ,
    fake_pynvml,
    make_ina3221_hwmon_tree,
    make_ina3221x_tree,
    make_rapl_tree,
    set_energy,
    write,
)

from edgestats.collectors.power import rapl as power_rapl
from edgestats.collectors.power.base import PowerSourceError
from edgestats.collectors.power.energy import rail_energy_j
from edgestats.collectors.power.jetson import JetsonSource
from edgestats.collectors.power.nvml import NvmlSource
from edgestats.collectors.power.rapl import RaplSource
from edgestats.collectors.power.selection import select_power_source

# -- RAPL --------------------------------------------------------------------------------------


def test_rapl_zones_rails_and_wrap_around(tmp_path):
    base = make_rapl_tree(tmp_path, LAPTOP_ZONES)
    source = RaplSource(tmp_path)
    assert source.is_available() == (True, None)
    assert source.rails() == ["package-0", "core", "uncore", "dram", "psys"]
    first = source.read(t_ns=0)
    assert first.energy_j == dict.fromkeys(source.rails(), 0.0)
    set_energy(base, "intel-rapl:0", 1_000_000)  # wrapped: 0.32885 J + 1 J
    set_energy(base, "intel-rapl:0:0", 123459789012)  # +3 J, no wrap
    set_energy(base, "intel-rapl:0:2", 400_000)  # dram wraps at its own range
    second = source.read(t_ns=1_000_000_000)
    assert second.energy_j["package-0"] == pytest.approx(1.328850)
    assert second.energy_j["core"] == pytest.approx(3.0)
    assert second.energy_j["dram"] == pytest.approx((DRAM_MAX_UJ - 65712900000 + 400_000) / 1e6)
    assert second.energy_j["psys"] == 0.0
    set_energy(base, "intel-rapl:0", 3_000_000)
    third = source.read(t_ns=2_000_000_000)
    assert third.energy_j["package-0"] == pytest.approx(3.328850)  # keeps counting past the wrap
    readings = [first, second, third]
    assert rail_energy_j(readings, "package-0", 500_000_000, 1_500_000_000) == pytest.approx(
        1.32885 / 2 + 2.0 / 2
    )


def test_rapl_two_sockets_keep_subzone_rails_apart(tmp_path):
    make_rapl_tree(
        tmp_path,
        {
            "intel-rapl:0": ("package-0", 1, PACKAGE_MAX_UJ),
            "intel-rapl:0:0": ("dram", 1, DRAM_MAX_UJ),
            "intel-rapl:1": ("package-1", 1, PACKAGE_MAX_UJ),
            "intel-rapl:1:0": ("dram", 1, DRAM_MAX_UJ),
        },
    )
    source = RaplSource(tmp_path)
    assert source.is_available() == (True, None)
    assert source.rails() == ["package-0", "package-0/dram", "package-1", "package-1/dram"]


def assert_permission_message(reason: str | None, path: Path) -> None:
    assert reason is not None
    assert "permission denied" in reason and str(path) in reason
    assert "sudo chmod o+r /sys/class/powercap/intel-rapl:*/energy_uj" in reason
    assert "udev" in reason and "5.10" in reason and "CVE-2020-8694" in reason


def test_rapl_unreadable_counter_gives_the_permission_message(tmp_path, monkeypatch):
    make_rapl_tree(tmp_path, LAPTOP_ZONES)
    denied = tmp_path / "sys/class/powercap/intel-rapl:0/energy_uj"

    def reader(path: Path) -> str:
        # What open() raises on kernels >= 5.10 for a non-root user (the file is 0400 root).
        if path.name == "energy_uj":
            raise PermissionError(13, "Permission denied", str(path))
        return path.read_text().strip()

    ok, reason = RaplSource(tmp_path, reader=reader).is_available()
    assert not ok
    assert_permission_message(reason, denied)
    # The same through select_power_source, which builds its own RaplSource: patch the reader it uses.
    monkeypatch.setattr(power_rapl, "read_sysfs_text", reader)
    with pytest.raises(PowerSourceError) as error:
        select_power_source("rapl", tmp_path)  # asked for by name: an error, with the same advice
    assert "CVE-2020-8694" in str(error.value)


def test_rapl_counter_turning_unreadable_mid_run_is_an_error(tmp_path):
    make_rapl_tree(tmp_path, LAPTOP_ZONES)
    locked = {"now": False}

    def reader(path: Path) -> str:
        if locked["now"] and path.name == "energy_uj":
            raise PermissionError(13, "Permission denied", str(path))
        return path.read_text().strip()

    source = RaplSource(tmp_path, reader=reader)
    assert source.is_available() == (True, None)
    source.read(0)
    locked["now"] = True
    with pytest.raises(PowerSourceError, match="sudo chmod o"):
        source.read(1)


def test_rapl_chmod_000_through_the_real_open(tmp_path):
    """The default reader (real open()) on a 000 file. Root reads through chmod, so as root the
    check runs in a forked child that drops to `nobody`; everything it needs is imported already."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        root.chmod(0o755)  # `nobody` must be able to walk the tree
        make_rapl_tree(root, LAPTOP_ZONES)
        denied = root / "sys/class/powercap/intel-rapl:0/energy_uj"
        for folder in LAPTOP_ZONES:
            (root / "sys/class/powercap" / folder / "energy_uj").chmod(0o000)
        ok, reason = _is_available_as_non_root(root) if os.geteuid() == 0 else RaplSource(root).is_available()
    assert not ok
    assert_permission_message(reason, denied)


def _is_available_as_non_root(root: Path) -> tuple[bool, str | None]:
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # child: never returns into pytest
        code = 1
        try:
            os.close(read_end)
            os.setgroups([])
            os.setgid(65534)
            os.setuid(65534)  # drops CAP_DAC_OVERRIDE with root's uid
            os.write(write_end, json.dumps(RaplSource(root).is_available()).encode())
            code = 0
        finally:
            os._exit(code)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as pipe:
        data = pipe.read()
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0, "the non-root child failed"
    ok, reason = json.loads(data)
    return ok, reason


def test_rapl_absent_says_why(tmp_path):
    ok, reason = RaplSource(tmp_path).is_available()
    assert not ok and "powercap" in reason
    (tmp_path / "sys/class/powercap").mkdir(parents=True)
    ok, reason = RaplSource(tmp_path).is_available()
    assert not ok and "no intel-rapl zones" in reason


# -- Jetson ------------------------------------------------------------------------------------


def test_jetson_ina3221x_iio_driver_power_file_and_v_times_i(tmp_path):
    iio = make_ina3221x_tree(tmp_path, [(4867, 972, 5008), (1194, 238, 5016), (None, 264, 5000)])
    source = JetsonSource(tmp_path)
    assert source.is_available() == (True, None)
    assert source.driver == "ina3221x"
    assert source.rails() == list(JETSON_RAILS)
    first = source.read(t_ns=0)
    assert first.energy_j == {}
    assert first.power_w == pytest.approx({"VDD_IN": 4.867, "VDD_CPU_GPU_CV": 1.194, "VDD_SOC": 1.32})
    write(iio / "in_power0_input", "6867")
    second = source.read(t_ns=2_000_000_000)
    assert rail_energy_j([first, second], "VDD_IN", 0, 2_000_000_000) == pytest.approx(4.867 + 6.867)


def test_jetson_ina3221_hwmon_driver_v_times_i(tmp_path):
    hwmon = make_ina3221_hwmon_tree(tmp_path, [(5072, 1288), (5064, 392), (5064, 624)])
    source = JetsonSource(tmp_path)
    assert source.is_available() == (True, None)
    assert source.driver == "ina3221"
    assert source.rails() == list(JETSON_RAILS)  # not in4..in7, not curr4
    first = source.read(t_ns=0)
    assert first.power_w == pytest.approx(
        {"VDD_IN": 5.072 * 1.288, "VDD_CPU_GPU_CV": 5.064 * 0.392, "VDD_SOC": 5.064 * 0.624}
    )
    write(hwmon / "curr1_input", "2288")
    second = source.read(t_ns=1_000_000_000)
    # over the second half of the interval: power rises linearly from the midpoint value
    mid_w, end_w = 5.072 * (1.288 + 2.288) / 2, 5.072 * 2.288
    assert rail_energy_j([first, second], "VDD_IN", 500_000_000, 1_000_000_000) == pytest.approx(
        0.5 * (mid_w + end_w) / 2
    )


def test_jetson_hwmon_disabled_channel_is_not_a_rail(tmp_path):
    make_ina3221_hwmon_tree(tmp_path, [(5072, 1288), (5064, 392), (5064, 624)], enabled=(1, 0, 1))
    source = JetsonSource(tmp_path)
    assert source.is_available() == (True, None)
    assert source.rails() == ["VDD_IN", "VDD_SOC"]


def test_jetson_absent_says_why(tmp_path):
    ok, reason = JetsonSource(tmp_path).is_available()
    assert not ok and "ina3221x" in reason and "not a Jetson" in reason


# -- NVML --------------------------------------------------------------------------------------


def test_fake_nvml_has_the_real_pynvml_names():
    import pynvml  # the real nvidia-ml-py: the fake must not drift from its API

    for name in NVML_FUNCTIONS + ("NVMLError", "NVMLError_NotSupported"):
        assert hasattr(pynvml, name), name
    assert issubclass(pynvml.NVMLError_NotSupported, pynvml.NVMLError)


def test_nvml_total_energy_counter(tmp_path):
    nvml = fake_pynvml(
        energy_mj=[[123_456_789, 123_466_789, 123_486_789]], power_mw=[[61_234, 250_113, 180_000]]
    )
    source = NvmlSource(tmp_path, nvml=nvml)
    assert source.is_available() == (True, None)
    assert source.rails() == ["gpu0"] and source.energy_rails() == ["gpu0"]
    readings = []
    for step in range(3):
        nvml.step = step
        readings.append(source.read(t_ns=step * 1_000_000_000))
    assert [r.energy_j["gpu0"] for r in readings] == pytest.approx([0.0, 10.0, 30.0])
    assert readings[1].power_w["gpu0"] == pytest.approx(250.113)
    # the counter wins over integrating power: 10 J + 20 J, not the trapezoid of the power samples
    assert rail_energy_j(readings, "gpu0", 0, 2_000_000_000) == pytest.approx(30.0)
    source.close()
    assert nvml.initialised == 0


def test_nvml_not_supported_falls_back_to_integrated_power(tmp_path):
    nvml = fake_pynvml(energy_mj=[None, [5_000, 5_100]], power_mw=[[40_000, 60_000], [90_000, 110_000]])
    source = NvmlSource(tmp_path, nvml=nvml)
    assert source.is_available() == (True, None)
    assert source.rails() == ["gpu0", "gpu1"] and source.energy_rails() == ["gpu1"]
    first = source.read(t_ns=0)
    nvml.step = 1
    second = source.read(t_ns=2_000_000_000)
    assert "gpu0" not in second.energy_j
    assert rail_energy_j([first, second], "gpu0", 0, 2_000_000_000) == pytest.approx((40 + 60) / 2 * 2)
    assert rail_energy_j([first, second], "gpu1", 0, 2_000_000_000) == pytest.approx(0.1)


def test_nvml_without_driver_says_why(tmp_path):
    nvml = fake_pynvml([], [], init_error="NVML Shared Library Not Found")
    ok, reason = NvmlSource(tmp_path, nvml=nvml).is_available()
    assert not ok and "NVML Shared Library Not Found" in reason


@pytest.mark.parametrize(
    "machine, says, never",
    [
        ("x86_64", "CONFIG_POWERCAP off", "x86 CPUs only"),
        ("aarch64", "RAPL exists on x86 CPUs only, and this one is aarch64", "CONFIG_POWERCAP"),
    ],
)
def test_no_powercap_folder_names_the_cause_that_fits_the_cpu(tmp_path, monkeypatch, machine, says, never):
    """An x86 machine was told "not an x86 CPU" as one of three guesses; each CPU now gets its own."""
    monkeypatch.setattr("edgestats.collectors.power.rapl.platform.machine", lambda: machine)
    ok, reason = RaplSource(tmp_path).is_available()
    assert not ok and says in reason and never not in reason and "not an x86" not in reason
