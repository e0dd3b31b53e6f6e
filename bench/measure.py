"""Measuring helpers for bench/ingest.py and bench/ingest_encodings.py.

Peak RSS, CPU time, file sizes, the timed write both ingest paths share, the two ways of writing
one run's samples (A: edgestats' Store.write_run, B: a raw DuckDB Arrow insert) and the exact
row fingerprint every stored file is checked with.

Importing this module puts the checkout first on sys.path, so `edgestats` imports without an
install.
"""

from __future__ import annotations

import gc
import os
import platform
import resource
import sys
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import duckdb
import pyarrow as pa

# Run from a checkout without installing: put the repo root first on sys.path.
REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from edgestats.store.results import Store  # noqa: E402

# -- the data's metric names (ingest.make_samples builds the table) and the run row ---------------

# What one sampler tick of `edgestats collect` records on a 4-core device with RAPL and one
# thermal zone: the worker's memory, sar-like CPU columns, per-core load, I/O counters,
# a temperature, power and a cumulative energy counter. 15 names, every tick, one t_ns per tick.
METRICS = (
    "rss_bytes",
    "uss_bytes",
    "cpu_user_pct",
    "cpu_system_pct",
    "cpu_iowait_pct",
    "cpu_total_pct",
    "cpu_core0_pct",
    "cpu_core1_pct",
    "cpu_core2_pct",
    "cpu_core3_pct",
    "io_read_bytes",
    "io_write_bytes",
    "temp_c:cpu-thermal",
    "power_w",
    "energy_j:package-0",
)

RUN = {"kind": "inference", "status": "ok", "framework": "bench", "runtime": "bench", "model": "ingest"}


# -- measuring helpers -------------------------------------------------------------------------


class PeakRss:
    """Peak resident set of this process over a section, via Linux's resettable VmHWM.

    Where /proc/self/clear_refs cannot be written (not Linux, or a locked-down container), only
    the whole process's peak is known (getrusage) and per-section peaks are reported as None.
    """

    def __init__(self) -> None:
        self.resettable = self._reset()

    @staticmethod
    def _status(key: str) -> int | None:
        try:
            with open("/proc/self/status") as f:
                for line in f:
                    if line.startswith(key + ":"):
                        return int(line.split()[1]) * 1024
        except OSError:
            pass
        return None

    @staticmethod
    def _reset() -> bool:
        try:
            with open("/proc/self/clear_refs", "w") as f:
                f.write("5")
            return True
        except OSError:
            return False

    def start(self) -> int | None:
        """Reset the high-water mark; returns the RSS now (the section's baseline)."""
        if self.resettable:
            self._reset()
        return self._status("VmRSS")

    def peak(self) -> int | None:
        return self._status("VmHWM") if self.resettable else None

    @staticmethod
    def process_peak() -> int:
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        return peak if sys.platform == "darwin" else peak * 1024


def cpu_seconds() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def settle() -> None:
    """Before a timed section: collect garbage and flush every dirty page to disk, so that the
    section's commit (an fsync) pays for its own writes only. On ext4 (data=ordered) an fsync
    commits the journal, which would otherwise also write out the previous files' data."""
    gc.collect()
    if hasattr(os, "sync"):
        os.sync()


def file_bytes(path: Path) -> int:
    """The DB file plus any WAL left beside it."""
    total = path.stat().st_size
    wal = path.with_name(path.name + ".wal")
    if wal.exists():
        total += wal.stat().st_size
    return total


def remove_db(path: Path) -> None:
    for p in (path, path.with_name(path.name + ".wal")):
        p.unlink(missing_ok=True)


@dataclass
class Measurement:
    path: str  # "edgestats" | "raw" | encoding variant name
    repeat: int
    rows: int
    insert_s: float  # the timed write: insert + commit
    open_s: float  # edgestats: Store.open (connect + migrate); raw: connect + DDL
    close_s: float  # close = final checkpoint
    file_bytes: int
    rss_before: int | None
    rss_peak: int | None
    cpu_s: float  # this process's user + system CPU over the timed write, all threads

    @property
    def rate(self) -> float:
        return self.rows / self.insert_s


def load_average() -> list[float] | None:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except (OSError, AttributeError):
        return None


def timed_write(rss: PeakRss, write: Callable[[], object]) -> tuple[float, float, int | None, int | None]:
    """settle(), then run `write` timed: (wall seconds, CPU seconds, RSS before, peak RSS during)."""
    settle()
    before = rss.start()
    c0, t0 = cpu_seconds(), time.perf_counter()
    write()
    insert_s = time.perf_counter() - t0
    cpu_s = cpu_seconds() - c0
    return insert_s, cpu_s, before, rss.peak()


