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
correctness check fails. The two paths, the measuring and the checks are in bench/measure.py;
the --compare-encodings experiment is in bench/ingest_encodings.py.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict
from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa
from ingest_encodings import compare_encodings

# measure comes first: importing it puts the checkout on sys.path, so edgestats imports uninstalled.
from measure import (
    METRICS,
    REPO,
    Measurement,
    PeakRss,
    check_file,
    empty_file_bytes,
    load_average,
    remove_db,
    run_edgestats,
    run_raw,
    source_fingerprint,
)

import edgestats
from edgestats.store.results import Store

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

    values = np.stack(
        [rss, uss, user, system, iowait, total, *cores, io_read, io_write, temp, power, energy], axis=1
    )
    assert values.shape[1] == m
    codes = np.tile(np.arange(m, dtype=np.int8), ticks)[:n]
    metric = pa.DictionaryArray.from_arrays(pa.array(codes), pa.array(METRICS)).cast(pa.string())
    return pa.table(
        {
            "t_ns": pa.array(np.repeat(t, m)[:n]),
            "metric": metric,
            "value": pa.array(values.reshape(-1)[:n].astype(np.float64)),
        }
    )


# -- path B's schema and INSERT (the paths themselves: measure.run_edgestats, run_raw) ------------


def samples_ddl() -> str:
    """The samples table's CREATE statement as the current edgestats schema makes it."""
    with tempfile.TemporaryDirectory() as d:
        with Store.open(Path(d) / "schema.duckdb") as store:
            (sql,) = store.con.execute(
                "SELECT sql FROM duckdb_tables() "
                "WHERE database_name = current_database() AND table_name = 'samples'"
            ).fetchone()
    return sql


