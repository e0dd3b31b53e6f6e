"""Energy arithmetic on a power source's readings (docs/architecture.md §5). The operations:
wrapping counters into joules, power integrated by the trapezoid rule, a cumulative series cut to a
window, and the idle baseline taken off."""

from __future__ import annotations

import bisect
from collections.abc import Sequence

from edgestats.collectors.power.base import PowerReading


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
        self._total_uj = 0  # int: microjoules stay exact however long the run

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
        raise ValueError(
            f"samples {span} do not cover the window [{start}, {end}]; "
            "sampling must start before and stop after it"
        )


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