# -- the two paths; ingest_encodings reuses both with other tables and DDL ------------------------


# -- path A: edgestats ---------------------------------------------------------------------------


def run_edgestats(
    path: Path, table: pa.Table, repeat: int, rss: PeakRss, label: str = "edgestats"
) -> Measurement:
    gc.collect()
    t0 = time.perf_counter()
    store = Store.open(path)
    open_s = time.perf_counter() - t0
    try:
        device_id = store.register_device({"name": "bench-device", "hostname": platform.node()})
        run = {**RUN, "device_id": device_id, "run_id": uuid.uuid4(), "repeat_index": repeat}
        insert_s, cpu_s, before, peak = timed_write(rss, lambda: store.write_run(run, samples=table))
    finally:
        t0 = time.perf_counter()
        store.close()
        close_s = time.perf_counter() - t0
    return Measurement(
        label, repeat, table.num_rows, insert_s, open_s, close_s, file_bytes(path), before, peak, cpu_s
    )


# -- path B: raw DuckDB ----------------------------------------------------------------------------


def run_raw(
    path: Path,
    table: pa.Table,
    repeat: int,
    rss: PeakRss,
    ddl: list[str],
    insert_sql: str,
    label: str = "raw",
    setup_sql: list[tuple[str, list]] | None = None,
) -> Measurement:
    """A fresh DuckDB file, `ddl` applied, then one transaction: `setup_sql` + `insert_sql`
    reading the registered Arrow table `rows`, with the run_id as parameter $1."""
    gc.collect()
    t0 = time.perf_counter()
    con = duckdb.connect(str(path))
    for stmt in ddl:
        con.execute(stmt)
    open_s = time.perf_counter() - t0
    try:
        run_id = str(uuid.uuid4())

        def write() -> None:
            con.register("rows", table)
            con.begin()
            for sql, params in setup_sql or []:
                con.execute(sql, params)
            con.execute(insert_sql, [run_id])
            con.commit()
            con.unregister("rows")

        insert_s, cpu_s, before, peak = timed_write(rss, write)
    finally:
        t0 = time.perf_counter()
        con.close()
        close_s = time.perf_counter() - t0
    return Measurement(
        label, repeat, table.num_rows, insert_s, open_s, close_s, file_bytes(path), before, peak, cpu_s
    )


# -- file sizes and correctness checks ---------------------------------------------------------


def empty_file_bytes(kind: str, ddl: list[str], workdir: Path) -> int:
    """Size of a file with the schema (and, for edgestats, the device and run rows) but no samples,
    so that bytes/sample can be given net of the fixed cost of an empty DB."""
    path = workdir / f"empty-{kind}.duckdb"
    if kind == "edgestats":
        with Store.open(path) as store:
            device_id = store.register_device({"name": "bench-device"})
            store.write_run({**RUN, "device_id": device_id})
    else:
        con = duckdb.connect(str(path))
        for stmt in ddl:
            con.execute(stmt)
        con.close()
    size = file_bytes(path)
    remove_db(path)
    return size


# An order-independent, exact fingerprint of a set of rows: the sum of per-row hashes (HUGEINT
# addition cannot overflow or round, unlike a sum of doubles computed in parallel).
FINGERPRINT = (
    "SELECT count(*), count(DISTINCT run_id), sum(hash(t_ns, {metric}, value)::HUGEINT) FROM {source}"
)


def source_fingerprint(table: pa.Table, metric: str = "metric") -> tuple[int, int]:
    """(rows, fingerprint) of the Arrow table itself, to check each stored file against."""
    con = duckdb.connect()
    try:
        con.register("rows", table)
        n, fp = con.execute(
            f"SELECT count(*), sum(hash(t_ns, {metric}, value)::HUGEINT) FROM rows"
        ).fetchone()
        return n, int(fp)
    finally:
        con.close()


def check_file(
    path: Path, expected: tuple[int, int], metric: str = "metric", source: str = "samples"
) -> dict:
    """Every row of the run, once, with the right run_id count and identical values."""
    con = duckdb.connect(str(path), read_only=True)
    try:
        n, n_runs, fp = con.execute(FINGERPRINT.format(metric=metric, source=source)).fetchone()
    finally:
        con.close()
    fp = int(fp) if fp is not None else None
    return {"rows": n, "runs": n_runs, "fingerprint": fp, "ok": (n, fp) == expected and n_runs == 1}
