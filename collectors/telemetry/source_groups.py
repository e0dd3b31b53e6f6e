"""The sampler's groups that read through something other than a kernel file: NVIDIA GPUs and a
caller's sources. GPUs are read through NVML; the sources a caller hands the sampler are power
sources, or any reader of (metric, value) pairs.

Separate from groups.py, whose groups parse /proc and /sys files (procfs.py), because these wrap
an optional library or a caller's object; the Sampler (sampler.py) reads both kinds alike.
"""

from __future__ import annotations

from typing import Any

from edgestats.collectors.power.base import PowerReading
from edgestats.collectors.telemetry import procfs
from edgestats.collectors.telemetry.groups import Group, Unavailable
from edgestats.collectors.telemetry.procfs import Emit

# The energy counter is read in a group of its own. On an H200 host (driver 580) one
# nvmlDeviceGetTotalEnergyConsumption cost 4.06 ms of CPU, the other six queries 1-8 us each: in
# one group on the 0.5 % budget, every metric was read once in 0.7 s, and the clock rule
# (gpu_clocks.py, 10 readings in a steady phase) judged no run shorter than 7 s. Apart, the six
# are read every tick and the counter, which loses nothing between reads, once in about 0.8 s.
ENERGY_METRICS = ("gpu_energy_j",)


def nvml_groups(budget: float, note: procfs.Note) -> list[Nvml]:
    """The sampler's NVML groups: every metric but the energy counter, then the counter alone."""
    everything_else = Nvml(budget, note, exclude=ENERGY_METRICS)
    return [everything_else, Nvml(budget, note, only=ENERGY_METRICS)]


class Nvml(Group):
    """GPU utilisation, memory in use, power, energy, SM and memory clocks (MHz) and performance
    state (0 = P0 .. 15) per NVIDIA GPU (live system only); `only` or `exclude` picks which.

    Named gpu_*:gpuN so they never mix with a power source's energy_j:<rail> rows (`--power
    nvml` reads the same counters as a rail). A query a GPU does not support (energy before
    Volta) is recorded as unavailable once and not asked again.
    """

    name = "gpu"

    def __init__(
        self, budget: float, note: procfs.Note, *, only: tuple[str, ...] = (), exclude: tuple[str, ...] = ()
    ):
        super().__init__()
        self.budget, self.note, self.energy0 = budget, note, {}
        try:
            import pynvml  # optional (edgestats[nvidia])
        except ImportError:
            raise Unavailable("pynvml not installed (pip install 'edgestats[nvidia]')") from None
        try:
            pynvml.nvmlInit()
        except Exception as exc:  # NVMLError_LibraryNotFound, DriverNotLoaded, ...
            raise Unavailable(f"NVML not usable: {exc}") from None
        self.nvml = pynvml
        try:
            handles = [pynvml.nvmlDeviceGetHandleByIndex(i) for i in range(pynvml.nvmlDeviceGetCount())]
        except Exception as exc:
            self.close()
            raise Unavailable(f"NVML query failed: {exc}") from None
        queries = {
            "gpu_util_pct": lambda h: pynvml.nvmlDeviceGetUtilizationRates(h).gpu,
            "gpu_mem_bytes": lambda h: pynvml.nvmlDeviceGetMemoryInfo(h).used,
            "gpu_power_w": lambda h: pynvml.nvmlDeviceGetPowerUsage(h) / 1e3,  # mW
            "gpu_energy_j": lambda h: pynvml.nvmlDeviceGetTotalEnergyConsumption(h) / 1e3,  # mJ
            # clocks and performance state: a run that began before the clocks rose, or was
            # throttled, shows here (the sentinel's clock rule, collectors/telemetry/gpu_clocks.py)
            "gpu_sm_clock_mhz": lambda h: pynvml.nvmlDeviceGetClockInfo(h, pynvml.NVML_CLOCK_SM),
            "gpu_mem_clock_mhz": lambda h: pynvml.nvmlDeviceGetClockInfo(h, pynvml.NVML_CLOCK_MEM),
            "gpu_pstate": lambda h: performance_state(pynvml, h),
        }
        queries = {m: fn for m, fn in queries.items() if (not only or m in only) and m not in exclude}
        if only:
            self.name = f"gpu ({', '.join(only)})"
        self.calls = [(f"{m}:gpu{i}", fn, h) for i, h in enumerate(handles) for m, fn in queries.items()]
        if not self.calls:
            self.close()
            raise Unavailable("NVML found no GPU")

    def read(self, t_ns: int, emit: Emit) -> None:
        names, values = [], []
        for call in list(self.calls):
            metric, query, handle = call
            try:
                value = float(query(handle))
            except Exception as exc:
                self.note(metric, f"NVML: {exc}")
                self.calls.remove(call)
                continue
            if metric.startswith("gpu_energy_j"):
                value -= self.energy0.setdefault(metric, value)  # the counter runs from driver load
            names.append(metric)
            values.append(value)
        emit(tuple(names), values)

    def close(self) -> None:
        try:
            self.nvml.nvmlShutdown()
        except Exception:
            pass


def performance_state(pynvml: Any, handle: Any) -> int:
    """The GPU's performance state as its number (0 = P0, the fastest, to 15 = P15, the slowest);
    NVML's "unknown" (32) is an error, so the sensor is noted unavailable rather than stored."""
    state = int(pynvml.nvmlDeviceGetPerformanceState(handle))
    if not 0 <= state <= 15:
        raise ValueError(f"performance state unknown ({state})")
    return state


class Extra(Group):
    """A source given by the caller: a power source (read(t_ns) -> PowerReading: energy_j:<rail>,
    power_w:<rail>) or anything whose read(t_ns) returns (metric, value) pairs or a dict."""

    def __init__(self, source: Any, budget: float):
        super().__init__()
        self.source, self.budget = source, getattr(source, "budget", budget)
        self.name = getattr(source, "name", "") or type(source).__name__
        self._names: dict[tuple, tuple[str, ...]] = {}  # (energy rails, power rails) -> metric names

    def read(self, t_ns: int, emit: Emit) -> None:
        reading = self.source.read(t_ns)
        if type(reading) is PowerReading:
            # metrics() builds a pair and a name string per rail on every read; power-only
            # sampling runs at 1 kHz, so the names are made once per set of rails instead.
            energy, power = reading.energy_j, reading.power_w
            rails = (tuple(energy), tuple(power))
            names = self._names.get(rails)
            if names is None:
                names = self._names[rails] = tuple(m for m, _ in reading.metrics())
            emit(names, [*map(float, energy.values()), *map(float, power.values())])
            return
        if hasattr(reading, "metrics"):  # a PowerReading's subclass
            pairs = reading.metrics()
        else:
            pairs = list(reading.items() if isinstance(reading, dict) else reading)
        emit(tuple(m for m, _ in pairs), [float(v) for _, v in pairs])
