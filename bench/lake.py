#!/usr/bin/env python
"""bench/lake: a results lake read where it lies, against the merged file of the same runs.

A fleet uploads one DB per device. This bench writes --devices device DBs (bench/analyze.py's
synthetic runs, --runs and --samples each), then builds the three ways a lab reads them:

- merged: `edgestats merge` of every device DB into one file;
- lake:   `edgestats export` of the first device and `export --append` of each other one, into a
          hive-partitioned Parquet folder (every device appended a second time too: idempotent);
- glob:   the device DBs themselves, as one pattern (`edgestats analyze 'dir/device-*.duckdb'`).

It runs every analysis (`edgestats analyze --json`'s JSON, in-process) and a few `sql` questions
over each, and checks the answers are EQUAL to the merged file's: every string, count and null,
and every float to 12 significant digits (DuckDB and polars sum floats in scan order, which
differs between a merged file, a lake and a glob; float addition is not associative, so the last
bits may differ). Then it reports the time of each read next to the merged file's, as ratios.
Exit status 0 when every answer is equal and the second round of appends added nothing.

    python bench/lake.py                                   # 8 devices x 5,000 runs / 5,000,000 samples
    python bench/lake.py --devices 4 --runs 1000 --samples 500000   # quick check
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))
sys.path.insert(
    0, str(REPO / "tests")
)  # json_compare: the equality rule tests/exports/test_lake.py holds lakes to

from analyze import build_db, load_average  # noqa: E402
from json_compare import same_to_12_digits  # noqa: E402

import edgestats  # noqa: E402
from edgestats.analysis import AnalysisOptions, dumps, run_analyses  # noqa: E402
from edgestats.exports.append import append_parquet  # noqa: E402
from edgestats.exports.merge import merge  # noqa: E402
from edgestats.exports.parquet import export_parquet  # noqa: E402
from edgestats.store.query import run_query  # noqa: E402

QUESTIONS = {
    "runs per device and framework": "SELECT device, framework, count(*) AS runs, "
    "sum(n_latencies) AS latencies, "
    "round(avg(latency_median_ms), 9) AS median_ms FROM run_summary GROUP BY ALL ORDER BY ALL",
    "rows per table": "SELECT (SELECT count(*) FROM latencies), (SELECT count(*) FROM samples), "
    "(SELECT count(*) FROM phases), "
    "(SELECT count(*) FROM batches), (SELECT count(*) FROM epochs), (SELECT count(*) FROM devices)",
    "training": "SELECT run_id, framework, batch_size, round(training_time_s, 9), round(accuracy_pct, 9) "
    "FROM training_summary ORDER BY run_id",
}


def timed(what, *args):
    started = time.perf_counter()
    value = what(*args)
    return value, time.perf_counter() - started


def folder_digest(folder: Path) -> str:
    digest = hashlib.sha256()
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        digest.update(path.relative_to(folder).as_posix().encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def read_all(source: str) -> tuple[str, dict, float, float]:
    """The analysis JSON and the sql answers over `source`, and the seconds each took."""
    text, analyze_s = timed(lambda: dumps(run_analyses(source, AnalysisOptions())))
    answers, sql_s = timed(lambda: {name: run_query(source, q).rows for name, q in QUESTIONS.items()})
    return text, answers, analyze_s, sql_s


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--devices", type=int, default=8)
    parser.add_argument("--runs", type=int, default=5_000, help="runs per device DB")
    parser.add_argument("--samples", type=int, default=5_000_000, help="telemetry samples per device DB")
    parser.add_argument(
        "--dir", type=Path, default=None, help="where to write the files (default: a temp folder)"
    )
    args = parser.parse_args()
    print(
        f"edgestats {edgestats.__version__}, Python {platform.python_version()}, {platform.machine()}, "
        f"{os.cpu_count()} CPUs, load {load_average()}",
        flush=True,
    )
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        folder = Path(tmp)
        dbs = [folder / f"device-{i:02d}.duckdb" for i in range(args.devices)]
        started = time.perf_counter()
        for i, db in enumerate(dbs):
            build_db(db, args.runs, args.samples, seed=i, n_devices=1, first_device=i)
        print(
            f"{args.devices} device DBs of {args.runs:,} runs / {args.samples:,} samples each written in "
            f"{time.perf_counter() - started:.1f} s",
            flush=True,
        )
        merged = folder / "merged.duckdb"
        _, merge_s = timed(merge, merged, dbs)
        lake = folder / "lake"
        _, export_s = timed(export_parquet, dbs[0], lake)
        append_s = [timed(append_parquet, db, lake)[1] for db in dbs[1:]]
        before = folder_digest(lake)
        again = [append_parquet(db, lake) for db in dbs]
        idempotent = folder_digest(lake) == before and all(not a["runs_added"] for a in again)
        print(
            f"merge {merge_s:.1f} s; export of the first device {export_s:.1f} s; "
            f"appends {min(append_s):.1f}–"
            f"{max(append_s):.1f} s each; every device appended again: "
            f"{'nothing added, the lake is byte for byte the same' if idempotent else 'CHANGED THE LAKE'}",
            flush=True,
        )

        reference = read_all(str(merged))
        ok = idempotent
        print(
            "\n| read | analyze (s) | sql (s) | analyze vs merged | analysis JSON | sql answers |"
            "\n|---|---:|---:|---:|---|---|"
        )
        print(
            f"| merged file | {reference[2]:.2f} | {reference[3]:.2f} | 1.00 | "
            f"({len(reference[0]):,} bytes) | |"
        )
        for name, source in (
            ("lake (Parquet)", str(lake)),
            ("glob of device DBs", str(folder / "device-*.duckdb")),
        ):
            text, answers, analyze_s, sql_s = read_all(source)
            found = same_to_12_digits(json.loads(reference[0]), json.loads(text))
            json_verdict = (
                "identical bytes"
                if text == reference[0]
                else "equal to 12 digits"
                if not found
                else "DIFFERENT"
            )
            same_sql = answers == reference[1]
            ok &= not found and same_sql
            print(
                f"| {name} | {analyze_s:.2f} | {sql_s:.2f} | {analyze_s / reference[2]:.2f} | "
                f"{json_verdict} | "
                f"{'identical' if same_sql else 'DIFFERENT'} |",
                flush=True,
            )
            for line in found[:5]:
                print(f"    {name}: {line}")
    print(f"\nload {load_average()}; {'every answer equal' if ok else 'NOT EQUAL'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
