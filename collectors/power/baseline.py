"""`edgestats baseline`: this device's idle power, measured for a fixed time (pCAMP Figure 1).

The result (mean, std and n of the power over the window, the rails summed) goes into the
`baselines` table; the energy views subtract it from every run on the same device and kind of
power source, and carry its uncertainty into their intervals.

Live sources (RAPL, NVML, Jetson) are read at `hz` for `seconds`. An external meter's log is
cut to a window instead: the `seconds` that follow the command's start (it waits, while the
meter keeps logging), or a stretch recorded earlier (`start_unix_s`: no waiting).
"""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Callable
from dataclasses import dataclass

from edgestats.collectors.power.attribution import (
    BaselineStats,
    baseline_stats,
    cumulative_from_power,
    device_energy,
)
from edgestats.collectors.power.base import PowerSource, PowerSourceError
from edgestats.collectors.power.meter_csv import ClockAnchor
from edgestats.collectors.power.selection import path_source_hint, select_power_source
from edgestats.errors import EdgestatsError


class BaselineError(EdgestatsError):
    """The idle baseline cannot be measured as asked."""


@dataclass(frozen=True)
class Baseline:
    stats: BaselineStats
    rails: list[str]
    measured_at: dt.datetime  # the window's start, UTC


def measure_live(
    source: PowerSource, seconds: float, hz: float, *, on_progress: Callable[[float], None] | None = None
) -> Baseline:
    """Read a live source at `hz` for `seconds` on fixed deadlines, then reduce the readings."""
    rails = source.total_rails()
    period_ns = round(1e9 / hz)
    measured_at = dt.datetime.now(dt.timezone.utc)
    t0 = time.monotonic_ns()
    columns: dict[str, list] = {"t_ns": [], "metric": [], "value": []}
    k = 0
    while True:
        deadline = t0 + k * period_ns
        now = time.monotonic_ns()
        if deadline > now:
            time.sleep((deadline - now) / 1e9)
        t = time.monotonic_ns()
        try:
            reading = source.read(t)
        except PowerSourceError as exc:
            raise BaselineError(f"reading {source.name} failed during the baseline: {exc}") from exc
        for metric, value in reading.metrics():
            columns["t_ns"].append(t)
            columns["metric"].append(metric)
            columns["value"].append(float(value))
        if on_progress:
            on_progress((t - t0) / 1e9)
        if t - t0 >= seconds * 1e9:
            break
        k = max(k + 1, (time.monotonic_ns() - t0) // period_ns + 1)  # skip deadlines already past
    series, why = device_energy(columns, rails)
    if series is None:
        raise BaselineError(f"{source.name}: {why}")
    return Baseline(baseline_stats(series), rails, measured_at)


def measure_meter(
    source,
    seconds: float,
    *,
    start_unix_s: float | None = None,
    on_progress: Callable[[float], None] | None = None,
) -> Baseline:
    """An external meter's idle window: wait `seconds` (the meter logs meanwhile) unless the
    window was recorded before (`start_unix_s`, host wall-clock seconds)."""
    anchor = ClockAnchor.now()
    if start_unix_s is None:
        start_unix_s = anchor.unix_ns / 1e9
        waited = 0.0
        while waited < seconds:
            time.sleep(min(1.0, seconds - waited))
            waited = (time.monotonic_ns() - anchor.monotonic_ns) / 1e9
            if on_progress:
                on_progress(waited)
    start_ns = anchor.to_monotonic_ns(start_unix_s)
    end_ns = start_ns + round(seconds * 1e9)
    try:
        source.load()
        rows = source.samples_monotonic_ns(start_ns, end_ns, anchor)
    except PowerSourceError as exc:
        raise BaselineError(str(exc)) from exc
    series = cumulative_from_power(rows)
    if not series.covers(start_ns, end_ns):
        logged = (
            f"{anchor.to_unix_s(rows[0][0]):.1f}-{anchor.to_unix_s(rows[-1][0]):.1f}" if rows else "nothing"
        )
        raise BaselineError(
            f"{source.path} does not cover the idle window {start_unix_s:.1f}-{start_unix_s + seconds:.1f} "
            f"(Unix s, this host's clock; the log covers {logged} there). Give --start with a time the meter "
            "logged while the device was idle, or --clock-offset if the meter's clock differs from "
            "this host's"
        )
    try:
        stats = baseline_stats(series, start_ns, end_ns)
    except ValueError as exc:
        raise BaselineError(f"{source.path}: {exc}; log at a higher rate or give a longer --seconds") from exc
    return Baseline(stats, source.total_rails(), dt.datetime.fromtimestamp(start_unix_s, dt.timezone.utc))


def record_baseline(
    db_path,
    power_spec: str = "auto",
    seconds: float = 60.0,
    hz: float = 10.0,
    *,
    clock_offset_s: float = 0.0,
    start_unix_s: float | None = None,
    on_progress: Callable[[float], None] | None = None,
    device_name: str | None = None,
) -> dict:
    """Measure this device's idle power with the chosen source and store it in `db_path`, under
    the device `device_name` names (else the remembered name, else the host name, as collect).
    Returns the stored baselines row, with the device's name and the naming note, if any."""
    from edgestats.collectors.host.facts import named_device_facts
    from edgestats.store.results import Store

    if not seconds > 0:
        raise BaselineError(f"--seconds {seconds:g}: give a positive duration (60 s or more is typical)")
    if not hz > 0:
        raise BaselineError(f"--hz {hz:g}: give a positive sampling rate")
    facts, name_note = named_device_facts(device_name)  # a name that cannot be is refused before measuring
    source, name, reasons = select_power_source(power_spec, clock_offset_s=clock_offset_s)
    if source is None:
        tried = "; ".join(f"{n}: {why}" for n, why in reasons.items()) or "--power none"
        raise BaselineError(
            f"no power source to measure idle power with ({tried}). Give one with --power, "
            f"e.g. {path_source_hint()}"
        )
    try:
        if source.live:
            if start_unix_s is not None:
                raise BaselineError(
                    f"--start works with a source that reads a log ({path_source_hint()}); "
                    f"{name} is read live, now"
                )
            baseline = measure_live(source, seconds, hz, on_progress=on_progress)
        else:
            baseline = measure_meter(source, seconds, start_unix_s=start_unix_s, on_progress=on_progress)
    finally:
        source.close()
    stats = baseline.stats
    with Store.open(db_path) as store:
        device_id = store.register_device(facts)
        row = {
            "device_id": device_id,
            "measured_at": baseline.measured_at,
            "seconds": stats.seconds,
            "source": source.label,
            "mean_power_w": stats.mean_power_w,
            "std_power_w": stats.std_power_w,
            "n": stats.n,
            "rails": baseline.rails,
        }
        row["baseline_id"] = store.write_baseline(row)
    return {**row, "device": facts["name"], "device_name_note": name_note}
