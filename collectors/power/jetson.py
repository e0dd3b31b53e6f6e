"""NVIDIA Jetson on-module INA3221 power monitors, under either kernel driver.

L4T 32 and older (TX1/TX2/Nano/Xavier): NVIDIA's IIO driver `ina3221x`, channels 0-2,

    /sys/bus/i2c/drivers/ina3221x/1-0040/iio:device0/rail_name_0        VDD_IN
                                                    in_power0_input     mW
                                                    in_voltage0_input   mV
                                                    in_current0_input   mA

L4T 34+ (Orin, and Xavier on JetPack 5): the mainline hwmon driver `ina3221`, channels 1-3,

    /sys/bus/i2c/drivers/ina3221/1-0040/hwmon/hwmon3/in1_label   VDD_IN
                                                    in1_input   mV (bus voltage)
                                                    curr1_input mA
                                                    in1_enable  0 = channel switched off

hwmon has no power file, so power = V x I. Its in4-in6 are shunt voltages (uV) and in7 the
"sum of shunt voltages": only channels with a label *and* a current are rails. The INA3221
averages over its conversion time, so a read is a short-window mean, integrated over time.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

from edgestats.collectors.power.base import SYSTEM_ROOT, PowerSource, PowerSourceError, read_sysfs_text

DRIVERS = Path("sys/bus/i2c/drivers")
_RAIL_NAME_RE = re.compile(r"^rail_name_(\d+)$")
_LABEL_RE = re.compile(r"^in(\d+)_label$")

Reader = Callable[[Path], str]


class JetsonSource(PowerSource):
    name = "jetson"

    def __init__(self, root: Path = SYSTEM_ROOT, *, reader: Reader | None = None):
        super().__init__(root)
        # Looked up at construction, so tests can monkeypatch the module's read_sysfs_text.
        self._reader = reader or read_sysfs_text
        self.driver: str | None = None
        self._rails: dict[str, Callable[[], float]] = {}  # rail -> reads its power in W

    def is_available(self) -> tuple[bool, str | None]:
        base = self.root / DRIVERS
        try:
            channels = _hwmon_channels(base / "ina3221", self._reader)
            self.driver = "ina3221"
            if not channels:
                channels = _iio_channels(base / "ina3221x", self._reader)
                self.driver = "ina3221x"
        except OSError as e:
            return False, f"cannot read the INA3221 power monitor: {e}"
        if not channels:
            self.driver = None
            return False, (
                f"no INA3221 power monitor under {base}/ina3221 or {base}/ina3221x "
                "(not a Jetson, or a module without one, such as the Nano 2GB)"
            )
        for label, device, power in channels:
            # Boards with two monitors (AGX) could repeat a label: keep both, by I2C address.
            rail = label if label not in self._rails else f"{label}@{device}"
            self._rails[rail] = power
        try:
            self._sample()
        except PowerSourceError as e:
            self._rails.clear()
            return False, str(e)
        return True, None

    def rails(self) -> list[str]:
        return list(self._rails)

    def total_rails(self) -> list[str]:
        """The module's input rail (VDD_IN on TX2/Xavier/Orin, POM_5V_IN on the Nano) measures
        everything the others measure in part; without one, the rails are disjoint: sum them."""
        inputs = [rail for rail in self._rails if rail.split("@")[0].upper().endswith("_IN")]
        return inputs or self.rails()

    def _sample(self) -> tuple[dict[str, float], dict[str, float]]:
        if not self._rails:
            raise PowerSourceError("Jetson source read before is_available() found its rails")
        try:
            return {}, {rail: read_power() for rail, read_power in self._rails.items()}
        except (OSError, ValueError) as e:
            raise PowerSourceError(f"cannot read a Jetson INA3221 rail ({self.driver}): {e}") from e


def _hwmon_channels(driver: Path, reader: Reader) -> list[tuple[str, str, Callable[[], float]]]:
    """(label, I2C device, power reader) per enabled channel of the mainline hwmon driver."""
    channels = []
    for folder in sorted(driver.glob("*/hwmon/hwmon*")):
        device = folder.parent.parent.name
        for label_file in sorted(folder.iterdir()):
            match = _LABEL_RE.match(label_file.name)
            n = match and match.group(1)
            if not n or not (folder / f"curr{n}_input").exists():
                continue  # in7 "sum of shunt voltages" has a label but no current
            enable = folder / f"in{n}_enable"
            if enable.exists() and reader(enable) == "0":
                continue  # switched-off channel: its registers hold stale values
            channels.append(
                (
                    reader(label_file),
                    device,
                    _volts_times_amps(reader, folder / f"in{n}_input", folder / f"curr{n}_input"),
                )
            )
    return channels


def _iio_channels(driver: Path, reader: Reader) -> list[tuple[str, str, Callable[[], float]]]:
    """(rail name, I2C device, power reader) per channel of NVIDIA's ina3221x IIO driver."""
    channels = []
    folders = sorted(driver.glob("*/iio:device*")) + sorted(driver.glob("*/iio_device"))  # L4T 28: iio_device
    for folder in folders:
        device = folder.parent.name
        for name_file in sorted(folder.iterdir()):
            match = _RAIL_NAME_RE.match(name_file.name)
            if not match:
                continue
            n = match.group(1)
            power_file = folder / f"in_power{n}_input"
            power = (
                _milliwatts(reader, power_file)
                if power_file.exists()
                else _volts_times_amps(
                    reader, folder / f"in_voltage{n}_input", folder / f"in_current{n}_input"
                )
            )
            channels.append((reader(name_file), device, power))
    return channels


def _milliwatts(reader: Reader, path: Path) -> Callable[[], float]:
    return lambda: int(reader(path)) / 1e3


def _volts_times_amps(reader: Reader, voltage_mv: Path, current_ma: Path) -> Callable[[], float]:
    # mV x mA = uW
    return lambda: int(reader(voltage_mv)) * int(reader(current_ma)) / 1e6
