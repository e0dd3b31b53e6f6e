"""The noise sentinel: whether a run was measured on a machine busy with other work
(docs/cli/collect.md, "Noise sentinel"). It reads the machine's state before and during the run.

A `MachineState` is read from the files Linux exposes, under a `root` (tests build fake sysfs
trees): load average, /proc/stat's CPU times, swap counters (/proc/vmstat pswpin/pswpout, swap in
use), per-CPU governor and frequencies (cpufreq), thermal throttle counters
(thermal_throttle/*_throttle_count, x86), the Raspberry Pi firmware's throttle flags
(pi_throttle.py: `vcgencmd get_throttled`), turbo
(cpufreq/boost or intel_pstate/no_turbo) and the hottest temperature. The orchestrator reads one
just before the worker is spawned and one just after it is reaped: two reads per run, nothing
per sampler tick.

CPU used outside the run's process tree = the system's busy CPU time between the two states
(/proc/stat) minus this process's own and its reaped children's (getrusage: the worker's tree,
whose times the kernel folds into its parent when it is reaped, plus the sampler thread). That
is exact over the run's window, where the sampler's per-tick figures miss the ticks around it.

`judge()` compares the figures with `NoiseThresholds` and gives the reasons the run is noisy;
every threshold is documented, with why, in docs/cli/collect.md.
"""

from __future__ import annotations

import glob
import os
import resource
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from edgestats.collectors.host.facts import parse_meminfo, read_int, read_text
from edgestats.collectors.telemetry.pi_throttle import read_throttled, throttle_reason
from edgestats.collectors.telemetry.procfs import (
    CLK_TCK,
    parse_millidegrees,
    parse_proc_stat,
    temperature_inputs,
)

SYSTEM_ROOT = Path("/")
ON_NOISE = ("warn", "wait", "fail")
DEFAULT_WAIT_S = 120.0  # --on-noise wait: the longest wait for a quiet machine before each run
WAIT_WINDOW_S = 1.0  # the window over which "quiet" is judged while waiting


@dataclass(frozen=True)
class NoiseThresholds:
    """Above these a run is noisy (docs/cli/collect.md "Noise sentinel" says why each)."""

    cpu_pct: float = 10.0  # CPU used outside the run's tree, % of all CPUs, over the run
    swap_bytes: int = 1 << 20  # swapped in + out during the run
    temp_c: float = 80.0  # hottest sensor, before, during or after the run
    load_per_cpu: float = 2.0  # 1-minute load average before the run, per CPU
    # a GPU run's SM clock more than gpu_clock_margin off its steady median for more than
    # gpu_clock_share of the steady phase (collectors/telemetry/gpu_clocks.py)
    gpu_clock_share: float = 0.10
    gpu_clock_margin: float = 0.10


@dataclass(frozen=True)
class NoisePolicy:
    """What collect does about noise (--on-noise, --noise-wait) and where noise begins."""

    on_noise: str = "warn"
    limits: NoiseThresholds = NoiseThresholds()
    wait_s: float = DEFAULT_WAIT_S


@dataclass
class MachineState:
    """What one read of the machine found; None: not available here."""

    t_s: float
    cpu_busy_ticks: int | None = None
    cpu_all_ticks: int | None = None
    own_cpu_s: float | None = None  # this process + its reaped children (0 under a fake root)
    loadavg: list[float] | None = None
    runnable: int | None = None
    swap_in_pages: int | None = None
    swap_out_pages: int | None = None
    swap_used_bytes: int | None = None
    governors: list[str] = field(default_factory=list)
    cur_khz: list[int] = field(default_factory=list)
    max_khz: list[int] = field(default_factory=list)
    throttle_count: int | None = None
    pi_throttled: int | None = None
    turbo: bool | None = None
    temp_max_c: float | None = None
    cpus: int | None = None

    def as_dict(self) -> dict[str, Any]:
        """Compact: per-CPU lists as their range (a 64-core machine must not bloat every run)."""
        data = asdict(self)
        for key in ("cur_khz", "max_khz"):
            data[key] = [min(data[key]), max(data[key])] if data[key] else None
        data["governors"] = sorted(set(self.governors)) or None
        return data


def own_cpu_seconds() -> float:
    """CPU seconds of this process and of its children it has reaped."""
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def parse_loadavg(text: str | None) -> tuple[list[float] | None, int | None]:
    """/proc/loadavg "0.52 0.58 0.59 3/168 31475" -> ([1, 5, 15-minute], runnable tasks now)."""
    parts = (text or "").split()
    if len(parts) < 4:
        return None, None
    return [float(p) for p in parts[:3]], int(parts[3].split("/")[0])


def parse_vmstat(text: str | None) -> dict[str, int]:
    values = {}
    for line in (text or "").splitlines():
        key, _, value = line.partition(" ")
        if value.strip().isdigit():
            values[key] = int(value)
    return values


