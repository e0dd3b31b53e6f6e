"""Fakes of the hardware the power sources read: sysfs trees (RAPL powercap, Jetson INA3221 in
both drivers' layouts), a pynvml stand-in with the real module's names, meter CSV logs, and a
Raspberry Pi's `vcgencmd` (a shell script on PATH printing a Pi 5's real output).

Shared by the power, attribution and doctor tests (tests/ is on sys.path, like builders.py)."""

from __future__ import annotations

import os
import shlex
import types
from pathlib import Path

from edgestats.collectors.power.base import PowerSource

PACKAGE_MAX_UJ = 262143328850  # max_energy_range_uj of a package zone on Skylake and later
DRAM_MAX_UJ = 65712999613  # dram zones use a different energy unit


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text + "\n")


# -- fake trees --------------------------------------------------------------------------------


def make_rapl_tree(root: Path, zones: dict[str, tuple[str, int, int]]) -> Path:
    """/sys/class/powercap with zones {folder: (name, energy_uj, max_energy_range_uj)}."""
    base = root / "sys/class/powercap"
    write(base / "intel-rapl/enabled", "1")  # the control type: not a zone
    write(base / "intel-rapl-mmio:0/name", "package-0")  # MMIO duplicate of the package: ignored
    write(base / "intel-rapl-mmio:0/energy_uj", "5")
    for folder, (name, energy_uj, max_uj) in zones.items():
        write(base / folder / "name", name)
        write(base / folder / "energy_uj", str(energy_uj))
        write(base / folder / "max_energy_range_uj", str(max_uj))
        write(base / folder / "enabled", "1")
    return base


