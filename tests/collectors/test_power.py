"""Power sources through their real parsers, on fake sysfs trees and a fake pynvml module."""

from __future__ import annotations

import json
import os
import sys
import subprocess
import tempfile
import time
import types
from pathlib import Path

import pytest

from edgestats.collectors.power.base import (
    PowerReading, PowerSourceError, counter_delta_uj, describe_sources, energy_above_idle_j,
    energy_in_window_j, integrate_power_w, integrate_trapezoid, rail_energy_j, select_power_source)
from edgestats.collectors.power.meter_csv import ClockAnchor, CsvMeterSource, load_meter_csv
from edgestats.collectors.power.jetson import JetsonSource
from edgestats.collectors.power.nvml import NvmlSource
from edgestats.collectors.power import rapl as power_rapl
from edgestats.collectors.power.rapl import RaplSource
from edgestats.errors import EdgestatsError

PACKAGE_MAX_UJ = 262143328850   # max_energy_range_uj of a package zone on Skylake and later
DRAM_MAX_UJ = 65712999613       # dram zones use a different energy unit


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text + "\n")


# -- fake trees --------------------------------------------------------------------------------

def make_rapl_tree(root: Path, zones: dict[str, tuple[str, int, int]]) -> Path:
    """/sys/class/powercap with zones {folder: (name, energy_uj, max_energy_range_uj)}."""
    base = root / "sys/class/powercap"
    write(base / "intel-rapl/enabled", "1")            # the control type: not a zone
    write(base / "intel-rapl-mmio:0/name", "package-0")  # MMIO duplicate of the package: ignored
    write(base / "intel-rapl-mmio:0/energy_uj", "5")
    for folder, (name, energy_uj, max_uj) in zones.items():
        write(base / folder / "name", name)
        write(base / folder / "energy_uj", str(energy_uj))
        write(base / folder / "max_energy_range_uj", str(max_uj))
        write(base / folder / "enabled", "1")
    return base


LAPTOP_ZONES = {
    "intel-rapl:0": ("package-0", 262143000000, PACKAGE_MAX_UJ),   # 0.33 J before it wraps
    "intel-rapl:0:0": ("core", 123456789012, PACKAGE_MAX_UJ),
    "intel-rapl:0:1": ("uncore", 2345678901, PACKAGE_MAX_UJ),
    "intel-rapl:0:2": ("dram", 65712900000, DRAM_MAX_UJ),
    "intel-rapl:1": ("psys", 98765432109, PACKAGE_MAX_UJ),
}


def set_energy(base: Path, folder: str, energy_uj: int) -> None:
    write(base / folder / "energy_uj", str(energy_uj))


JETSON_RAILS = ("VDD_IN", "VDD_CPU_GPU_CV", "VDD_SOC")


def make_ina3221x_tree(root: Path, mw_ma_mv: list[tuple[int | None, int, int]]) -> Path:
    """L4T 32 IIO driver (Xavier NX): per channel (in_power mW or None for no file, mA, mV)."""
    driver = root / "sys/bus/i2c/drivers/ina3221x"
    write(driver / "bind", "")
    write(driver / "uevent", "")
    iio = driver / "7-0040/iio:device0"
    write(iio / "name", "ina3221x")
    write(iio / "running_mode", "1")
    for n, (rail, (mw, ma, mv)) in enumerate(zip(JETSON_RAILS, mw_ma_mv)):
        write(iio / f"rail_name_{n}", rail)
        write(iio / f"in_current{n}_input", str(ma))
        write(iio / f"in_voltage{n}_input", str(mv))
        write(iio / f"crit_current_limit_{n}", "3000")
        if mw is not None:
            write(iio / f"in_power{n}_input", str(mw))
    return iio


def make_ina3221_hwmon_tree(root: Path, mv_ma: list[tuple[int, int]], enabled=(1, 1, 1)) -> Path:
    """L4T 35 mainline hwmon driver (Orin): in{N}_label/in{N}_input mV/curr{N}_input mA, N = 1..3."""
    driver = root / "sys/bus/i2c/drivers/ina3221"
    write(driver / "uevent", "")
    hwmon = driver / "1-0040/hwmon/hwmon3"
    write(hwmon / "name", "ina3221")
    for n, (rail, (mv, ma), on) in enumerate(zip(JETSON_RAILS, mv_ma, enabled), start=1):
        write(hwmon / f"in{n}_label", rail)
        write(hwmon / f"in{n}_input", str(mv))
        write(hwmon / f"curr{n}_input", str(ma))
        write(hwmon / f"in{n}_enable", str(on))
        write(hwmon / f"shunt{n}_resistor", "5000")
        write(hwmon / f"in{n + 3}_input", str(ma * 5))       # shunt voltage, uV: not a rail
    write(hwmon / "in7_label", "sum of shunt voltages")        # labelled, but no curr7: not a rail
    write(hwmon / "in7_input", "11520")
    write(hwmon / "curr4_input", "2304")
    return hwmon


