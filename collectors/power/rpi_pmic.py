"""The Raspberry Pi 5's power-management IC (PMIC), read through the firmware. `vcgencmd
pmic_read_adc` prints one reading per line, currents in A and voltages in V,

         VDD_CORE_A current(7)=0.71350000A
         VDD_CORE_V volt(15)=0.88000000V
            EXT5V_V volt(24)=5.12496000V

(the number in brackets is the ADC channel). A rail is a name that has both a current
(`NAME_A`) and a voltage (`NAME_V`): its power is V x A, and the board's power is the sum over
those rails (12 on a Pi 5: VDD_CORE, DDR_VDD2, DDR_VDDQ, 3V3_SYS, 1V8_SYS, ...). Each rail is
its own `power_w:<rail>` series; `EXT5V`, the 5 V input, has a voltage only and is stored as
`voltage_v:EXT5V`. The PMIC's ADC gives instantaneous readings, integrated over time by the
trapezoid rule like any sampled power.

vcgencmd is found on PATH and run once per read (a few milliseconds on a Pi: a process, an
ioctl on /dev/vcio, the firmware's answer), so the sampler reads this source on its CPU budget,
not on every tick. Nothing is read under `self.root`: the firmware is reached through vcgencmd
alone, so tests put a fake `vcgencmd` on PATH and the real subprocess and parsing run.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from edgestats.collectors.power.base import SYSTEM_ROOT, PowerReading, PowerSource, PowerSourceError

VCGENCMD = "vcgencmd"
CALL_TIMEOUT_S = 2.0  # a firmware call answers in milliseconds; one that hangs must not hold a run
INPUT_RAIL = "EXT5V"  # the board's 5 V input: a voltage, no current
VOLTAGE_PREFIX = "voltage_v:"
# "   VDD_CORE_A current(7)=0.71350000A": name, A or V, the value and its unit again
_READING_RE = re.compile(r"^\s*(\S+)_([AV])\s+(?:current|volt)\(\d+\)=([-+0-9.eE]+)([AV])\s*$")
NOT_PERMITTED_HELP = (
    "vcgencmd cannot open /dev/vcio (not permitted): add this user to the video group "
    "(sudo usermod -aG video $USER, then log in again), or run edgestats as root"
)


@dataclass(frozen=True)
class PmicReading(PowerReading):
    """A read of the PMIC: the rails' power, and the input voltage as `voltage_v:EXT5V`."""

    voltage_v: dict[str, float] = field(default_factory=dict)

    def metrics(self) -> list[tuple[str, float]]:
        return [*super().metrics(), *((VOLTAGE_PREFIX + rail, v) for rail, v in self.voltage_v.items())]


def run_vcgencmd(*args: str, timeout_s: float = CALL_TIMEOUT_S) -> tuple[int, str]:
    """(exit status, stdout and stderr) of `vcgencmd ARGS`, found on PATH. FileNotFoundError where
    there is none; OSError or subprocess.TimeoutExpired where it cannot run or does not answer."""
    path = shutil.which(VCGENCMD)
    if path is None:
        raise FileNotFoundError(f"{VCGENCMD} is not on PATH")
    done = subprocess.run(
        [path, *args], capture_output=True, text=True, timeout=timeout_s, stdin=subprocess.DEVNULL
    )
    return done.returncode, done.stdout + done.stderr


def parse_pmic_adc(text: str) -> tuple[dict[str, float], dict[str, float]]:
    """({name: amps}, {name: volts}) from `vcgencmd pmic_read_adc`'s output; lines that are no
    reading (an error message) are left out, so an answer without readings gives two empty dicts."""
    amps: dict[str, float] = {}
    volts: dict[str, float] = {}
    for line in text.splitlines():
        match = _READING_RE.match(line)
        if match and match.group(2) == match.group(4):  # the suffix and the unit agree
            (amps if match.group(2) == "A" else volts)[match.group(1)] = float(match.group(3))
    return amps, volts


def rail_powers_w(amps: dict[str, float], volts: dict[str, float]) -> dict[str, float]:
    """V x A of every name that has both a current and a voltage, in the output's order."""
    return {rail: volts[rail] * current for rail, current in amps.items() if rail in volts}


def why_no_rails(status: int, text: str) -> str:
    """Why `vcgencmd pmic_read_adc` gave no rails, from what it printed."""
    first = next((line.strip() for line in text.splitlines() if line.strip()), "nothing")
    if "/dev/vcio" in text or "ermission denied" in text:
        return NOT_PERMITTED_HELP
    return (
        f"no PMIC: `vcgencmd pmic_read_adc` answered {first!r} (exit status {status}); only the "
        "Raspberry Pi 5 (and boards built on it) has a PMIC whose ADC the firmware reads"
    )


class RpiPmicSource(PowerSource):
    name = "rpi-pmic"

    def __init__(self, root: Path = SYSTEM_ROOT):
        super().__init__(root)  # the firmware is reached through vcgencmd: root keeps the interface
        self._rails: list[str] = []

    def is_available(self) -> tuple[bool, str | None]:
        if shutil.which(VCGENCMD) is None:
            return False, (
                f"{VCGENCMD} is not on PATH (not a Raspberry Pi, or Raspberry Pi OS's raspi-utils "
                "package is missing: sudo apt install raspi-utils)"
            )
        try:
            status, text = run_vcgencmd("pmic_read_adc")
        except subprocess.TimeoutExpired:
            return False, f"`vcgencmd pmic_read_adc` did not answer within {CALL_TIMEOUT_S:g} s"
        except OSError as e:
            return False, f"cannot run {VCGENCMD}: {e}"
        powers = rail_powers_w(*parse_pmic_adc(text))
        if not powers:
            return False, why_no_rails(status, text)
        self._rails = list(powers)
        return True, None

    def rails(self) -> list[str]:
        return list(self._rails)

    def read(self, t_ns: int | None = None) -> PmicReading:
        t = time.monotonic_ns() if t_ns is None else t_ns
        powers, volts = self._measure()
        inputs = {INPUT_RAIL: volts[INPUT_RAIL]} if INPUT_RAIL in volts else {}
        return PmicReading(t, {}, powers, inputs)

    def _sample(self) -> tuple[dict[str, float], dict[str, float]]:
        return {}, self._measure()[0]

    def _measure(self) -> tuple[dict[str, float], dict[str, float]]:
        """(power per known rail, every voltage) from one call of vcgencmd."""
        if not self._rails:
            raise PowerSourceError("rpi-pmic read before is_available() found its rails")
        try:
            status, text = run_vcgencmd("pmic_read_adc")
        except (OSError, subprocess.TimeoutExpired) as e:
            raise PowerSourceError(f"`vcgencmd pmic_read_adc` failed: {e}") from e
        amps, volts = parse_pmic_adc(text)
        powers = rail_powers_w(amps, volts)
        missing = [rail for rail in self._rails if rail not in powers]
        if missing:
            raise PowerSourceError(
                f"`vcgencmd pmic_read_adc` (exit status {status}) gave no reading of rail "
                f"{', '.join(missing)}: {why_no_rails(status, text) if not powers else 'the rails changed'}"
            )
        return {rail: powers[rail] for rail in self._rails}, volts