def read_turbo(root: Path) -> bool | None:
    """Whether turbo/boost is on: acpi-cpufreq's cpufreq/boost (1 = on), else intel_pstate's
    no_turbo (0 = on); None where neither exists."""
    cpu = root / "sys/devices/system/cpu"
    boost = read_int(cpu / "cpufreq/boost")
    if boost is not None:
        return boost == 1
    no_turbo = read_int(cpu / "intel_pstate/no_turbo")
    return None if no_turbo is None else no_turbo == 0


def _cpu_dirs(root: Path) -> list[str]:
    return sorted(glob.glob(str(root / "sys/devices/system/cpu/cpu[0-9]*")))


def _read_cpus(state: MachineState, root: Path) -> None:
    """Governor, frequencies and thermal throttle counters of every CPU that has them."""
    throttles = []
    for cpu in map(Path, _cpu_dirs(root)):
        governor = read_text(cpu / "cpufreq/scaling_governor")
        if governor:
            state.governors.append(governor)
        for key, values in (("scaling_cur_freq", state.cur_khz), ("scaling_max_freq", state.max_khz)):
            value = read_int(cpu / "cpufreq" / key)
            if value is not None:
                values.append(value)
        for key in ("core_throttle_count", "package_throttle_count"):
            value = read_int(cpu / "thermal_throttle" / key)
            if value is not None:
                throttles.append(value)
    state.throttle_count = sum(throttles) if throttles else None


def read_temperature_max(root: Path) -> float | None:
    hottest = None
    for _, path in temperature_inputs(root)[0]:
        try:
            value = parse_millidegrees(path.read_bytes())
        except (OSError, ValueError):
            continue
        hottest = value if hottest is None else max(hottest, value)
    return hottest


def read_state(root: Path = SYSTEM_ROOT) -> MachineState:
    """The machine's state now (see the module docstring); a file that is missing gives None."""
    root = Path(root)
    # under a fake root nothing of ours runs on that machine: all its busy time is "outside"
    state = MachineState(t_s=time.monotonic(), own_cpu_s=own_cpu_seconds() if root == SYSTEM_ROOT else 0.0)
    stat = root / "proc/stat"
    try:
        cpu = parse_proc_stat(stat.read_bytes()).get("cpu")
    except OSError:
        cpu = None
    if cpu:
        state.cpu_all_ticks, state.cpu_busy_ticks = sum(cpu), sum(cpu) - cpu[3] - cpu[4]
        state.cpus = len(_cpu_dirs(root)) or None
    state.loadavg, state.runnable = parse_loadavg(read_text(root / "proc/loadavg"))
    vmstat = parse_vmstat(read_text(root / "proc/vmstat"))
    state.swap_in_pages, state.swap_out_pages = vmstat.get("pswpin"), vmstat.get("pswpout")
    meminfo = parse_meminfo(read_text(root / "proc/meminfo"))
    if "SwapTotal" in meminfo and "SwapFree" in meminfo:
        state.swap_used_bytes = meminfo["SwapTotal"] - meminfo["SwapFree"]
    _read_cpus(state, root)
    state.pi_throttled = read_throttled(root)
    state.turbo = read_turbo(root)
    state.temp_max_c = read_temperature_max(root)
    return state


def cpu_count(before: MachineState) -> int:
    return before.cpus or os.cpu_count() or 1


def outside_cpu(before: MachineState, after: MachineState) -> dict[str, float] | None:
    """CPU used outside this process and its reaped children between two states: in seconds, in
    cores (seconds per second) and in % of all CPUs (like sar)."""
    if None in (before.cpu_busy_ticks, after.cpu_busy_ticks, before.own_cpu_s, after.own_cpu_s):
        return None
    capacity_s = (after.cpu_all_ticks - before.cpu_all_ticks) / CLK_TCK
    if capacity_s <= 0:
        return None
    busy_s = (after.cpu_busy_ticks - before.cpu_busy_ticks) / CLK_TCK
    own_s = after.own_cpu_s - before.own_cpu_s
    # tick-sampled (/proc/stat) against precise (getrusage) accounting: clip the small negatives
    outside_s = max(busy_s - own_s, 0.0)
    wall_s = max(after.t_s - before.t_s, 1e-9)
    return {
        "outside_cpu_s": outside_s,
        "outside_cpu_cores": outside_s / wall_s,
        "own_cpu_s": own_s,
        "outside_cpu_pct": 100.0 * outside_s / capacity_s,
        "seconds": wall_s,
    }


def _delta(before: int | None, after: int | None) -> int | None:
    return None if before is None or after is None else after - before


