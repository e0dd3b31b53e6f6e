"""Power sources behind one interface, their selection by `--power`, and energy arithmetic.

A source reports, per rail, cumulative energy (`energy_j`, RAPL and NVML counters: exact, since
the hardware integrates) and/or instantaneous power (`power_w`, Jetson INA3221, NVML power,
an external meter: integrated here by the trapezoid rule). The sampler calls `read(t_ns)` with
its CLOCK_MONOTONIC timestamp, so energy can later be cut to each phase's window.

`--power` picks one with `select_power_source()`, from the sources in `edgestats.registry.power`
(docs/architecture.md §7): their names, which ones `auto` tries and in what order, which ones
read a file (NAME:PATH). Modules are imported only when their source is probed, so a Raspberry
Pi never imports pynvml.

A source's samples are stored as metrics `energy_j:<rail>` and `power_w:<rail>`; the prefixes
are ENERGY_PREFIX and POWER_PREFIX below, which every reader and writer of those rows imports.
"""

from __future__ import annotations

import bisect
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from edgestats.errors import EdgestatsError
from edgestats.registry import power as registry

SYSTEM_ROOT = Path("/")

# Metric names of a source's rails in the samples table: a cumulative counter (joules since the
# first read) and instantaneous power.
ENERGY_PREFIX, POWER_PREFIX = "energy_j:", "power_w:"


class PowerSourceError(EdgestatsError):
    """A power source that was asked for by name cannot be used, or a meter file is bad."""


@dataclass(frozen=True)
class PowerReading:
    """One read of every rail. Cumulative `energy_j` counts from the source's first read."""

    t_ns: int                                             # CLOCK_MONOTONIC, from the sampler
    energy_j: dict[str, float] = field(default_factory=dict)
    power_w: dict[str, float] = field(default_factory=dict)

    def metrics(self) -> list[tuple[str, float]]:
        """(metric, value) pairs as the samples table stores them: energy_j:<rail>, power_w:<rail>."""
        return [*((ENERGY_PREFIX + rail, joules) for rail, joules in self.energy_j.items()),
                *((POWER_PREFIX + rail, watts) for rail, watts in self.power_w.items())]


class PowerSource:
    """Base class. Subclasses set `name` (their registry name) and implement `is_available()`
    and `_sample()`.

    Constructing one touches no files; `is_available()` discovers the rails and says why not.
    A source is constructed as `Source(root)`, or, when its registry entry `takes_path`, as
    `Source(path, clock_offset_s=...)`.
    """

    name: str = ""
    live = True   # False: samples come from a file after the run (external meter), not from read()
    path: Path | None = None   # the file a source that takes --power NAME:PATH reads

    def __init__(self, root: Path = SYSTEM_ROOT):
        self.root = Path(root)

    def is_available(self) -> tuple[bool, str | None]:
        """(True, None) or (False, why not and what to do about it)."""
        raise NotImplementedError

    def rails(self) -> list[str]:
        """Rail names, known after a successful is_available()."""
        return []

    def total_rails(self) -> list[str]:
        """The rails whose sum is the device's total (energy attribution sums these only):
        by default every rail; sources whose rails nest (RAPL subzones, a Jetson's input
        rail over its parts) override it so nothing is counted twice."""
        return self.rails()

    def read(self, t_ns: int | None = None) -> PowerReading:
        """Read every rail now; `t_ns` is the sampler's monotonic timestamp (default: now)."""
        energy_j, power_w = self._sample()
        return PowerReading(time.monotonic_ns() if t_ns is None else t_ns, energy_j, power_w)

    def _sample(self) -> tuple[dict[str, float], dict[str, float]]:
        raise NotImplementedError

    def close(self) -> None:
        """Release what is_available()/read() opened (NVML handle); reads after close are errors."""

    @property
    def label(self) -> str:
        """What a run stores as its power source: the name, and the file's name for a source
        that reads one (csv:meter.csv)."""
        return f"{self.name}:{self.path.name}" if self.path is not None else self.name


