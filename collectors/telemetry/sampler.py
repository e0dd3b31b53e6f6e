"""The telemetry sampler: a thread of the orchestrator that samples the worker's process tree, the
system and the sensors. It samples at a fixed rate, stamped with time.monotonic_ns().

Ticks fall on absolute deadlines t0 + k/hz, so the rate does not drift; a tick that overruns
(or starts late) skips the deadlines already past and counts them as missed. All values of a
tick carry its start time. Metrics (units in the names):

- every tick (one pread of a kept-open file each; see procfs): rss_bytes; cpu_user_pct,
  cpu_system_pct, cpu_total_pct (= user + system) and, with kernel delay accounting on,
  cpu_iowait_pct: the worker's process tree over the tick in % of ONE core (200 = two busy
  cores); io_read_bytes, io_read_ops (read syscalls), io_write_bytes: the tree's counters since
  the worker's birth; sys_cpu_{user,system,iowait,total}_pct (% of ALL cores, like sar) and
  cpu_core{N}_pct from /proc/stat; sys_io_read_bytes, sys_io_read_ops: the physical disks, since
  the sampler's start. CPU times come in USER_HZ ticks (10 ms): at 100 Hz a core's sample is
  0 or 100 %, so average CPU figures over a window, never read one tick alone.
- budgeted (each group read at most as often as keeps its own CPU time under a share of one
  core, and at most once a tick): uss_bytes (`uss_budget`, default 0.2 %: smaps_rollup walks the
  page tables, ~5 ms for 300 MB here, holding the worker's mmap lock meanwhile); and, under
  `budget` (default 0.5 %; a source's own `budget` attribute wins, None = every tick):
  temp_c:<zone>; gpu_util_pct:gpuN (Jetson sysfs or NVML) and, from NVML, gpu_mem_bytes:gpuN,
  gpu_power_w:gpuN, gpu_energy_j:gpuN (from the first read), gpu_sm_clock_mhz:gpuN,
  gpu_mem_clock_mhz:gpuN, gpu_pstate:gpuN (0 = P0); each extra source (a power source
  gives energy_j:<rail>, power_w:<rail>); those two groups are in source_groups.py. Reads per
  group, their rate and cost are in the stats.

A sensor that cannot be read is recorded once in `unavailable` with the reason and never
raised; one failing MAX_FAILS times in a row is dropped. System files are read under `root`
(tests use fake trees); the process tree always comes from the live /proc.
"""

from __future__ import annotations

import os
import select
import threading
import time
from array import array
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from edgestats.collectors.telemetry import procfs
from edgestats.collectors.telemetry.groups import (
    Group,
    ProcessTree,
    SysCpu,
    SysDisk,
    SysfsGauges,
    Unavailable,
    Uss,
)
from edgestats.collectors.telemetry.procfs import MAX_FAILS
from edgestats.collectors.telemetry.source_groups import Extra, nvml_groups

SYSTEM_ROOT = Path("/")


@dataclass
class SampleBatch:
    """Columnar samples (the `samples` table minus run_id), the unavailable sensors and stats."""

    t_ns: array
    codes: array
    names: list[str]
    value: array
    unavailable: list[tuple[str, str]] = field(default_factory=list)
    stats: dict[str, Any] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.value)

    def to_arrow(self):
        import pyarrow as pa

        n = len(self.value)
        codes = pa.Array.from_buffers(pa.int32(), n, [None, pa.py_buffer(self.codes)])
        return pa.table(
            {
                "t_ns": pa.Array.from_buffers(pa.int64(), n, [None, pa.py_buffer(self.t_ns)]),
                "metric": pa.array(self.names, pa.string()).take(codes),
                "value": pa.Array.from_buffers(pa.float64(), n, [None, pa.py_buffer(self.value)]),
            }
        )

    def series(self, metric: str) -> list[tuple[int, float]]:
        """(t_ns, value) of one metric, in time order."""
        if metric not in self.names:
            return []
        code = self.names.index(metric)
        return [(t, v) for t, c, v in zip(self.t_ns, self.codes, self.value) if c == code]