def during(before: MachineState, after: MachineState, temps_c: list[float] = ()) -> dict[str, Any]:
    """The figures of the window between two states (temps_c: the sampler's readings within it)."""
    swap = [
        _delta(before.swap_in_pages, after.swap_in_pages),
        _delta(before.swap_out_pages, after.swap_out_pages),
    ]
    hottest = [t for t in (before.temp_max_c, after.temp_max_c, *temps_c) if t is not None]
    return {
        **(outside_cpu(before, after) or {}),
        "swap_bytes": sum(swap) * os.sysconf("SC_PAGE_SIZE") if None not in swap else None,
        "throttle_events": _delta(before.throttle_count, after.throttle_count),
        "temp_max_c": max(hottest) if hottest else None,
    }


def judge(
    before: MachineState,
    after: MachineState,
    figures: dict[str, Any],
    limits: NoiseThresholds,
    *,
    load: bool = True,
) -> list[str]:
    """Why the window between `before` and `after` was noisy ([] = quiet), one short phrase each.
    `load` False leaves the load average out (it lags by a minute: no use to judge a 1 s window)."""
    reasons, cpus = [], cpu_count(before)
    pct = figures.get("outside_cpu_pct")
    if pct is not None and pct > limits.cpu_pct:
        reasons.append(f"other processes used {pct:.0f} % of {cpus} CPUs (> {limits.cpu_pct:g} %)")
    if load and before.loadavg and before.loadavg[0] > limits.load_per_cpu * cpus:
        reasons.append(
            f"load average {before.loadavg[0]:g} before the run (> {limits.load_per_cpu:g} per CPU)"
        )
    if (figures.get("swap_bytes") or 0) > limits.swap_bytes:
        reasons.append(
            f"swapped {figures['swap_bytes'] / 2**20:.1f} MiB (> {limits.swap_bytes / 2**20:g} MiB)"
        )
    if (figures.get("throttle_events") or 0) > 0:
        reasons.append(f"{figures['throttle_events']} thermal throttle events")
    firmware = throttle_reason(before.pi_throttled, after.pi_throttled)
    if firmware:
        reasons.append(firmware)
    if before.max_khz and after.max_khz and min(after.max_khz) < min(before.max_khz):
        reasons.append(f"CPU frequency capped to {min(after.max_khz) / 1000:.0f} MHz during the run")
    if sorted(set(before.governors)) != sorted(set(after.governors)):
        reasons.append(f"governor changed to {','.join(sorted(set(after.governors))) or 'none'}")
    if (figures.get("temp_max_c") or float("-inf")) >= limits.temp_c:
        reasons.append(f"temperature {figures['temp_max_c']:.0f} C (>= {limits.temp_c:g} C)")
    return reasons


def batch_temperatures(batch: Any) -> list[float]:
    """Every temperature the sampler read during the run (its temp_c:<sensor> series)."""
    if batch is None:
        return []
    return [v for name in batch.names if name.startswith("temp_c:") for _, v in batch.series(name)]


def noise_record(
    before: MachineState,
    after: MachineState,
    limits: NoiseThresholds,
    temps_c: list[float] = (),
    waited: dict[str, Any] | None = None,
    gpu_clocks: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """runs.environment.noise: the raw states, the run's figures, the thresholds and the verdict.
    `gpu_clocks`: the GPU clock rule's figures and reasons (gpu_clocks.clock_check), if it applied."""
    figures = during(before, after, temps_c)
    reasons = judge(before, after, figures, limits)
    if gpu_clocks:
        figures["gpu_clocks"] = gpu_clocks["gpus"]
        reasons += gpu_clocks["reasons"]
    return {
        "before": before.as_dict(),
        "after": after.as_dict(),
        "during": figures,
        "thresholds": asdict(limits),
        "reasons": reasons,
        "noisy": bool(reasons),
        **({"wait": waited} if waited else {}),
    }


def wait_until_quiet(
    limits: NoiseThresholds,
    max_wait_s: float,
    *,
    root: Path = SYSTEM_ROOT,
    window_s: float = WAIT_WINDOW_S,
    sleep: Callable[[float], None] = time.sleep,
    on_busy: Callable[[list[str]], None] | None = None,
) -> dict[str, Any]:
    """--on-noise wait: judge successive windows of `window_s` until one is quiet or `max_wait_s`
    has passed; `on_busy(reasons)` once, after the first busy window. {waited_s, quiet, reasons
    (of the last window)}."""
    start, told = time.monotonic(), False
    while True:
        before = read_state(root)
        sleep(window_s)
        after = read_state(root)
        reasons = judge(before, after, during(before, after), limits, load=False)
        waited_s = time.monotonic() - start
        if reasons and on_busy is not None and not told:
            on_busy(reasons)
            told = True
        if not reasons or waited_s + window_s > max_wait_s:
            return {"waited_s": round(waited_s, 2), "quiet": not reasons, "reasons": reasons}