def read_sysfs_text(path: Path) -> str:
    """A sysfs value, stripped. The sources' default reader; tests inject one that raises
    PermissionError, because as root (CI, containers) a chmod 000 file is still readable."""
    with open(path, encoding="ascii") as f:
        return f.read().strip()


# -- selection --------------------------------------------------------------------------------------

def select_power_source(spec: str, root: Path = SYSTEM_ROOT, *, clock_offset_s: float = 0.0
                        ) -> tuple[PowerSource | None, str, dict[str, str]]:
    """(source or None, chosen name, {source: why it was not used}) for a `--power` value.

    `auto` returns the first available of the registry's auto sources (reasons for those tried
    before it), or (None, "none", reasons) when there is none: a run without energy is still a
    run. A source named explicitly that is unusable raises PowerSourceError: the user asked for it.
    """
    spec = (spec or "").strip()
    if spec == "none":
        return None, "none", {}
    if spec == "auto":
        return _first_available(root)
    name, _, path = spec.partition(":")
    try:
        entry = registry.power_source(name)
    except KeyError:
        raise PowerSourceError(f"unknown power source {spec!r}; use one of {registry.spec_help()}") from None
    if entry.takes_path:
        if not path:
            raise PowerSourceError(f"--power {name} needs the meter's file: --power {entry.spec}")
        source = entry.source_class()(Path(path), clock_offset_s=clock_offset_s)
    elif path:
        raise PowerSourceError(f"--power {spec}: {name} reads this device and takes no path; use --power {name}")
    else:
        source = entry.source_class()(root)
    ok, why = source.is_available()
    if not ok:
        source.close()
        raise PowerSourceError(f"power source {spec!r} is not available: {why}")
    return source, name, {}


def _first_available(root: Path) -> tuple[PowerSource | None, str, dict[str, str]]:
    reasons: dict[str, str] = {}
    for entry in auto_entries():
        source = entry.source_class()(root)
        ok, why = source.is_available()
        if ok:
            return source, entry.name, reasons
        source.close()
        reasons[entry.name] = why or "not available"
    return None, "none", reasons


def auto_entries() -> list[registry.PowerSourceEntry]:
    """The sources `--power auto` tries, in its order. Read at call time, so it follows the registry."""
    return [entry for entry in registry.POWER_SOURCES if entry.auto]


def path_source_hint() -> str:
    """How to name a source that reads a file, for messages that say where energy could come
    from: "--power csv:PATH (an external meter's CSV log, aligned by timestamp)"."""
    entries = [entry for entry in registry.POWER_SOURCES if entry.takes_path]
    return " or ".join(f"--power {entry.spec} ({entry.help})" for entry in entries) or "--power NAME"


def describe_sources(root: Path = SYSTEM_ROOT) -> list[dict[str, Any]]:
    """Every registered source for `edgestats doctor`, in registry order: usable or why not, and
    its rails. A source that reads a file is used only when given one, so it is not probed; its
    rails are those it names before reading (constructing a source touches no files)."""
    rows = []
    for entry in registry.POWER_SOURCES:
        if entry.takes_path:
            rows.append({"name": entry.name, "usable": True, "rails": entry.source_class()(Path()).rails(),
                         "takes_path": True, "reason": f"{entry.help}, used only when given: --power {entry.spec}"})
            continue
        source = entry.source_class()(root)
        ok, why = source.is_available()
        rows.append({"name": entry.name, "usable": ok, "reason": why, "rails": source.rails() if ok else [],
                     "takes_path": False})
        source.close()
    return rows


# -- energy arithmetic -----------------------------------------------------------------------------

def counter_delta_uj(previous_uj: int, current_uj: int, max_range_uj: int) -> int:
    """Energy between two reads of a counter that wraps to 0 after `max_range_uj`.

    Assumes at most one wrap between reads (RAPL package: ~262 kJ, over 40 min at 100 W).
    The kernel's max_energy_range_uj is the largest value, so the true modulus is one
    hardware energy unit (~61 uJ) more; that error is far below the counter's noise.
    """
    if current_uj >= previous_uj:
        return current_uj - previous_uj
    return (max_range_uj - previous_uj) + current_uj