RAW_INSERT = (
    "INSERT INTO samples (run_id, t_ns, metric, value) "
    "SELECT CAST($1 AS UUID) AS run_id, t_ns, metric, value FROM rows"
)


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
            return subprocess.run(
                ["git", *args], cwd=REPO, capture_output=True, text=True, check=True
            ).stdout.strip()
        except (OSError, subprocess.CalledProcessError):
            return None

    con = duckdb.connect()
    threads, memory_limit = con.execute(
        "SELECT current_setting('threads'), current_setting('memory_limit')"
    ).fetchone()
    con.close()
    return {
        "date_utc": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
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


def mib(x: float | None) -> str:
    return "n/a" if x is None else f"{x / 2**20:,.0f}"


def median_or_none(xs: list) -> float | None:
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument(
        "--samples", type=int, default=5_000_000, help="rows of telemetry in the run (default 5,000,000)"
    )
    ap.add_argument("--repeats", type=int, default=5, help="timed A/B pairs (default 5)")
    ap.add_argument("--warmup", type=int, default=1, help="untimed A/B pairs first (default 1)")
    ap.add_argument("--hz", type=float, default=10.0, help="sampler rate the timestamps follow (default 10)")
    ap.add_argument(
        "--target", type=float, default=0.5, help="edgestats/raw rate ratio to meet (default 0.5)"
    )
    ap.add_argument(
        "--dir",
        type=Path,
        default=None,
        help="where the fresh DB files go (default: a temp dir); put it on the device's real storage",
    )
    ap.add_argument("--out", type=Path, default=None, help="also write every measurement as JSON here")
    ap.add_argument(
        "--compare-encodings",
        action="store_true",
        help="side experiment: metric stored as VARCHAR vs ENUM vs SMALLINT id (raw DuckDB)",
    )
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
        print(
            f"bench/ingest: {args.samples:,} samples x {len(METRICS)} metrics at {args.hz:g} Hz "
            f"(Arrow table {table.nbytes / 2**20:,.0f} MiB, built in {gen_s:.1f} s, untimed)"
        )
        print(
            f"  {env['cpu']}, {env['cpus_usable']} CPUs, {mib(env['mem_total_bytes'])} MiB RAM, {env['os']}; "
            f"python {env['python']}, duckdb {env['duckdb']} (threads={env['duckdb_threads']}), "
            f"pyarrow {env['pyarrow']}, edgestats {env['edgestats']} @ {env['git_commit']}"
            f"{' + uncommitted changes to edgestats/ or schema/' if env['edgestats_dirty'] else ''}"
        )
        print(
            f"  files in {workdir}; {args.warmup} warm-up pair(s), then {args.repeats} timed pairs, "
            f"order alternating AB, BA, AB, ..."
        )

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
                print(
                    f"  pair {r + 1}/{args.repeats} ({'AB' if order[0] == 'edgestats' else 'BA'}): "
                    f"edgestats {a.insert_s:6.3f} s  raw {b.insert_s:6.3f} s  "
                    f"ratio {b.insert_s / a.insert_s:.3f}"
                )

        expected = source_fingerprint(table)
        checks = {k: check_file(p, expected) for k, p in last.items()}
        same = (
            checks["edgestats"]["rows"] == checks["raw"]["rows"]
            and checks["edgestats"]["fingerprint"] == checks["raw"]["fingerprint"]
        )
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
            deltas = [
                m.rss_peak - m.rss_before if m.rss_peak is not None and m.rss_before is not None else None
                for m in ms
            ]
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
        print(
            f"  {'path':<20} {'rows/s (median)':>16} {'min':>12} {'max':>12} {'write s':>8} {'CPU s':>6} "
            f"{'open s':>7} {'close s':>8} {'B/sample':>9} {'net':>6} {'peak RSS MiB':>13} {'(+during)':>10}"
        )
        for x in rows:
            print(
                f"  {x['path']:<20} {x['median_rows_per_s']:>16,.0f} {x['min_rows_per_s']:>12,.0f} "
                f"{x['max_rows_per_s']:>12,.0f} {x['median_insert_s']:>8.3f} {x['median_cpu_s']:>6.2f} "
                f"{x['median_open_s']:>7.3f} {x['median_close_s']:>8.3f} {x['bytes_per_sample']:>9.2f} "
                f"{x['net_bytes_per_sample']:>6.2f} {mib(x['rss_peak_bytes']):>13} "
                f"{'+' + mib(x['rss_peak_over_before_bytes']):>10}"
            )
        e2e = statistics.median(
            (b.insert_s + b.open_s + b.close_s) / (a.insert_s + a.open_s + a.close_s) for a, b in pairs
        )
        cpu_ratio = statistics.median(b.cpu_s / a.cpu_s for a, b in pairs)
        load_end = load_average()
        print()
        print(
            f"  ratio edgestats/raw (rows/s, per pair): median {ratio:.3f}  "
            f"min {min(ratios):.3f}  max {max(ratios):.3f}"
            f"  over {len(ratios)} pairs"
        )
        print(
            f"  (same, in CPU time: median {cpu_ratio:.3f}; open + write + close: median {e2e:.3f}, "
            f"edgestats' open includes migrating a new file)"
        )
        busy = any(la[0] > 0.5 * env["cpus_usable"] for la in (env["load_average_at_start"], load_end) if la)
        print(
            f"  load average at start {env['load_average_at_start']}, at end {load_end} "
            f"({env['cpus_usable']} CPUs)"
            + (": other work shared the machine, trust the ratios over the rates" if busy else ": quiet")
        )
        print(
            f"  process peak RSS {mib(PeakRss.process_peak())} MiB "
            f"(includes the {table.nbytes / 2**20:,.0f} MiB Arrow table)"
        )
        print(
            f"  correctness: rows edgestats {checks['edgestats']['rows']:,}, raw {checks['raw']['rows']:,} "
            f"(expected {args.samples:,}); rows identical to the Arrow table (hash fingerprint) in both: "
            f"{correct} -> {'OK' if correct else 'FAILED'}"
        )
        verdict = ratio >= args.target
        print(
            f"  verdict: edgestats ingests at {ratio:.2f}x the raw DuckDB Arrow insert; "
            f"target >= {args.target}x: "
            f"{'MET' if verdict else 'NOT MET'}"
        )

        enc = None
        if args.compare_encodings:
            print()
            print(f"  encodings of metric (raw DuckDB unless named; {args.repeats} rounds, rotating order):")
            enc = compare_encodings(table, args.repeats, workdir, rss)
            print(
                f"  {'variant':<42} {'rows/s (median)':>16} {'vs VARCHAR':>10} {'rows/CPU-s':>12} "
                f"{'B/sample':>9} "
                f"{'net':>6} {'group-by ms':>12} {'one-metric ms':>14}"
            )
            for v in enc["variants"]:
                q = v["query_s"]
                gb = f"{q['group_by_metric'] * 1e3:.1f}" if "group_by_metric" in q else "-"
                om = f"{q['one_metric'] * 1e3:.1f}" if "one_metric" in q else "-"
                print(
                    f"  {v['variant']:<42} {v['median_rows_per_s']:>16,.0f} {v['rate_vs_varchar']:>10.2f} "
                    f"{v['median_rows_per_cpu_s']:>12,.0f} {v['bytes_per_sample']:>9.2f} "
                    f"{v['net_bytes_per_sample']:>6.2f} {gb:>12} {om:>14}"
                )
            print("  compression DuckDB chose per column:")
            for v in enc["variants"]:
                print(
                    f"    {v['variant']:<42} "
                    + ", ".join(f"{c}={'/'.join(m)}" for c, m in v["compression"].items())
                )
            print(
                "  every variant's file holds exactly the Arrow table's rows (hash fingerprint): "
                f"{enc['rows_ok']}"
            )
            correct = correct and enc["rows_ok"]

        if args.out:
            report = {
                "benchmark": "bench/ingest",
                "environment": env,
                "args": {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()},
                "table": {
                    "rows": table.num_rows,
                    "metrics": list(METRICS),
                    "arrow_bytes": table.nbytes,
                    "build_s": gen_s,
                    "schema": str(table.schema),
                },
                "summary": rows,
                "ratio": {
                    "median": ratio,
                    "min": min(ratios),
                    "max": max(ratios),
                    "per_pair": ratios,
                    "with_open_and_close_median": e2e,
                    "cpu_time_median": cpu_ratio,
                    "target": args.target,
                    "met": verdict,
                },
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
