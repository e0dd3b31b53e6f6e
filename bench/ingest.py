#!/usr/bin/env python
"""bench/ingest: store ingest of one run's telemetry vs. a raw DuckDB Arrow insert, side by side.

A benchmark, not a timed test: both paths run in this one process, interleaved, on the same
Arrow table, and the figure that counts is their ratio (target: edgestats >= 0.5x raw).

  A  edgestats  Store.open(fresh file) -> register_device -> write_run(run, samples=table)
                (timed: the write_run call, commit included; open+migrate reported apart)
  B  raw DuckDB duckdb.connect(fresh file) -> the samples DDL of the real schema ->
                register(table) + BEGIN; INSERT INTO samples SELECT <run_id constant>, ... ; COMMIT

    python bench/ingest.py                       # 5,000,000 samples, 5 repeats
    python bench/ingest.py --samples 200000 --repeats 3
    python bench/ingest.py --compare-encodings   # + metric as VARCHAR vs ENUM vs SMALLINT id
    python bench/ingest.py --out results.json    # + every measurement as JSON

Exit status: 0 when the median A/B ratio meets --target, 1 when it does not, 2 when a
correctness check fails.
"""

from __future__ import annotations

import argparse
import datetime as dt
import gc
import json
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import asdict, dataclass
from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa

# Run from a checkout without installing: put the repo root first on sys.path.
REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

import edgestats  # noqa: E402
from edgestats.store import Store  # noqa: E402

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


# -- the data --------------------------------------------------------------------------------


