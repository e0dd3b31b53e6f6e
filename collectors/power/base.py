"""The interface every power source implements (docs/architecture.md §7). Choosing one for
`--power` is selection.py; turning readings into joules per window is energy.py.

A source reports, per rail, cumulative energy (`energy_j`, RAPL and NVML counters: exact, since
the hardware integrates) and/or instantaneous power (`power_w`, Jetson INA3221, NVML power,
an external meter: integrated here by the trapezoid rule). The sampler calls `read(t_ns)` with
its CLOCK_MONOTONIC timestamp, so energy can later be cut to each phase's window.

A source's samples are stored as metrics `energy_j:<rail>` and `power_w:<rail>`; the prefixes
are ENERGY_PREFIX and POWER_PREFIX (edgestats/contracts.py), which every reader and writer of
those rows imports.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

from edgestats.contracts import ENERGY_PREFIX, POWER_PREFIX
from edgestats.errors import EdgestatsError

SYSTEM_ROOT = Path("/")


class PowerSourceError(EdgestatsError):
    """A power source that was asked for by name cannot be used, or a meter file is bad."""


@dataclass(frozen=True)
class PowerReading:
    """One read of every rail. Cumulative `energy_j` counts from the source's first read."""

    t_ns: int  # CLOCK_MONOTONIC, from the sampler
    energy_j: dict[str, float] = field(default_factory=dict)
    power_w: dict[str, float] = field(default_factory=dict)

    def metrics(self) -> list[tuple[str, float]]:
        """(metric, value) pairs as the samples table stores them: energy_j:<rail>, power_w:<rail>."""
        return [
            *((ENERGY_PREFIX + rail, joules) for rail, joules in self.energy_j.items()),
            *((POWER_PREFIX + rail, watts) for rail, watts in self.power_w.items()),
        ]


class PowerSource:
    """Base class. Subclasses set `name` (their registry name) and implement `is_available()`
    and `_sample()`.

    Constructing one touches no files; `is_available()` discovers the rails and says why not.
    A source is constructed as `Source(root)`, or, when its registry entry `takes_path`, as
    `Source(path, clock_offset_s=...)`.
    """

    name: str = ""
    live = True  # False: samples come from a file after the run (external meter), not from read()
    path: Path | None = None  # the file a source that takes --power NAME:PATH reads

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