# -- energy arithmetic -------------------------------------------------------------------------

def test_counter_delta_handles_wrap_around():
    assert counter_delta_uj(100, 350, PACKAGE_MAX_UJ) == 250
    assert counter_delta_uj(PACKAGE_MAX_UJ - 328850, 1_000_000, PACKAGE_MAX_UJ) == 1_328_850


def test_trapezoid_with_partial_intervals_at_both_edges():
    samples = [(0.0, 2.0), (1.0, 4.0), (2.0, 4.0), (3.0, 1.0)]
    # value at 0.5 is 3.0, at 2.5 is 2.5: 0.5*(3+4)/2 + 1*(4+4)/2 + 0.5*(4+2.5)/2
    assert integrate_trapezoid(samples, 0.5, 2.5) == pytest.approx(1.75 + 4.0 + 1.625)
    assert integrate_trapezoid(samples, 0.0, 3.0) == pytest.approx(3.0 + 4.0 + 2.5)


def test_window_shorter_than_one_sampling_interval_gets_its_share():
    samples_ns = [(0, 2.0), (10_000_000_000, 4.0)]           # 0.1 Hz sampler
    # 2 s..4 s: power 2.4 W..2.8 W, mean 2.6 W, for 2 s
    assert integrate_power_w(samples_ns, 2_000_000_000, 4_000_000_000) == pytest.approx(5.2)


def test_window_not_covered_by_samples_is_an_error_not_a_guess():
    with pytest.raises(ValueError, match="do not cover"):
        integrate_power_w([(10, 1.0), (20, 1.0)], 5, 15)
    with pytest.raises(ValueError, match="do not cover"):
        energy_in_window_j([], 0, 1)


def test_cumulative_energy_interpolated_at_window_edges():
    cumulative = [(0, 0.0), (1_000_000_000, 10.0), (2_000_000_000, 30.0)]
    assert energy_in_window_j(cumulative, 500_000_000, 1_500_000_000) == pytest.approx(5.0 + 10.0)


def test_energy_above_idle_is_the_area_between_the_curves():
    assert energy_above_idle_j(10.0, 2.0, 3_000_000_000) == pytest.approx(4.0)
    assert energy_above_idle_j(5.0, 2.0, 3_000_000_000) == pytest.approx(-1.0)   # not clamped


# -- RAPL --------------------------------------------------------------------------------------

def test_rapl_zones_rails_and_wrap_around(tmp_path):
    base = make_rapl_tree(tmp_path, LAPTOP_ZONES)
    source = RaplSource(tmp_path)
    assert source.is_available() == (True, None)
    assert source.rails() == ["package-0", "core", "uncore", "dram", "psys"]
    first = source.read(t_ns=0)
    assert first.energy_j == dict.fromkeys(source.rails(), 0.0)
    set_energy(base, "intel-rapl:0", 1_000_000)                 # wrapped: 0.32885 J + 1 J
    set_energy(base, "intel-rapl:0:0", 123459789012)            # +3 J, no wrap
    set_energy(base, "intel-rapl:0:2", 400_000)                 # dram wraps at its own range
    second = source.read(t_ns=1_000_000_000)
    assert second.energy_j["package-0"] == pytest.approx(1.328850)
    assert second.energy_j["core"] == pytest.approx(3.0)
    assert second.energy_j["dram"] == pytest.approx((DRAM_MAX_UJ - 65712900000 + 400_000) / 1e6)
    assert second.energy_j["psys"] == 0.0
    set_energy(base, "intel-rapl:0", 3_000_000)
    third = source.read(t_ns=2_000_000_000)
    assert third.energy_j["package-0"] == pytest.approx(3.328850)   # keeps counting past the wrap
    readings = [first, second, third]
    assert rail_energy_j(readings, "package-0", 500_000_000, 1_500_000_000) == pytest.approx(
        1.32885 / 2 + 2.0 / 2)