def make_samples(n: int, hz: float, seed: int = 0) -> pa.Table:
    """n telemetry rows in long format (t_ns int64, metric string, value float64), tick-major.

    Values have the resolution real sources give, since that decides how well DuckDB compresses
    them: memory in whole 4 KiB pages, psutil percentages rounded to 0.1, cumulative I/O byte
    counters, sysfs millidegrees, power from an energy delta (full double precision) and RAPL's
    microjoule counter.
    """
    rng = np.random.default_rng(seed)
    m = len(METRICS)
    ticks = -(-n // m)
    period = 1e9 / hz
    # CLOCK_MONOTONIC-like start (about 3.5 h of uptime), sampler period with +-1 % jitter.
    t = np.int64(12_345_678_901_234) + np.cumsum(rng.normal(period, period * 0.01, ticks).astype(np.int64))

    def walk(start, step, lo, hi):
        return np.clip(start + np.cumsum(rng.normal(0.0, step, ticks)), lo, hi)

    page = 4096.0
    rss = np.round(walk(6e8, 2e6, 2e8, 4e9) / page) * page
    uss = rss - np.round(rng.uniform(3e7, 6e7, ticks) / page) * page
    user = np.round(np.clip(walk(60, 1.5, 0, 100) + rng.normal(0, 3, ticks), 0, 100), 1)
    system = np.round(np.clip(rng.gamma(2.0, 2.5, ticks), 0, 100), 1)
    iowait = np.round(np.clip(rng.exponential(0.4, ticks), 0, 100), 1)
    total = np.round(np.clip(user + system + iowait, 0, 100), 1)
    cores = [np.round(np.clip(user + rng.normal(0, 12, ticks), 0, 100), 1) for _ in range(4)]
    io_read = np.cumsum(rng.poisson(0.3, ticks) * rng.integers(1, 64, ticks) * page) + 1.2e8
    io_write = np.cumsum(rng.poisson(0.1, ticks) * rng.integers(1, 16, ticks) * page) + 3.0e7
    temp = np.round(walk(52.0, 0.05, 35.0, 95.0) * 1000) / 1000  # millidegrees
    power = np.clip(walk(9.0, 0.08, 2.0, 30.0) + rng.normal(0, 0.4, ticks), 0.5, None)
    energy_uj = np.cumsum(np.round(power * period / 1e3))  # W * s -> uJ
    energy = energy_uj / 1e6

    values = np.stack([rss, uss, user, system, iowait, total, *cores, io_read, io_write, temp, power, energy], axis=1)
    assert values.shape[1] == m
    codes = np.tile(np.arange(m, dtype=np.int8), ticks)[:n]
    metric = pa.DictionaryArray.from_arrays(pa.array(codes), pa.array(METRICS)).cast(pa.string())
    return pa.table({
        "t_ns": pa.array(np.repeat(t, m)[:n]),
        "metric": metric,
        "value": pa.array(values.reshape(-1)[:n].astype(np.float64)),
    })


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
    path: str                      # "edgestats" | "raw" | encoding variant name
    repeat: int
    rows: int
    insert_s: float                # the timed write: insert + commit
    open_s: float                  # edgestats: Store.open (connect + migrate); raw: connect + DDL
    close_s: float                 # close = final checkpoint
    file_bytes: int
    rss_before: int | None
    rss_peak: int | None
    cpu_s: float                   # this process's user + system CPU over the timed write, all threads

    @property
    def rate(self) -> float:
        return self.rows / self.insert_s


def samples_ddl() -> str:
    """The samples table's CREATE statement as the current edgestats schema makes it."""
    with tempfile.TemporaryDirectory() as d:
        with Store.open(Path(d) / "schema.duckdb") as store:
            (sql,) = store.con.execute(
                "SELECT sql FROM duckdb_tables() WHERE database_name = current_database() AND table_name = 'samples'"
            ).fetchone()
    return sql


# -- path A: edgestats ---------------------------------------------------------------------------


def run_edgestats(path: Path, table: pa.Table, repeat: int, rss: PeakRss, label: str = "edgestats") -> Measurement:
    gc.collect()
    t0 = time.perf_counter()
    store = Store.open(path)
    open_s = time.perf_counter() - t0
    try:
        device_id = store.register_device({"name": "bench-device", "hostname": platform.node()})
        run = {**RUN, "device_id": device_id, "run_id": uuid.uuid4(), "repeat_index": repeat}
        settle()
        before = rss.start()
        c0, t0 = cpu_seconds(), time.perf_counter()
        store.write_run(run, samples=table)
        insert_s = time.perf_counter() - t0
        cpu_s = cpu_seconds() - c0
        peak = rss.peak()
    finally:
        t0 = time.perf_counter()
        store.close()
        close_s = time.perf_counter() - t0
    return Measurement(label, repeat, table.num_rows, insert_s, open_s, close_s, file_bytes(path), before, peak, cpu_s)


# -- path B: raw DuckDB ----------------------------------------------------------------------------


def run_raw(path: Path, table: pa.Table, repeat: int, rss: PeakRss, ddl: list[str], insert_sql: str,
            label: str = "raw", setup_sql: list[tuple[str, list]] | None = None) -> Measurement:
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
        settle()
        before = rss.start()
        c0, t0 = cpu_seconds(), time.perf_counter()
        con.register("rows", table)
        con.begin()
        for sql, params in setup_sql or []:
            con.execute(sql, params)
        con.execute(insert_sql, [run_id])
        con.commit()
        con.unregister("rows")
        insert_s = time.perf_counter() - t0
        cpu_s = cpu_seconds() - c0
        peak = rss.peak()
    finally:
        t0 = time.perf_counter()
        con.close()
        close_s = time.perf_counter() - t0
    return Measurement(label, repeat, table.num_rows, insert_s, open_s, close_s, file_bytes(path), before, peak, cpu_s)


RAW_INSERT = ("INSERT INTO samples (run_id, t_ns, metric, value) "
              "SELECT CAST($1 AS UUID) AS run_id, t_ns, metric, value FROM rows")


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
FINGERPRINT = "SELECT count(*), count(DISTINCT run_id), sum(hash(t_ns, {metric}, value)::HUGEINT) FROM {source}"


def source_fingerprint(table: pa.Table, metric: str = "metric") -> tuple[int, int]:
    """(rows, fingerprint) of the Arrow table itself, to check each stored file against."""
    con = duckdb.connect()
    try:
        con.register("rows", table)
        n, fp = con.execute(f"SELECT count(*), sum(hash(t_ns, {metric}, value)::HUGEINT) FROM rows").fetchone()
        return n, int(fp)
    finally:
        con.close()


def check_file(path: Path, expected: tuple[int, int], metric: str = "metric", source: str = "samples") -> dict:
    """Every row of the run, once, with the right run_id count and identical values."""
    con = duckdb.connect(str(path), read_only=True)
    try:
        n, n_runs, fp = con.execute(FINGERPRINT.format(metric=metric, source=source)).fetchone()
    finally:
        con.close()
    fp = int(fp) if fp is not None else None
    return {"rows": n, "runs": n_runs, "fingerprint": fp, "ok": (n, fp) == expected and n_runs == 1}


# -- optional: how to encode the metric name ---------------------------------------------------


def encoding_variants(table: pa.Table) -> list[dict]:
    """Raw DuckDB variants of the samples table that differ only in how `metric` is stored."""
    names = list(METRICS)
    enum_values = ", ".join("'" + m.replace("'", "''") + "'" for m in names)
    dict_metric = table.column("metric").combine_chunks().dictionary_encode()
    as_dict = table.set_column(1, "metric", dict_metric)
    lookup = {m: i for i, m in enumerate(names)}
    ids = np.array([lookup[m] for m in dict_metric.dictionary.to_pylist()], dtype=np.int16)[
        dict_metric.indices.to_numpy(zero_copy_only=False)]
    as_ids = pa.table({"t_ns": table.column("t_ns"), "metric_id": pa.array(ids), "value": table.column("value")})
    no_metric = table.drop_columns(["metric"])

    varchar = ["CREATE TABLE samples (run_id UUID NOT NULL, t_ns BIGINT NOT NULL, metric VARCHAR NOT NULL, value DOUBLE)"]
    enum = [f"CREATE TYPE metric_name AS ENUM ({enum_values})",
            "CREATE TABLE samples (run_id UUID NOT NULL, t_ns BIGINT NOT NULL, metric metric_name NOT NULL, value DOUBLE)"]
    smallint = ["CREATE TABLE metrics (metric_id SMALLINT PRIMARY KEY, metric VARCHAR NOT NULL UNIQUE)",
                "CREATE TABLE samples (run_id UUID NOT NULL, t_ns BIGINT NOT NULL, metric_id SMALLINT NOT NULL, value DOUBLE)"]
    # The id variant writes its 15-row dictionary in the same transaction, as a store would.
    id_setup = [("INSERT INTO metrics VALUES " + ", ".join("(?, ?)" for _ in names),
                 [x for i, m in enumerate(names) for x in (i, m)])]

    q_varchar = {
        "group_by_metric": "SELECT metric, count(*), avg(value), max(value) FROM samples GROUP BY metric ORDER BY metric",
        "one_metric": "SELECT count(*), sum(value) FROM samples WHERE metric = 'power_w'",
    }
    q_ids = {
        "group_by_metric": "SELECT m.metric, count(*), avg(s.value), max(s.value) FROM samples s "
                           "JOIN metrics m USING (metric_id) GROUP BY m.metric ORDER BY m.metric",
        "one_metric": "SELECT count(*), sum(s.value) FROM samples s JOIN metrics m USING (metric_id) "
                      "WHERE m.metric = 'power_w'",
    }
    q_enum = q_varchar  # a string literal compared with an ENUM column is cast to the ENUM once
    select = "SELECT CAST($1 AS UUID) AS run_id, t_ns, metric, value FROM rows"
    return [
        {"name": "VARCHAR (Arrow string in)", "table": table, "ddl": varchar, "queries": q_varchar,
         "insert": f"INSERT INTO samples (run_id, t_ns, metric, value) {select}"},
        {"name": "VARCHAR (Arrow dictionary in)", "table": as_dict, "ddl": varchar, "queries": q_varchar,
         "insert": f"INSERT INTO samples (run_id, t_ns, metric, value) {select}"},
        {"name": "ENUM (Arrow string in)", "table": table, "ddl": enum, "queries": q_enum, "check": {"metric": "metric::VARCHAR"},
         "insert": f"INSERT INTO samples (run_id, t_ns, metric, value) {select}"},
        {"name": "ENUM (Arrow dictionary in)", "table": as_dict, "ddl": enum, "queries": q_enum, "check": {"metric": "metric::VARCHAR"},
         "insert": f"INSERT INTO samples (run_id, t_ns, metric, value) {select}"},
        {"name": "SMALLINT id + metrics table", "table": as_ids, "ddl": smallint, "queries": q_ids,
         "check": {"metric": "m.metric", "source": "samples s JOIN metrics m USING (metric_id)"},
         "setup": id_setup,
         "insert": "INSERT INTO samples (run_id, t_ns, metric_id, value) "
                   "SELECT CAST($1 AS UUID) AS run_id, t_ns, metric_id, value FROM rows"},
        {"name": "no metric column (floor)", "table": no_metric, "queries": {}, "check": {"metric": "NULL"},
         "ddl": ["CREATE TABLE samples (run_id UUID NOT NULL, t_ns BIGINT NOT NULL, value DOUBLE)"],
         "insert": "INSERT INTO samples (run_id, t_ns, value) SELECT CAST($1 AS UUID) AS run_id, t_ns, value FROM rows"},
        # The store itself, fed a dictionary-encoded metric column (what a collector could pass).
        {"name": "edgestats write_run (Arrow dictionary in)", "table": as_dict, "store": True, "queries": q_varchar},
    ]


def compression_used(path: Path) -> dict[str, list[str]]:
    """Column -> the compression methods DuckDB chose for its segments (validity masks left out)."""
    con = duckdb.connect(str(path), read_only=True)
    try:
        rows = con.execute(
            "SELECT column_name, list(DISTINCT compression ORDER BY compression) FROM pragma_storage_info('samples') "
            "WHERE segment_type <> 'VALIDITY' GROUP BY column_name, column_id ORDER BY column_id"
        ).fetchall()
        return dict(rows)
    finally:
        con.close()


def time_queries(path: Path, queries: dict[str, str], repeats: int) -> dict[str, float]:
    con = duckdb.connect(str(path), read_only=True)
    try:
        times = {}
        for name, sql in queries.items():
            con.execute(sql).fetchall()  # warms the buffer pool
            runs = []
            for _ in range(repeats):
                t0 = time.perf_counter()
                con.execute(sql).fetchall()
                runs.append(time.perf_counter() - t0)
            times[name] = statistics.median(runs)
        return times
    finally:
        con.close()


def compare_encodings(table: pa.Table, repeats: int, workdir: Path, rss: PeakRss) -> dict:
    variants = encoding_variants(table)
    expected = {"metric": source_fingerprint(table), "NULL": source_fingerprint(table, "NULL")}
    results: dict[str, list[Measurement]] = {v["name"]: [] for v in variants}
    empty: dict[str, int] = {}
    for v in variants:
        empty[v["name"]] = empty_file_bytes("edgestats" if v.get("store") else "raw", v.get("ddl", []), workdir)
    last: dict[str, Path] = {}
    for r in range(repeats):
        # Rotate the order every round so no variant always runs first (or right after another).
        order = variants[r % len(variants):] + variants[:r % len(variants)]
        for v in order:
            path = workdir / f"enc-{r}-{variants.index(v)}.duckdb"
            if v.get("store"):
                m = run_edgestats(path, v["table"], r, rss, label=v["name"])
            else:
                m = run_raw(path, v["table"], r, rss, v["ddl"], v["insert"], label=v["name"], setup_sql=v.get("setup"))
            results[v["name"]].append(m)
            if r == repeats - 1:
                last[v["name"]] = path
            else:
                remove_db(path)

    summary = []
    reference = None
    ok = True
    for v in variants:
        ms = results[v["name"]]
        rate = statistics.median(m.rate for m in ms)
        reference = reference or rate
        size = statistics.median(m.file_bytes for m in ms)
        qtimes = time_queries(last[v["name"]], v["queries"], max(3, repeats)) if v["queries"] else {}
        compression = compression_used(last[v["name"]])
        how = v.get("check", {})
        check = check_file(last[v["name"]], expected["NULL" if how.get("metric") == "NULL" else "metric"], **how)
        ok &= check["ok"]
        summary.append({
            "variant": v["name"],
            "median_rows_per_s": rate,
            "rate_vs_varchar": rate / reference,
            "rate_min": min(m.rate for m in ms),
            "rate_max": max(m.rate for m in ms),
            "median_rows_per_cpu_s": statistics.median(m.rows / m.cpu_s for m in ms),
            "file_bytes": size,
            "bytes_per_sample": size / table.num_rows,
            "net_bytes_per_sample": (size - empty[v["name"]]) / table.num_rows,
            "query_s": qtimes,
            "compression": compression,
            "rows_ok": check["ok"],
        })
    for p in last.values():
        remove_db(p)
    return {"variants": summary, "measurements": {k: [asdict(m) for m in ms] for k, ms in results.items()},
            "rows_ok": ok}


# -- reporting -------------------------------------------------------------------------------------


def environment(workdir: Path) -> dict:
    def cpu_model() -> str:
        try:
            with open("/proc/cpuinfo") as f:
                for line in f:
                    if line.startswith(("model name", "Model", "Hardware")):
                        return line.split(":", 1)[1].strip()
        except OSError:
            pass
        return platform.processor() or "unknown"

    def mem_total() -> int | None:
        try:
            with open("/proc/meminfo") as f:
                return int(f.readline().split()[1]) * 1024
        except (OSError, ValueError, IndexError):
            return None

    def git(*args: str) -> str | None:
        try:
            return subprocess.run(["git", *args], cwd=REPO, capture_output=True, text=True, check=True).stdout.strip()
        except (OSError, subprocess.CalledProcessError):
            return None

    con = duckdb.connect()
    threads, memory_limit = con.execute("SELECT current_setting('threads'), current_setting('memory_limit')").fetchone()
    con.close()
    return {
        "date_utc": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "host": platform.node(),
        "machine": platform.machine(),
        "cpu": cpu_model(),
        "cpus": os.cpu_count(),
        "cpus_usable": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count(),
        "mem_total_bytes": mem_total(),
        "os": f"{platform.system()} {platform.release()}",
        "python": platform.python_version(),
        "duckdb": duckdb.__version__,
        "duckdb_threads": threads,
        "duckdb_memory_limit": memory_limit,
        "pyarrow": pa.__version__,
        "numpy": np.__version__,
        "edgestats": edgestats.__version__,
        "git_commit": git("rev-parse", "--short", "HEAD"),
        # Uncommitted changes to what is measured (the library and its schema), not the whole tree.
        "edgestats_dirty": bool(git("status", "--porcelain", "--", "edgestats", "schema")),
        "workdir": str(workdir),
        "load_average_at_start": load_average(),
        "command": " ".join([Path(sys.executable).name, *sys.argv]),
    }


def load_average() -> list[float] | None:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except (OSError, AttributeError):
        return None


def mib(x: float | None) -> str:
    return "n/a" if x is None else f"{x / 2**20:,.0f}"


def median_or_none(xs: list) -> float | None:
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--samples", type=int, default=5_000_000, help="rows of telemetry in the run (default 5,000,000)")
    ap.add_argument("--repeats", type=int, default=5, help="timed A/B pairs (default 5)")
    ap.add_argument("--warmup", type=int, default=1, help="untimed A/B pairs first (default 1)")
    ap.add_argument("--hz", type=float, default=10.0, help="sampler rate the timestamps follow (default 10)")
    ap.add_argument("--target", type=float, default=0.5, help="edgestats/raw rate ratio to meet (default 0.5)")
    ap.add_argument("--dir", type=Path, default=None,
                    help="where the fresh DB files go (default: a temp dir); put it on the device's real storage")
    ap.add_argument("--out", type=Path, default=None, help="also write every measurement as JSON here")
    ap.add_argument("--compare-encodings", action="store_true",
                    help="side experiment: metric stored as VARCHAR vs ENUM vs SMALLINT id (raw DuckDB)")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    if args.samples < 1 or args.repeats < 1 or args.warmup < 0:
        ap.error("--samples and --repeats must be >= 1, --warmup >= 0")

    workdir = Path(tempfile.mkdtemp(prefix="edgestats-bench-ingest-", dir=args.dir))
    rss = PeakRss()
    try:
        env = environment(workdir)
        t0 = time.perf_counter()
        table = make_samples(args.samples, args.hz, args.seed)
        gen_s = time.perf_counter() - t0
        ddl = [samples_ddl()]
        print(f"bench/ingest: {args.samples:,} samples x {len(METRICS)} metrics at {args.hz:g} Hz "
              f"(Arrow table {table.nbytes / 2**20:,.0f} MiB, built in {gen_s:.1f} s, untimed)")
        print(f"  {env['cpu']}, {env['cpus_usable']} CPUs, {mib(env['mem_total_bytes'])} MiB RAM, {env['os']}; "
              f"python {env['python']}, duckdb {env['duckdb']} (threads={env['duckdb_threads']}), "
              f"pyarrow {env['pyarrow']}, edgestats {env['edgestats']} @ {env['git_commit']}"
              f"{' + uncommitted changes to edgestats/ or schema/' if env['edgestats_dirty'] else ''}")
        print(f"  files in {workdir}; {args.warmup} warm-up pair(s), then {args.repeats} timed pairs, "
              f"order alternating AB, BA, AB, ...")

        empty = {k: empty_file_bytes(k, ddl, workdir) for k in ("edgestats", "raw")}
        pairs: list[tuple[Measurement, Measurement]] = []
        last: dict[str, Path] = {}
        for i in range(args.warmup + args.repeats):
            timed = i >= args.warmup
            r = i - args.warmup
            got = {}
            order = ("edgestats", "raw") if i % 2 == 0 else ("raw", "edgestats")
            for which in order:
                path = workdir / f"{which}-{i}.duckdb"
                if which == "edgestats":
                    got[which] = run_edgestats(path, table, r, rss)
                else:
                    got[which] = run_raw(path, table, r, rss, ddl, RAW_INSERT)
                if i == args.warmup + args.repeats - 1:
                    last[which] = path
                else:
                    remove_db(path)
            if timed:
                pairs.append((got["edgestats"], got["raw"]))
                a, b = got["edgestats"], got["raw"]
                print(f"  pair {r + 1}/{args.repeats} ({'AB' if order[0] == 'edgestats' else 'BA'}): "
                      f"edgestats {a.insert_s:6.3f} s  raw {b.insert_s:6.3f} s  ratio {b.insert_s / a.insert_s:.3f}")

        expected = source_fingerprint(table)
        checks = {k: check_file(p, expected) for k, p in last.items()}
        same = checks["edgestats"]["rows"] == checks["raw"]["rows"] and checks["edgestats"]["fingerprint"] == checks["raw"]["fingerprint"]
        correct = checks["edgestats"]["ok"] and checks["raw"]["ok"] and same
        for p in last.values():
            remove_db(p)

        A = [a for a, _ in pairs]
        B = [b for _, b in pairs]
        ratios = [a.rate / b.rate for a, b in pairs]
        ratio = statistics.median(ratios)

        def row(name: str, ms: list[Measurement], empty_bytes: int) -> dict:
            size = statistics.median(m.file_bytes for m in ms)
            peaks = [m.rss_peak for m in ms]
            deltas = [m.rss_peak - m.rss_before if m.rss_peak is not None and m.rss_before is not None else None for m in ms]
            return {
                "path": name,
                "median_rows_per_s": statistics.median(m.rate for m in ms),
                "min_rows_per_s": min(m.rate for m in ms),
                "max_rows_per_s": max(m.rate for m in ms),
                "median_insert_s": statistics.median(m.insert_s for m in ms),
                "median_open_s": statistics.median(m.open_s for m in ms),
                "median_close_s": statistics.median(m.close_s for m in ms),
                "median_cpu_s": statistics.median(m.cpu_s for m in ms),
                "median_rows_per_cpu_s": statistics.median(m.rows / m.cpu_s for m in ms),
                "file_bytes": size,
                "bytes_per_sample": size / args.samples,
                "net_bytes_per_sample": (size - empty_bytes) / args.samples,
                "empty_file_bytes": empty_bytes,
                "rss_peak_bytes": median_or_none(peaks),
                "rss_peak_over_before_bytes": median_or_none(deltas),
            }

        rows = [row("edgestats write_run", A, empty["edgestats"]), row("raw DuckDB INSERT", B, empty["raw"])]
        print()
        print(f"  {'path':<20} {'rows/s (median)':>16} {'min':>12} {'max':>12} {'write s':>8} {'CPU s':>6} "
              f"{'open s':>7} {'close s':>8} {'B/sample':>9} {'net':>6} {'peak RSS MiB':>13} {'(+during)':>10}")
        for x in rows:
            print(f"  {x['path']:<20} {x['median_rows_per_s']:>16,.0f} {x['min_rows_per_s']:>12,.0f} "
                  f"{x['max_rows_per_s']:>12,.0f} {x['median_insert_s']:>8.3f} {x['median_cpu_s']:>6.2f} "
                  f"{x['median_open_s']:>7.3f} {x['median_close_s']:>8.3f} {x['bytes_per_sample']:>9.2f} "
                  f"{x['net_bytes_per_sample']:>6.2f} {mib(x['rss_peak_bytes']):>13} "
                  f"{'+' + mib(x['rss_peak_over_before_bytes']):>10}")
        e2e = statistics.median((b.insert_s + b.open_s + b.close_s) / (a.insert_s + a.open_s + a.close_s) for a, b in pairs)
        cpu_ratio = statistics.median(b.cpu_s / a.cpu_s for a, b in pairs)
        load_end = load_average()
        print()
        print(f"  ratio edgestats/raw (rows/s, per pair): median {ratio:.3f}  min {min(ratios):.3f}  max {max(ratios):.3f}"
              f"  over {len(ratios)} pairs")
        print(f"  (same, in CPU time: median {cpu_ratio:.3f}; open + write + close: median {e2e:.3f}, "
              f"edgestats' open includes migrating a new file)")
        busy = any(la[0] > 0.5 * env["cpus_usable"] for la in (env["load_average_at_start"], load_end) if la)
        print(f"  load average at start {env['load_average_at_start']}, at end {load_end} ({env['cpus_usable']} CPUs)"
              + (": other work shared the machine, trust the ratios over the rates" if busy else ": quiet"))
        print(f"  process peak RSS {mib(PeakRss.process_peak())} MiB (includes the {table.nbytes / 2**20:,.0f} MiB Arrow table)")
        print(f"  correctness: rows edgestats {checks['edgestats']['rows']:,}, raw {checks['raw']['rows']:,} "
              f"(expected {args.samples:,}); rows identical to the Arrow table (hash fingerprint) in both: {correct} -> {'OK' if correct else 'FAILED'}")
        verdict = ratio >= args.target
        print(f"  verdict: edgestats ingests at {ratio:.2f}x the raw DuckDB Arrow insert; target >= {args.target}x: "
              f"{'MET' if verdict else 'NOT MET'}")

        enc = None
        if args.compare_encodings:
            print()
            print(f"  encodings of metric (raw DuckDB unless named; {args.repeats} rounds, rotating order):")
            enc = compare_encodings(table, args.repeats, workdir, rss)
            print(f"  {'variant':<42} {'rows/s (median)':>16} {'vs VARCHAR':>10} {'rows/CPU-s':>12} {'B/sample':>9} "
                  f"{'net':>6} {'group-by ms':>12} {'one-metric ms':>14}")
            for v in enc["variants"]:
                q = v["query_s"]
                gb = f"{q['group_by_metric'] * 1e3:.1f}" if "group_by_metric" in q else "-"
                om = f"{q['one_metric'] * 1e3:.1f}" if "one_metric" in q else "-"
                print(f"  {v['variant']:<42} {v['median_rows_per_s']:>16,.0f} {v['rate_vs_varchar']:>10.2f} "
                      f"{v['median_rows_per_cpu_s']:>12,.0f} {v['bytes_per_sample']:>9.2f} {v['net_bytes_per_sample']:>6.2f} {gb:>12} {om:>14}")
            print("  compression DuckDB chose per column:")
            for v in enc["variants"]:
                print(f"    {v['variant']:<42} " + ", ".join(f"{c}={'/'.join(m)}" for c, m in v["compression"].items()))
            print(f"  every variant's file holds exactly the Arrow table's rows (hash fingerprint): {enc['rows_ok']}")
            correct = correct and enc["rows_ok"]

        if args.out:
            report = {
                "benchmark": "bench/ingest",
                "environment": env,
                "args": {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()},
                "table": {"rows": table.num_rows, "metrics": list(METRICS), "arrow_bytes": table.nbytes,
                          "build_s": gen_s, "schema": str(table.schema)},
                "summary": rows,
                "ratio": {"median": ratio, "min": min(ratios), "max": max(ratios), "per_pair": ratios,
                          "with_open_and_close_median": e2e, "cpu_time_median": cpu_ratio,
                          "target": args.target, "met": verdict},
                "load_average_at_end": load_end,
                "process_peak_rss_bytes": PeakRss.process_peak(),
                "correctness": {"ok": correct, "same_data": same, **checks},
                "measurements": [asdict(m) for pair in pairs for m in pair],
                "encodings": enc,
            }
            args.out.write_text(json.dumps(report, indent=2, default=str) + "\n")
            print(f"  wrote {args.out}")
    finally:
        shutil.rmtree(workdir, ignore_errors=True)

    if not correct:
        return 2
    return 0 if verdict else 1


if __name__ == "__main__":
    sys.exit(main())
