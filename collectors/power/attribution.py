"""Energy attribution: from a run's power/energy samples to joules per phase and per inference.

The sampler stores a power source's rails as `energy_j:<rail>` (cumulative counters: RAPL,
NVML) and/or `power_w:<rail>` (INA3221, NVML power, an external meter); the prefixes are
`edgestats.contracts`' ENERGY_PREFIX and POWER_PREFIX. Here the rails that make up the device total
(`PowerSource.total_rails()`) become ONE cumulative series of joules on the monotonic clock; the
energy of any window is then the difference of that series at the window's edges, linearly
interpolated between samples. For power rails the series is the trapezoid
integral, so between two samples the power is taken as the mean of its two ends.

What is computed here is gross energy (idle included). The idle baseline is subtracted in the
`phase_energy` and `inference_energy` views, so a baseline measured later still applies.
Pure Python on purpose: this runs on the device, which has no numpy.
"""

from __future__ import annotations

import bisect
import math
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from edgestats.contracts import ENERGY_PREFIX, POWER_PREFIX


@dataclass
class CumulativeEnergy:
    """Joules since the first sample, at each sample time (monotonic ns), non-decreasing in t."""

    t_ns: list[int]
    joules: list[float]

    def covers(self, start_ns: int, end_ns: int) -> bool:
        return bool(self.t_ns) and self.t_ns[0] <= start_ns <= end_ns <= self.t_ns[-1]

    def at(self, t_ns: int) -> float:
        i = bisect.bisect_left(self.t_ns, t_ns)
        if self.t_ns[i] == t_ns:
            return self.joules[i]
        t0, t1 = self.t_ns[i - 1], self.t_ns[i]
        j0, j1 = self.joules[i - 1], self.joules[i]
        return j0 + (j1 - j0) * (t_ns - t0) / (t1 - t0)

    def between(self, start_ns: int, end_ns: int) -> float | None:
        """Joules over [start_ns, end_ns], or None when the samples do not cover the window."""
        if not self.covers(start_ns, end_ns):
            return None
        return self.at(end_ns) - self.at(start_ns)

    def interval_powers_w(self, start_ns: int | None = None, end_ns: int | None = None) -> list[float]:
        """Mean power of each interval between consecutive samples inside [start_ns, end_ns]."""
        lo = 0 if start_ns is None else bisect.bisect_left(self.t_ns, start_ns)
        hi = len(self.t_ns) if end_ns is None else bisect.bisect_right(self.t_ns, end_ns)
        t, j = self.t_ns[lo:hi], self.joules[lo:hi]
        return [(j1 - j0) / ((t1 - t0) / 1e9) for t0, t1, j0, j1 in zip(t, t[1:], j, j[1:]) if t1 > t0]


def cumulative_from_power(samples: Sequence[tuple[int, float]]) -> CumulativeEnergy:
    """Trapezoid integral of (t_ns, watts) samples sorted by time."""
    t_ns, joules, total = [], [], 0.0
    for i, (t, p) in enumerate(samples):
        if i:
            t_prev, p_prev = samples[i - 1]
            if t == t_prev:
                continue  # a repeated timestamp adds no area and would break interpolation
            total += (t - t_prev) * (p + p_prev) / 2 / 1e9
        t_ns.append(t)
        joules.append(total)
    return CumulativeEnergy(t_ns, joules)


def _cumulative_from_counter(samples: Sequence[tuple[int, float]]) -> CumulativeEnergy:
    t_ns, joules = [], []
    for t, j in samples:
        if t_ns and t == t_ns[-1]:
            continue
        t_ns.append(t)
        joules.append(j - samples[0][1])
    return CumulativeEnergy(t_ns, joules)


def series_by_metric(
    t_ns: Iterable[int], metrics: Iterable[str], values: Iterable[float], wanted: set[str]
) -> dict[str, list[tuple[int, float]]]:
    """(t_ns, value) per wanted metric, time-ordered, finite values only."""
    out: dict[str, list[tuple[int, float]]] = {m: [] for m in wanted}
    for t, m, v in zip(t_ns, metrics, values):
        if m in wanted and v is not None and math.isfinite(v):
            out[m].append((t, v))
    for rows in out.values():
        rows.sort()
    return out