class EnergyCounter:
    """Turns raw reads of one wrapping counter into joules since the first read."""

    def __init__(self, max_range_uj: int):
        self.max_range_uj = max_range_uj
        self._last_uj: int | None = None
        self._total_uj = 0   # int: microjoules stay exact however long the run

    def update(self, raw_uj: int) -> float:
        if self._last_uj is not None:
            self._total_uj += counter_delta_uj(self._last_uj, raw_uj, self.max_range_uj)
        self._last_uj = raw_uj
        return self._total_uj / 1e6


def _interpolate(samples: Sequence[tuple[float, float]], times: list[float], t: float) -> float:
    """Value at `t` on the straight line between the samples either side of it."""
    i = bisect.bisect_left(times, t)
    if times[i] == t:
        return samples[i][1]
    (t0, v0), (t1, v1) = samples[i - 1], samples[i]
    return v0 + (v1 - v0) * (t - t0) / (t1 - t0)


def _check_covered(times: list[float], start: float, end: float) -> None:
    if end < start:
        raise ValueError(f"window ends ({end}) before it starts ({start})")
    if not times or times[0] > start or times[-1] < end:
        span = f"[{times[0]}, {times[-1]}]" if times else "no samples"
        raise ValueError(f"samples {span} do not cover the window [{start}, {end}]; "
                         "sampling must start before and stop after it")


def value_at(samples: Sequence[tuple[float, float]], t: float) -> float:
    """The (t, value) samples' value at `t`, linearly interpolated; ValueError outside them."""
    times = [s[0] for s in samples]
    _check_covered(times, t, t)
    return _interpolate(samples, times, t)


def integrate_trapezoid(samples: Sequence[tuple[float, float]], start: float, end: float) -> float:
    """Area under (t, value) samples, sorted by t, over [start, end] (unit: value x t-unit).

    Partial intervals at the edges use the value interpolated at `start`/`end`, so a phase
    shorter than the sampling interval still gets its share, not zero and not a whole interval.
    """
    times = [t for t, _ in samples]
    _check_covered(times, start, end)
    points = [(start, _interpolate(samples, times, start))]
    points += [(t, v) for t, v in samples if start < t < end]
    points.append((end, _interpolate(samples, times, end)))
    return sum((t1 - t0) * (v0 + v1) / 2 for (t0, v0), (t1, v1) in zip(points, points[1:]))


def integrate_power_w(samples_ns: Sequence[tuple[int, float]], start_ns: int, end_ns: int) -> float:
    """Joules from (monotonic ns, watts) samples over [start_ns, end_ns]."""
    return integrate_trapezoid(samples_ns, start_ns, end_ns) / 1e9


def energy_in_window_j(cumulative_ns: Sequence[tuple[int, float]], start_ns: int, end_ns: int) -> float:
    """Joules over [start_ns, end_ns] from (monotonic ns, cumulative joules) reads, interpolated."""
    times = [t for t, _ in cumulative_ns]
    _check_covered(times, start_ns, end_ns)
    return _interpolate(cumulative_ns, times, end_ns) - _interpolate(cumulative_ns, times, start_ns)


def rail_energy_j(readings: Sequence[PowerReading], rail: str, start_ns: int, end_ns: int) -> float:
    """Joules on one rail over a window: from its counter where every read has one, else from power."""
    if readings and all(rail in r.energy_j for r in readings):
        return energy_in_window_j([(r.t_ns, r.energy_j[rail]) for r in readings], start_ns, end_ns)
    if readings and all(rail in r.power_w for r in readings):
        return integrate_power_w([(r.t_ns, r.power_w[rail]) for r in readings], start_ns, end_ns)
    raise ValueError(f"rail {rail!r} has no energy or power in every reading")


def energy_above_idle_j(energy_j: float, idle_power_w: float, duration_ns: int) -> float:
    """The area between the workload's curve and the idle baseline (pCAMP Figure 1).

    Not clamped at 0: a workload within the idle noise should average out to ~0 over
    repeats, and clamping would bias every small figure upwards.
    """
    return energy_j - idle_power_w * duration_ns / 1e9