def test_rapl_two_sockets_keep_subzone_rails_apart(tmp_path):
    make_rapl_tree(tmp_path, {
        "intel-rapl:0": ("package-0", 1, PACKAGE_MAX_UJ), "intel-rapl:0:0": ("dram", 1, DRAM_MAX_UJ),
        "intel-rapl:1": ("package-1", 1, PACKAGE_MAX_UJ), "intel-rapl:1:0": ("dram", 1, DRAM_MAX_UJ)})
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
        select_power_source("rapl", tmp_path)   # asked for by name: an error, with the same advice
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
        root.chmod(0o755)                      # `nobody` must be able to walk the tree
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
    if pid == 0:                               # child: never returns into pytest
        code = 1
        try:
            os.close(read_end)
            os.setgroups([])
            os.setgid(65534)
            os.setuid(65534)                   # drops CAP_DAC_OVERRIDE with root's uid
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
    assert rail_energy_j([first, second], "VDD_IN", 0, 2_000_000_000) == pytest.approx((4.867 + 6.867))


def test_jetson_ina3221_hwmon_driver_v_times_i(tmp_path):
    hwmon = make_ina3221_hwmon_tree(tmp_path, [(5072, 1288), (5064, 392), (5064, 624)])
    source = JetsonSource(tmp_path)
    assert source.is_available() == (True, None)
    assert source.driver == "ina3221"
    assert source.rails() == list(JETSON_RAILS)        # not in4..in7, not curr4
    first = source.read(t_ns=0)
    assert first.power_w == pytest.approx({"VDD_IN": 5.072 * 1.288, "VDD_CPU_GPU_CV": 5.064 * 0.392,
                                           "VDD_SOC": 5.064 * 0.624})
    write(hwmon / "curr1_input", "2288")
    second = source.read(t_ns=1_000_000_000)
    # over the second half of the interval: power rises linearly from the midpoint value
    mid_w, end_w = 5.072 * (1.288 + 2.288) / 2, 5.072 * 2.288
    assert rail_energy_j([first, second], "VDD_IN", 500_000_000, 1_000_000_000) == pytest.approx(
        0.5 * (mid_w + end_w) / 2)


def test_jetson_hwmon_disabled_channel_is_not_a_rail(tmp_path):
    make_ina3221_hwmon_tree(tmp_path, [(5072, 1288), (5064, 392), (5064, 624)], enabled=(1, 0, 1))
    source = JetsonSource(tmp_path)
    assert source.is_available() == (True, None)
    assert source.rails() == ["VDD_IN", "VDD_SOC"]


def test_jetson_absent_says_why(tmp_path):
    ok, reason = JetsonSource(tmp_path).is_available()
    assert not ok and "ina3221x" in reason and "not a Jetson" in reason


# -- NVML --------------------------------------------------------------------------------------

NVML_FUNCTIONS = ("nvmlInit", "nvmlShutdown", "nvmlDeviceGetCount", "nvmlDeviceGetHandleByIndex",
                  "nvmlDeviceGetTotalEnergyConsumption", "nvmlDeviceGetPowerUsage")


def fake_pynvml(energy_mj: list[list[int] | None], power_mw: list[list[int]], init_error: str | None = None):
    """A module with pynvml's names, replaying recorded readings; `fake.step` picks the sample.
    A device whose energy list is None answers NotSupported, like a pre-Volta GPU."""
    nvml = types.ModuleType("pynvml")

    class NVMLError(Exception):
        pass

    class NVMLError_NotSupported(NVMLError):  # noqa: N801 (pynvml's own name)
        pass

    nvml.NVMLError, nvml.NVMLError_NotSupported = NVMLError, NVMLError_NotSupported
    nvml.step, nvml.initialised = 0, 0

    def init():
        if init_error:
            raise NVMLError(init_error)
        nvml.initialised += 1

    def total_energy(handle):
        if energy_mj[handle] is None:
            raise NVMLError_NotSupported("Not Supported")
        return energy_mj[handle][nvml.step]

    nvml.nvmlInit = init
    nvml.nvmlShutdown = lambda: setattr(nvml, "initialised", nvml.initialised - 1)
    nvml.nvmlDeviceGetCount = lambda: len(power_mw)
    nvml.nvmlDeviceGetHandleByIndex = lambda i: i
    nvml.nvmlDeviceGetTotalEnergyConsumption = total_energy
    nvml.nvmlDeviceGetPowerUsage = lambda handle: power_mw[handle][nvml.step]
    return nvml


def test_fake_nvml_has_the_real_pynvml_names():
    import pynvml   # the real nvidia-ml-py: the fake must not drift from its API
    for name in NVML_FUNCTIONS + ("NVMLError", "NVMLError_NotSupported"):
        assert hasattr(pynvml, name), name
    assert issubclass(pynvml.NVMLError_NotSupported, pynvml.NVMLError)


