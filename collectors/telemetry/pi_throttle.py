"""The Raspberry Pi firmware's throttle flags, for the noise sentinel (sentinel.py) and doctor
(noise_checks.py). They are what `vcgencmd get_throttled` prints (`throttled=0x50005`).

Bits 0-3 say what holds now: under-voltage, ARM frequency capped, throttled, soft temperature
limit active. Bits 16-19 say the same has occurred (since boot, as vcgencmd reports them): they
stay set, so only one that turns on between two reads tells of an event between them.

Read from vcgencmd on PATH when the live system is read (any Raspberry Pi OS image has it), else
from the firmware driver's sysfs file under `root` (some Raspberry Pi kernels have one; tests
build fake trees). vcgencmd costs a process start and a firmware call, milliseconds: the sentinel
reads it twice per run, before and after, never per sampler tick.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from edgestats.collectors.host.facts import read_text
from edgestats.collectors.power.rpi_pmic import run_vcgencmd

SYSTEM_ROOT = Path("/")
SYSFS_FILE = "sys/devices/platform/soc/soc:firmware/get_throttled"
NOW_MASK = 0xF
OCCURRED_MASK = 0xF0000
FLAGS = {
    0: "under-voltage now",
    1: "arm frequency capped now",
    2: "currently throttled",
    3: "soft temperature limit active",
    16: "under-voltage has occurred",
    17: "arm frequency capping has occurred",
    18: "throttling has occurred",
    19: "soft temperature limit has occurred",
}
_VALUE_RE = re.compile(r"^(?:throttled=)?(0x[0-9a-fA-F]+|[0-9a-fA-F]+)$")


def parse_throttled(text: str | None) -> int | None:
    """`throttled=0x50005` (vcgencmd) or `50005` (the sysfs file, hexadecimal) -> 0x50005;
    None for anything else (an error message)."""
    match = _VALUE_RE.match((text or "").strip())
    return int(match.group(1), 16) if match else None


def decode_throttled(flags: int) -> list[str]:
    """The names of the set bits, "now" bits first: 0x50005 -> under-voltage now, currently
    throttled, under-voltage has occurred, throttling has occurred."""
    return [name for bit, name in FLAGS.items() if flags >> bit & 1]


def read_throttled(root: Path = SYSTEM_ROOT) -> int | None:
    """The flags now, or None where neither vcgencmd (live system only) nor the sysfs file answers.
    Under a fake root the machine's own vcgencmd is not asked: it would describe another machine."""
    root = Path(root)
    if root == SYSTEM_ROOT:
        try:
            status, text = run_vcgencmd("get_throttled")
        except (OSError, subprocess.TimeoutExpired):
            status, text = 1, ""
        flags = parse_throttled(text) if status == 0 else None
        if flags is not None:
            return flags
    return parse_throttled(read_text(root / SYSFS_FILE))


def throttle_reason(before: int | None, after: int | None) -> str | None:
    """Why a window between two reads was disturbed by the firmware, or None: a "now" bit set at
    either read, or a "has occurred" bit that turned on between them (one already set before
    the window tells nothing of it)."""
    if before is None and after is None:
        return None
    bits = ((before or 0) | (after or 0)) & NOW_MASK
    if before is not None and after is not None:
        bits |= after & ~before & OCCURRED_MASK
    if not bits:
        return None
    reads = (
        f"{before:#x} before, {after:#x} after"
        if None not in (before, after) and before != after
        else f"{after if after is not None else before:#x}"
    )
    return f"firmware throttling: {', '.join(decode_throttled(bits))} (get_throttled {reads})"


def doctor_check(flags: int) -> tuple[bool, str, str]:
    """(ok, detail, fix) for doctor: any flag set is worth a warning, since an under-voltage that
    has occurred means the power supply can fail again during a run."""
    names = ", ".join(decode_throttled(flags)) or "no flag set"
    if flags & (1 << 0 | 1 << 16):
        fix = "under-voltage: use the board's official power supply and a short, thick cable"
    else:
        fix = "heat: cool the board (heatsink, fan), add --cooldown between runs"
    fix += "; the 'has occurred' flags clear at the next boot"
    return not flags, f"get_throttled {flags:#x}: {names}", fix