class Sampler:
    """Samples `pid`'s process tree, the system and the sensors at `hz` in a background thread.

    `budget`: the share of one core's CPU time each costly group (temperatures, GPU, each extra
    source) may take; `uss_budget` the same for USS (0: no USS); `tree_refresh_s`: how often the
    tree's process list is re-read (CPU time and I/O of a child that lives and dies between two
    refreshes still count, through its parent's totals; its memory does not).
    """

    def __init__(
        self,
        pid: int,
        hz: float = 10.0,
        *,
        root: Path = SYSTEM_ROOT,
        extra_sources: Iterable[Any] = (),
        budget: float = 0.005,
        uss_budget: float = 0.002,
        tree_refresh_s: float = 0.25,
        gpu: bool = True,
    ):
        if not hz > 0:
            raise ValueError(f"sampling rate must be positive, got {hz}")
        self.pid, self.hz, self.root, self.budget = pid, float(hz), Path(root), budget
        self.extra_sources, self.tree_refresh_s, self.gpu = list(extra_sources), tree_refresh_s, gpu
        self.uss_budget = uss_budget
        self.period_ns = max(1, round(1e9 / self.hz))
        self.unavailable: list[tuple[str, str]] = []
        self._noted: set[str] = set()
        self._t, self._codes, self._values = array("q"), array("i"), array("d")
        self._index: dict[str, int] = {}
        self._codes_of: dict[tuple, array] = {}
        self._stopping = False
        self._wake_r = self._wake_w = -1  # a pipe: stop() writes to it to end the wait at once
        self._thread: threading.Thread | None = None
        self.groups: list[Group] = []
        self.batch: SampleBatch | None = None
        self.ticks = self.missed = self.t0 = self.t_last = self.cpu_ns = self.tick_ns_sum = (
            self.tick_ns_max
        ) = 0

    def note(self, sensor: str, reason: str) -> None:
        """Record a sensor as unavailable, once."""
        if sensor not in self._noted:
            self._noted.add(sensor)
            self.unavailable.append((sensor, reason))

    def _build(self) -> list[Group]:
        live_iowait = procfs.delayacct_enabled(SYSTEM_ROOT)
        if not live_iowait:
            self.note(
                "cpu_iowait_pct",
                "per-process I/O wait needs kernel delay accounting: "
                "sysctl -w kernel.task_delayacct=1 (sys_cpu_iowait_pct is recorded)",
            )
        self.tree = ProcessTree(self.pid, self.note, int(self.tree_refresh_s * 1e9), live_iowait)
        groups: list[Group] = [self.tree]
        for name, make in (("sys_cpu", SysCpu), ("sys_io", SysDisk)):
            try:
                groups.append(make(self.root))
            except (OSError, ValueError) as exc:
                self.note(name, str(exc))
        temps, _ = procfs.temperature_inputs(self.root)
        jetson = procfs.jetson_gpu_load(self.root)
        gauges = [("temp_c", temps, 0.001), ("gpu", [("gpu_util_pct:gpu0", jetson)] if jetson else [], 0.1)]
        for name, inputs, scale in gauges:
            if inputs:
                try:
                    groups.append(SysfsGauges(name, inputs, scale, self.budget, self.note))
                except Unavailable as exc:
                    self.note(name, str(exc))
        if not temps:
            self.note("temp_c", f"no thermal zone or hwmon temperature under {self.root / 'sys/class'}")
        groups += [Extra(s, self.budget) for s in self.extra_sources if getattr(s, "live", True)]
        if self.gpu and not jetson:
            try:
                if self.root != SYSTEM_ROOT:
                    raise Unavailable(f"NVML reads the live system, not {self.root}")
                groups += nvml_groups(self.budget, self.note)  # the energy counter apart: costly
            except Unavailable as exc:
                self.note("gpu", str(exc))
        if self.uss_budget:
            groups.append(Uss(self.tree, self.uss_budget))  # last: the slowest read of a tick
        return groups

    def start(self) -> Sampler:
        if self._thread is not None:
            raise RuntimeError("a Sampler starts once")
        self.groups = self._build()
        self.all_groups = list(self.groups)
        self._wake_r, self._wake_w = os.pipe()
        self.t0 = time.monotonic_ns()
        self.tree.prime(self.t0)
        self._read_sources(self.t0)
        self._thread = threading.Thread(target=self._loop, name=f"edgestats-sampler-{self.pid}", daemon=True)
        self._thread.start()
        return self

    def _emit(self, names: tuple, values: list) -> None:
        """Append one group's values; `names` is usually the group's constant tuple, so its
        metric codes are looked up once."""
        codes = self._codes_of.get(names)
        if codes is None:
            codes = self._codes_of[names] = array(
                "i", [self._index.setdefault(n, len(self._index)) for n in names]
            )
        self._codes.extend(codes)
        self._values.extend(values)

    def _loop(self) -> None:
        cpu0 = time.thread_time_ns()
        period, deadline = self.period_ns, self.t0 + self.period_ns
        wake = (self._wake_r,)
        now = time.monotonic_ns()
        try:
            while True:
                while now < deadline:
                    # select() on the stop pipe: one syscall per wait (Event.wait costs ~60 % more
                    # CPU per wake-up here) and stop() still ends the wait at once
                    if select.select(wake, (), (), (deadline - now) / 1e9)[0]:
                        return
                    now = time.monotonic_ns()
                if self._stopping:
                    return
                self._tick(now)
                deadline += period
                now = time.monotonic_ns()  # the tick's end is the next wait's start
                if now >= deadline:  # overran (or woke late): skip the deadlines already past
                    skipped = (now - deadline) // period + 1
                    self.missed += skipped
                    deadline += skipped * period
        finally:
            self.cpu_ns = time.thread_time_ns() - cpu0

    def _read_group(self, group: Group, t: int) -> None:
        try:
            group.read(t, self._emit)
            group.fails = 0
        except Exception as exc:  # a sensor never stops the run
            group.fails += 1
            self.note(group.name, f"{type(exc).__name__}: {exc}")
            if group.fails >= MAX_FAILS:
                self.groups.remove(group)

    def _read_sources(self, t: int) -> None:
        """Read the caller's sources (power) once outside the schedule, at start and at stop, so
        their series spans the whole time the worker was watched: energy is cut from it per phase
        by interpolation, which needs a sample either side of every window."""
        n0 = len(self._values)
        for group in tuple(self.groups):
            if isinstance(group, Extra):
                self._read_group(group, t)
        if len(self._values) > n0:
            self._t.extend([t] * (len(self._values) - n0))

    def _tick(self, t: int) -> None:
        n0, c0 = len(self._values), time.perf_counter_ns()
        emit, note = self._emit, self.note
        for group in tuple(self.groups):  # a copy: a failing group is removed from the list
            budget = group.budget
            if budget is None:
                # _read_group inlined: it runs for every every-tick group on every tick
                try:
                    group.read(t, emit)
                    group.fails = 0
                except Exception as exc:  # a sensor never stops the run
                    group.fails += 1
                    note(group.name, f"{type(exc).__name__}: {exc}")
                    if group.fails >= MAX_FAILS:
                        self.groups.remove(group)
                group.reads += 1
            elif t >= group.next_ns:
                self._read_budgeted(group, t)
        n = len(self._values) - n0
        if n:
            self._t.extend([t] * n)
        self.ticks += 1
        self.t_last = t
        spent = time.perf_counter_ns() - c0
        self.tick_ns_sum += spent
        if spent > self.tick_ns_max:
            self.tick_ns_max = spent

    def _read_budgeted(self, group: Group, t: int) -> None:
        g0 = time.thread_time_ns() if group.budget else 0
        self._read_group(group, t)
        group.reads += 1
        if group.budget:  # CPU time, not wall: a read that waits on I2C costs the worker nothing
            cost = time.thread_time_ns() - g0
            group.cost_ns = cost if group.reads == 1 else 0.7 * group.cost_ns + 0.3 * cost
            group.next_ns = t + int(group.cost_ns / group.budget)

    def stop(self) -> SampleBatch:
        """Stop the thread and return everything sampled (idempotent)."""
        if self.batch is not None:
            return self.batch
        if self._thread is not None:
            self._stopping = True
            os.write(self._wake_w, b"x")
            self._thread.join()
            os.close(self._wake_r)
            os.close(self._wake_w)
            self._read_sources(time.monotonic_ns())
        for group in getattr(self, "all_groups", []):
            group.close()
        self.batch = SampleBatch(
            self._t, self._codes, list(self._index), self._values, list(self.unavailable), self.stats()
        )
        return self.batch

    def stats(self) -> dict[str, Any]:
        span_s = (self.t_last - self.t0) / 1e9
        ticks = max(self.ticks, 1)
        return {
            "requested_hz": self.hz,
            "ticks": self.ticks,
            "missed_ticks": self.missed,
            "achieved_hz": self.ticks / span_s if span_s > 0 else 0.0,
            "duration_s": span_s,
            "cpu_s_per_tick": self.cpu_ns / 1e9 / ticks,
            "tick_wall_us_mean": self.tick_ns_sum / 1e3 / ticks,
            "tick_wall_us_max": self.tick_ns_max / 1e3,
            "budget": self.budget,
            "uss_budget": self.uss_budget,
            "tree_refresh_s": self.tree_refresh_s,
            "tree_max_procs": getattr(getattr(self, "tree", None), "max_procs", 0),
            "sources_not_live": [
                getattr(s, "name", type(s).__name__)
                for s in self.extra_sources
                if not getattr(s, "live", True)
            ],  # e.g. a meter's file, aligned after the run
            "groups": {
                g.name: {
                    "reads": g.reads,
                    "hz": g.reads / span_s if span_s > 0 else 0.0,
                    "cost_us": round(g.cost_ns / 1e3, 1) if g.budget else None,
                }
                for g in getattr(self, "all_groups", [])
            },
        }

    def __enter__(self) -> Sampler:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