def test_nvml_total_energy_counter(tmp_path):
    nvml = fake_pynvml(energy_mj=[[123_456_789, 123_466_789, 123_486_789]],
                       power_mw=[[61_234, 250_113, 180_000]])
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


# -- external meter CSV ------------------------------------------------------------------------

def write_csv(tmp_path: Path, text: str, name: str = "meter.csv") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


UNIX_CSV = "timestamp,power_w,voltage_v\n1700000001.0,4.0,5.1\n1700000000.0,2.0,5.1\n1700000002.0,4.0,5.1\n" \
           "1700000003.0,1.0,5.0\n"


def test_csv_unix_seconds_sorted_and_integrated_like_the_hand_trapezoid(tmp_path):
    source = CsvMeterSource(write_csv(tmp_path, UNIX_CSV))
    assert source.is_available() == (True, None)
    t0 = 1700000000.0
    assert source.samples_between(t0 + 0.5, t0 + 2.5) == [(t0, 2.0), (t0 + 1, 4.0), (t0 + 2, 4.0), (t0 + 3, 1.0)]
    assert source.samples_between(t0 + 1.2, t0 + 1.8) == [(t0 + 1, 4.0), (t0 + 2, 4.0)]
    assert source.energy_j(t0 + 0.5, t0 + 2.5) == pytest.approx(1.75 + 4.0 + 1.625)
    # meter clock 2 s behind the host: shift its samples forward, same energy 2 s later
    assert source.energy_j(t0 + 2.5, t0 + 4.5, clock_offset_s=2.0) == pytest.approx(7.375)
    with pytest.raises(ValueError, match="do not cover"):
        source.energy_j(t0 - 1, t0 + 1)


@pytest.fixture
def new_york_time():
    """A local timezone far from UTC, so reading a naive ISO time as local time would show."""
    saved = os.environ.get("TZ")
    os.environ["TZ"] = "EST5"   # POSIX form: needs no tzdata
    time.tzset()
    yield
    if saved is None:
        del os.environ["TZ"]
    else:
        os.environ["TZ"] = saved
    time.tzset()


def test_csv_iso_timestamps_with_and_without_timezone(tmp_path, new_york_time):
    assert time.localtime(1700000000).tm_hour == 17   # the fixture took effect (22:13 UTC)
    path = write_csv(tmp_path, "Timestamp, Power_W\n2023-11-14T22:13:20Z,2.0\n2023-11-14T23:13:21+01:00,4.0\n"
                               "2023-11-14T22:13:22.5,3.0\n\n")
    assert load_meter_csv(path) == [(1700000000.0, 2.0), (1700000001.0, 4.0), (1700000002.5, 3.0)]


def test_csv_aligned_to_a_run_through_the_clock_anchor(tmp_path):
    source = CsvMeterSource(write_csv(tmp_path, UNIX_CSV),
                            anchor=ClockAnchor(monotonic_ns=5_000_000_000, unix_ns=1_700_000_000_000_000_000))
    samples_ns = source.samples_monotonic_ns(5_500_000_000, 7_500_000_000)
    assert [t for t, _ in samples_ns] == [5_000_000_000, 6_000_000_000, 7_000_000_000, 8_000_000_000]
    assert integrate_power_w(samples_ns, 5_500_000_000, 7_500_000_000) == pytest.approx(7.375)
    assert source.read(t_ns=5_500_000_000) == PowerReading(5_500_000_000, {}, {"meter": pytest.approx(3.0)})
    with pytest.raises(PowerSourceError, match="no samples around"):
        source.read(t_ns=1)


def test_csv_bad_header_names_found_and_expected_columns(tmp_path):
    path = write_csv(tmp_path, "time,watts\n1700000000,2.0\n")
    with pytest.raises(EdgestatsError) as error:
        load_meter_csv(path)
    message = str(error.value)
    assert "['time', 'watts']" in message and "'timestamp'" in message and "'power_w'" in message
    ok, reason = CsvMeterSource(path).is_available()
    assert not ok and "['time', 'watts']" in reason


