"""What would make this machine noisy, for `edgestats doctor` (like pyperf's `system show`).

Settings that make latencies vary (a CPU governor other than `performance`, turbo/boost) and
what is happening now (other processes using CPU, the busiest of them, swap in use or being
used, heat, throttling). Each check is {name, ok, detail, fix}: ok None means "cannot tell
here" (no cpufreq in a VM, no sensor). Files are read under `root`, so tests use fake trees.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from edgestats.collectors.telemetry.pi_throttle import doctor_check
from edgestats.collectors.telemetry.procfs import CLK_TCK
from edgestats.collectors.telemetry.sentinel import (
    SYSTEM_ROOT,
    NoiseThresholds,
    cpu_count,
    during,
    read_state,
)

DOCTOR_WINDOW_S = 0.5  # how long doctor watches the machine for background CPU
BUSY_PROCESS_PCT = 5.0  # a process using more than this % of one core in the window is listed
MAX_BUSY_LISTED = 5


def _check(name: str, ok: bool | None, detail: str, fix: str | None = None) -> dict[str, Any]:
    return {"name": name, "ok": ok, "detail": detail, "fix": fix if ok is False else None}


def process_cpu_ticks(root: Path) -> dict[int, tuple[str, int]]:
    """pid -> (command name, user + system ticks) of every process under root/proc."""
    found = {}
    for entry in os.scandir(root / "proc") if (root / "proc").is_dir() else ():
        if not entry.name.isdigit():
            continue
        try:
            raw = (Path(entry.path) / "stat").read_bytes()
        except OSError:
            continue  # ended since the listing
        name = raw[raw.index(b"(") + 1 : raw.rindex(b")")].decode("utf-8", "replace")
        fields = raw[raw.rindex(b")") + 2 :].split()
        found[int(entry.name)] = (name, int(fields[11]) + int(fields[12]))
    return found


def busy_processes(
    before: dict[int, tuple[str, int]], after: dict[int, tuple[str, int]], seconds: float
) -> list[tuple[int, str, float]]:
    """(pid, name, % of one core) of the processes busier than BUSY_PROCESS_PCT, busiest first."""
    busy = []
    for pid, (name, ticks) in after.items():
        if pid in before and pid != os.getpid():
            pct = 100.0 * (ticks - before[pid][1]) / CLK_TCK / seconds
            if pct > BUSY_PROCESS_PCT:
                busy.append((pid, name, pct))
    return sorted(busy, key=lambda b: -b[2])[:MAX_BUSY_LISTED]


def _settings_checks(state) -> list[dict[str, Any]]:
    governors = sorted(set(state.governors))
    if not governors:
        governor = _check("governor", None, "no cpufreq here (a VM, or a board with fixed clocks)")
    else:
        governor = _check(
            "governor",
            governors == ["performance"],
            ", ".join(governors),
            "clocks follow the load, so the first inferences run slower: "
            "sudo cpupower frequency-set -g performance",
        )
    if state.turbo is None:
        turbo = _check("turbo", None, "no boost control (cpufreq/boost, intel_pstate/no_turbo)")
    else:
        turbo = _check(
            "turbo",
            not state.turbo,
            "on" if state.turbo else "off",
            "clocks then depend on temperature and on how many cores are busy: "
            "echo 1 | sudo tee /sys/devices/system/cpu/intel_pstate/no_turbo "
            "(or echo 0 to /sys/devices/system/cpu/cpufreq/boost)",
        )
    return [governor, turbo]


def _load_checks(
    before, after, figures: dict[str, Any], busy: list, limits: NoiseThresholds
) -> list[dict[str, Any]]:
    cpus = cpu_count(before)
    pct = figures.get("outside_cpu_pct")
    listed = "; ".join(f"{name} (pid {pid}) {p:.0f} %" for pid, name, p in busy)
    background = _check(
        "background CPU",
        None if pct is None else pct <= limits.cpu_pct,
        "cannot tell: /proc/stat missing, or unchanged while watching"
        if pct is None
        else f"{pct:.0f} % of {cpus} CPUs used by other processes" + (f": {listed}" if listed else ""),
        f"a run is flagged noisy above {limits.cpu_pct:g} %: stop the busy processes",
    )
    load = before.loadavg
    load_ok = None if load is None else load[0] <= limits.load_per_cpu * cpus
    load_check = _check(
        "load average",
        load_ok,
        "unknown" if load is None else f"{load[0]:g} {load[1]:g} {load[2]:g} (1, 5, 15 min) on {cpus} CPUs",
        "more runnable tasks than CPUs: wait for them or stop them",
    )
    used = after.swap_used_bytes
    swapping = (figures.get("swap_bytes") or 0) > 0
    swap = _check(
        "swap",
        None if used is None else not used and not swapping,
        "no swap information"
        if used is None
        else f"{used / 2**20:.0f} MiB in use" + (", swapping now" if swapping else ""),
        "pages of a run may be swapped out: free memory, or sudo swapoff -a && sudo swapon -a",
    )
    return [background, load_check, swap]


def _thermal_checks(state, limits: NoiseThresholds) -> list[dict[str, Any]]:
    checks = []
    hot = state.temp_max_c
    checks.append(
        _check(
            "temperature",
            None if hot is None else hot < limits.temp_c,
            "no sensor" if hot is None else f"hottest sensor {hot:.0f} C",
            f"at {limits.temp_c:g} C and above runs are flagged noisy: cool the device, add --cooldown",
        )
    )
    if state.throttle_count is not None:
        checks.append(
            _check(
                "thermal throttling",
                state.throttle_count == 0,
                f"{state.throttle_count} throttle events since boot (thermal_throttle counters)",
                "the CPU has been clocked down for heat: improve cooling; runs that throttle are flagged",
            )
        )
    if state.pi_throttled is not None:  # a Raspberry Pi: its firmware's flags, decoded
        checks.append(_check("firmware throttling", *doctor_check(state.pi_throttled)))
    return checks


def noise_checks(
    root: Path = SYSTEM_ROOT,
    *,
    window_s: float = DOCTOR_WINDOW_S,
    limits: NoiseThresholds = NoiseThresholds(),
    sleep: Callable[[float], None] = time.sleep,
) -> list[dict[str, Any]]:
    """Every check, after watching the machine for `window_s`."""
    root = Path(root)
    before, procs_before = read_state(root), process_cpu_ticks(root)
    sleep(window_s)
    after, procs_after = read_state(root), process_cpu_ticks(root)
    figures = during(before, after)
    busy = busy_processes(procs_before, procs_after, max(after.t_s - before.t_s, window_s))
    return (
        _settings_checks(after)
        + _load_checks(before, after, figures, busy, limits)
        + _thermal_checks(after, limits)
    )