LAPTOP_ZONES = {
    "intel-rapl:0": ("package-0", 262143000000, PACKAGE_MAX_UJ),  # 0.33 J before it wraps
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
        write(hwmon / f"in{n + 3}_input", str(ma * 5))  # shunt voltage, uV: not a rail
    write(hwmon / "in7_label", "sum of shunt voltages")  # labelled, but no curr7: not a rail
    write(hwmon / "in7_input", "11520")
    write(hwmon / "curr4_input", "2304")
    return hwmon


# -- NVML --------------------------------------------------------------------------------------

NVML_FUNCTIONS = (
    "nvmlInit",
    "nvmlShutdown",
    "nvmlDeviceGetCount",
    "nvmlDeviceGetHandleByIndex",
    "nvmlDeviceGetTotalEnergyConsumption",
    "nvmlDeviceGetPowerUsage",
)


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


def with_clocks(nvml, sm_mhz: list[list[int]], mem_mhz: list[list[int]], pstate: list[list[int]]):
    """Add pynvml's clock and performance-state queries (real names and constants) to a fake from
    `fake_pynvml`, replaying per device the readings given, by `fake.step` like the others."""
    nvml.NVML_CLOCK_GRAPHICS, nvml.NVML_CLOCK_SM, nvml.NVML_CLOCK_MEM = 0, 1, 2  # pynvml's values
    clocks = {nvml.NVML_CLOCK_SM: sm_mhz, nvml.NVML_CLOCK_MEM: mem_mhz}
    nvml.nvmlDeviceGetClockInfo = lambda handle, kind: clocks[kind][handle][nvml.step]
    nvml.nvmlDeviceGetPerformanceState = lambda handle: pstate[handle][nvml.step]
    return nvml


# -- external meter CSV ------------------------------------------------------------------------


def write_csv(tmp_path: Path, text: str, name: str = "meter.csv") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


UNIX_CSV = (
    "timestamp,power_w,voltage_v\n1700000001.0,4.0,5.1\n1700000000.0,2.0,5.1\n1700000002.0,4.0,5.1\n"
    "1700000003.0,1.0,5.0\n"
)


# -- a power source that is no built-in one --------------------------------------------------------


class FakeBoardSource(PowerSource):
    """A source as a new board's module would define it: usable where `<root>/fakeboard` exists,
    one power rail. Tests register it by patching the registry, to prove that selection, auto and
    doctor take their sources from there."""

    name = "fakeboard"

    def is_available(self) -> tuple[bool, str | None]:
        if not (self.root / "fakeboard").is_file():
            return False, f"{self.root / 'fakeboard'} is missing"
        return True, None

    def rails(self) -> list[str]:
        return ["board"]

    def _sample(self) -> tuple[dict[str, float], dict[str, float]]:
        return {}, {"board": 1.5}


def register_fake_board(monkeypatch) -> None:
    """Add FakeBoardSource to the power registry (last, tried by auto) for one test."""
    from edgestats.registry import power as registry

    entry = registry.PowerSourceEntry(
        "fakeboard",
        "Fake board",
        "power_fakes:FakeBoardSource",
        "a fake board's power rail",
        "docs/power-sources.md#rapl",
    )
    sources = (*registry.POWER_SOURCES, entry)
    monkeypatch.setattr(registry, "POWER_SOURCES", sources)
    monkeypatch.setattr(registry, "_BY_NAME", {e.name: e for e in sources})


# -- Raspberry Pi 5: vcgencmd ----------------------------------------------------------------------

# `vcgencmd pmic_read_adc` on a Raspberry Pi 5 (Raspberry Pi OS bookworm), as it prints it.
PI5_PMIC_READ_ADC = """\
     3V7_WL_SW_A current(0)=0.00390372A
       3V3_SYS_A current(1)=0.05172432A
       1V8_SYS_A current(2)=0.16202010A
      DDR_VDD2_A current(3)=0.02147046A
      DDR_VDDQ_A current(4)=0.00000000A
       1V1_SYS_A current(5)=0.18250500A
       0V8_SYS_A current(6)=0.34450000A
      VDD_CORE_A current(7)=0.71350000A
       3V3_DAC_A current(17)=0.00012210A
       3V3_ADC_A current(18)=0.00006105A
       0V8_AON_A current(16)=0.00256410A
          HDMI_A current(22)=0.02234232A
     3V7_WL_SW_V volt(8)=3.72619400V
       3V3_SYS_V volt(9)=3.31050800V
       1V8_SYS_V volt(10)=1.79963200V
      DDR_VDD2_V volt(11)=1.11098800V
      DDR_VDDQ_V volt(12)=0.60512200V
       1V1_SYS_V volt(13)=1.10585600V
       0V8_SYS_V volt(14)=0.80073200V
      VDD_CORE_V volt(15)=0.88000000V
       3V3_DAC_V volt(20)=3.31318800V
       3V3_ADC_V volt(21)=3.30750000V
       0V8_AON_V volt(19)=0.80073200V
          HDMI_V volt(23)=5.13260000V
         EXT5V_V volt(24)=5.12496000V
          BATT_V volt(25)=0.00000000V
"""
# What the firmware of a board without the Pi 5's PMIC answers to a command it does not have.
VCGENCMD_UNKNOWN_COMMAND = 'error=2 error_msg="Command not registered"'
# What vcgencmd prints (exit status 255) when this user may not open the firmware's mailbox.
VCGENCMD_NO_VCIO = (
    "Can't open device file: /dev/vcio\nTry creating a device file with: sudo mknod /dev/vcio c 100 0"
)


def pi5_power_w(text: str = PI5_PMIC_READ_ADC) -> float:
    """The board's power computed independently of the source: V x A of every name printed with
    both, matched by name."""
    values: dict[str, dict[str, float]] = {}
    for line in text.splitlines():
        name, _, value = line.strip().partition("=")
        rail, unit = name.split()[0].rsplit("_", 1)
        values.setdefault(rail, {})[unit] = float(value.rstrip("AV"))
    return sum(v["A"] * v["V"] for v in values.values() if {"A", "V"} <= v.keys())


def make_fake_vcgencmd(
    folder: Path,
    *,
    pmic: str = PI5_PMIC_READ_ADC,
    pmic_status: int = 0,
    throttled: tuple[str, ...] = ("0x0",),
    no_vcio: bool = False,
) -> Path:
    """A `vcgencmd` shell script in `folder` (put the folder first on PATH): `pmic_read_adc`
    prints `pmic` and exits with `pmic_status`; `get_throttled` answers `throttled=<value>` with
    the values in turn, the last one from then on; other commands are unknown. `no_vcio`: every
    command fails as it does for a user outside the video group."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "throttled.txt").write_text("\n".join(throttled) + "\n")
    if no_vcio:
        body = f"printf '%s\\n' {shlex.quote(VCGENCMD_NO_VCIO)}\nexit 255\n"
    else:
        body = (
            'case "$*" in\n'
            f"pmic_read_adc) printf '%s' {shlex.quote(pmic)}; exit {pmic_status} ;;\n"
            'get_throttled) list="$(dirname "$0")/throttled.txt"\n'
            '  echo "throttled=$(head -n 1 "$list")"\n'
            '  if [ "$(wc -l < "$list")" -gt 1 ]; then sed -i 1d "$list"; fi ;;\n'
            f"*) printf '%s\\n' {shlex.quote(VCGENCMD_UNKNOWN_COMMAND)}; exit 2 ;;\n"
            "esac\n"
        )
    script = folder / "vcgencmd"
    script.write_text("#!/bin/sh\n" + body)
    script.chmod(0o755)
    return folder


def fake_vcgencmd_on_path(monkeypatch, folder: Path, **options) -> Path:
    """make_fake_vcgencmd in `folder`, first on PATH for one test."""
    make_fake_vcgencmd(folder, **options)
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ['PATH']}")
    return folder / "vcgencmd"