def test_csv_bad_values_name_the_line(tmp_path):
    bad_power = write_csv(tmp_path, "timestamp,power_w\n1700000000,2.0\n1700000001,abc\n", "p.csv")
    with pytest.raises(PowerSourceError, match=r"line 3: power_w 'abc' is not a number"):
        load_meter_csv(bad_power)
    bad_time = write_csv(tmp_path, "timestamp,power_w\nyesterday,2.0\n", "t.csv")
    with pytest.raises(PowerSourceError, match=r"line 2: timestamp 'yesterday'"):
        load_meter_csv(bad_time)
    with pytest.raises(PowerSourceError, match="no samples"):
        load_meter_csv(write_csv(tmp_path, "timestamp,power_w\n", "empty.csv"))
    with pytest.raises(PowerSourceError, match="cannot read"):
        load_meter_csv(tmp_path / "missing.csv")


# -- selection ---------------------------------------------------------------------------------

@pytest.fixture
def no_nvml(monkeypatch):
    """pynvml as on a machine without the NVIDIA driver, whatever machine runs the tests."""
    monkeypatch.setitem(sys.modules, "pynvml", fake_pynvml([], [], init_error="NVML Shared Library Not Found"))


def test_auto_with_nothing_gives_none_and_every_reason(tmp_path, no_nvml):
    source, chosen, reasons = select_power_source("auto", tmp_path)
    assert source is None and chosen == "none"
    assert list(reasons) == ["rapl", "nvml", "jetson"]
    assert "powercap" in reasons["rapl"] and "Not Found" in reasons["nvml"] and "INA3221" in reasons["jetson"]


def test_auto_on_this_machine_agrees_with_describe_sources():
    rows = {row["name"]: row for row in describe_sources()}
    source, chosen, reasons = select_power_source("auto")
    usable = [name for name in ("rapl", "nvml", "jetson") if rows[name]["usable"]]
    assert chosen == (usable[0] if usable else "none")
    assert (source is None) == (not usable)
    assert reasons == {name: rows[name]["reason"] for name in ("rapl", "nvml", "jetson")[:len(reasons)]}
    if source is not None:
        source.close()


def test_auto_picks_rapl_from_a_fake_tree(tmp_path, no_nvml):
    make_rapl_tree(tmp_path, LAPTOP_ZONES)
    source, chosen, reasons = select_power_source("auto", tmp_path)
    assert chosen == "rapl" and isinstance(source, RaplSource) and reasons == {}
    assert source.read(0).energy_j["package-0"] == 0.0


def test_auto_picks_jetson_and_records_why_not_the_others(tmp_path, no_nvml):
    make_ina3221_hwmon_tree(tmp_path, [(5072, 1288), (5064, 392), (5064, 624)])
    source, chosen, reasons = select_power_source("auto", tmp_path)
    assert chosen == "jetson" and isinstance(source, JetsonSource)
    assert list(reasons) == ["rapl", "nvml"]


def test_explicit_specs(tmp_path, no_nvml):
    assert select_power_source("none", tmp_path) == (None, "none", {})
    with pytest.raises(PowerSourceError, match="'jetson' is not available"):
        select_power_source("jetson", tmp_path)
    with pytest.raises(PowerSourceError, match="auto, none, rapl, nvml, jetson or csv:PATH"):
        select_power_source("ina219", tmp_path)
    with pytest.raises(PowerSourceError, match="csv:PATH"):
        select_power_source("csv:", tmp_path)
    meter = write_csv(tmp_path, UNIX_CSV)
    source, chosen, _ = select_power_source(f"csv:{meter}", tmp_path, clock_offset_s=1.5)
    assert chosen == "csv" and source.clock_offset_s == 1.5 and not source.live
    with pytest.raises(PowerSourceError, match="line 2"):
        select_power_source(f"csv:{write_csv(tmp_path, 'timestamp,power_w' + chr(10) + 'x,1', 'bad.csv')}")


def test_describe_sources_for_doctor(tmp_path, no_nvml):
    make_rapl_tree(tmp_path, LAPTOP_ZONES)
    rows = {row["name"]: row for row in describe_sources(tmp_path)}
    assert list(rows) == ["rapl", "nvml", "jetson", "csv"]
    assert rows["rapl"]["usable"] and rows["rapl"]["rails"][0] == "package-0"
    assert not rows["nvml"]["usable"] and "Not Found" in rows["nvml"]["reason"]
    assert not rows["jetson"]["usable"] and rows["jetson"]["rails"] == []


def test_power_modules_import_pynvml_only_when_nvml_is_probed():
    code = ("import sys, edgestats.collectors.power.base, edgestats.collectors.power.nvml, "
            "edgestats.collectors.power.rapl, edgestats.collectors.power.jetson, edgestats.collectors.power.meter_csv\n"
            "print('pynvml' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout
    assert out.strip() == "False"