def device_energy(samples: Any, rails: Sequence[str]) -> tuple[CumulativeEnergy | None, str | None]:
    """The device-total cumulative series from a samples table (Arrow: t_ns, metric, value), or
    (None, why). A rail with a counter uses it (exact); otherwise its power is integrated."""
    if not rails:
        return None, "the power source reported no rails"
    wanted = {f"{ENERGY_PREFIX}{r}" for r in rails} | {f"{POWER_PREFIX}{r}" for r in rails}
    if hasattr(samples, "to_pydict"):  # Arrow: keep only the power rows before leaving Arrow
        import pyarrow.compute as pc

        samples = samples.filter(pc.is_in(samples["metric"], value_set=pa_strings(wanted))).to_pydict()
    cols = samples
    by_metric = series_by_metric(cols["t_ns"], cols["metric"], cols["value"], wanted)
    per_rail = []
    for rail in rails:
        counter, power = by_metric[f"{ENERGY_PREFIX}{rail}"], by_metric[f"{POWER_PREFIX}{rail}"]
        if len(counter) >= 2:
            per_rail.append(_cumulative_from_counter(counter))
        elif len(power) >= 2:
            per_rail.append(cumulative_from_power(power))
        else:
            return None, f"fewer than two energy or power samples of rail {rail!r} were stored for this run"
    return sum_series(per_rail), None


def pa_strings(values: set[str]):
    import pyarrow as pa

    return pa.array(sorted(values), pa.string())


def sum_series(series: Sequence[CumulativeEnergy]) -> CumulativeEnergy:
    """Sum of cumulative series; rails of one source are read in the same tick, so the first
    rail's times are used and any other rail is interpolated there."""
    if len(series) == 1:
        return series[0]
    base = series[0]
    t_ns = [t for t in base.t_ns if all(s.covers(t, t) for s in series[1:])]
    return CumulativeEnergy(t_ns, [sum(s.at(t) for s in series) for t in t_ns])


def phase_energy_rows(
    series: CumulativeEnergy | None, phases: Sequence[dict], reason: str | None
) -> dict[str, list]:
    """Columns of `phase_energies` (seq, phase, energy_gross_j, unavailable_reason) per phase."""
    rows: dict[str, list] = {"seq": [], "phase": [], "energy_gross_j": [], "unavailable_reason": []}
    for p in phases:
        energy, why = None, reason
        if series is not None:
            if p.get("end_ns") is None:
                why = "the phase has no end (the worker stopped inside it)"
            else:
                energy = series.between(p["start_ns"], p["end_ns"])
                if energy is None:
                    why = (
                        f"the power samples ({_span(series)}) do not cover this phase's window; "
                        "the sampler starts after the worker is spawned"
                    )
        rows["seq"].append(p["seq"])
        rows["phase"].append(p["phase"])
        rows["energy_gross_j"].append(energy)
        rows["unavailable_reason"].append(None if energy is not None else why)
    return rows


def inference_energies(
    series: CumulativeEnergy | None, starts_ns: Sequence[int | None], latencies_ns: Sequence[int]
) -> list[float | None]:
    """Gross joules over each inference's [start, start + latency] window (None: not covered)."""
    ends_ns = [None if s is None else s + ns for s, ns in zip(starts_ns, latencies_ns)]
    return window_energies(series, starts_ns, ends_ns)


def window_energies(
    series: CumulativeEnergy | None, starts_ns: Sequence[int | None], ends_ns: Sequence[int | None]
) -> list[float | None]:
    """Gross joules over each [start, end] window (None: no series, an open window, not covered)."""
    if series is None:
        return [None] * len(starts_ns)
    return [None if s is None or e is None else series.between(s, e) for s, e in zip(starts_ns, ends_ns)]


def _span(series: CumulativeEnergy) -> str:
    if not series.t_ns:
        return "none"
    return f"{(series.t_ns[-1] - series.t_ns[0]) / 1e9:.2f} s"


# -- idle baseline -------------------------------------------------------------------------------


@dataclass(frozen=True)
class BaselineStats:
    mean_power_w: float
    std_power_w: float | None
    n: int
    seconds: float


def baseline_stats(
    series: CumulativeEnergy, start_ns: int | None = None, end_ns: int | None = None
) -> BaselineStats:
    """Idle power over a window: the mean is energy / time (exact for counters, time-weighted for
    uneven samples); the spread is the std of the per-interval mean powers, n their number."""
    powers = series.interval_powers_w(start_ns, end_ns)
    if not powers:
        raise ValueError("fewer than two samples inside the baseline window")
    lo = series.t_ns[0] if start_ns is None else max(start_ns, series.t_ns[0])
    hi = series.t_ns[-1] if end_ns is None else min(end_ns, series.t_ns[-1])
    seconds = (hi - lo) / 1e9
    energy = series.between(lo, hi)
    mean = energy / seconds if seconds > 0 and energy is not None else statistics.fmean(powers)
    std = statistics.stdev(powers) if len(powers) >= 2 else None
    return BaselineStats(mean, std, len(powers), seconds)
