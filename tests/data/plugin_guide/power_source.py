"""TI INA260 power monitor (the kernel's hwmon driver ina2xx), as on some boards' I2C add-ons: the
board's input power.

The plug-in guide's example power source (docs/architecture.md §8): tests/test_plugin_guide.py
writes this file as collectors/power/ina260.py in a copy of the repository.

    /sys/class/hwmon/hwmonN/name            ina260
                            power1_input    µW, averaged by the chip over its conversion time

One rail, `board`, the whole board's input. Files are read under `self.root`, so a test builds a
fake tree; a read is a short-window mean power, integrated over time by the caller.
"""

from __future__ import annotations

from pathlib import Path

from edgestats.collectors.power.base import SYSTEM_ROOT, PowerSource, read_sysfs_text

HWMON = Path("sys/class/hwmon")
CHIP = "ina260"


class Ina260Source(PowerSource):
    name = "ina260"

    def __init__(self, root: Path = SYSTEM_ROOT):
        super().__init__(root)
        self.power_file: Path | None = None

    def is_available(self) -> tuple[bool, str | None]:
        base = self.root / HWMON
        try:
            chips = [d for d in sorted(base.glob("hwmon*")) if read_sysfs_text(d / "name") == CHIP]
        except OSError as e:
            return False, f"cannot read the hwmon devices under {base}: {e}"
        if not chips:
            return False, f"no INA260 power monitor under {base} (a hwmon device named {CHIP}: driver ina2xx)"
        self.power_file = chips[0] / "power1_input"
        return True, None

    def rails(self) -> list[str]:
        return ["board"] if self.power_file is not None else []

    def _sample(self) -> tuple[dict[str, float], dict[str, float]]:
        return {}, {"board": int(read_sysfs_text(self.power_file)) / 1e6}
