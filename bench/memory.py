#!/usr/bin/env python
"""bench/memory: peak RSS of `edgestats sql` and `edgestats import` on large inputs.

Each command runs as a child process (`python -m edgestats ...`) and its peak resident set is
read from the kernel's accounting for that child alone (os.wait4's ru_maxrss), so nothing of
this script's own memory is counted.

  sql     `edgestats sql DB "SELECT * FROM range(N)"` with --format csv and --format json, the
          output on /dev/null (DB: an empty results DB). Target: peak < 1 GiB at 100,000,000 rows.
  import  `edgestats import DB FILE.csv --kind inference` of a seeded CSV of one row per run
          (device, framework, model, batch size, threads, latency, memory, and a firmware column
          kept as extra; 42 bytes a row), about 200 MB. Target: peak < 1.5 GiB.

    python bench/memory.py                          # 100 M rows to csv and json; a 200 MB CSV
    python bench/memory.py --sql-rows 20000000 --csv-mb 50
    python bench/memory.py --baseline /tmp/base     # + the same commands with the edgestats of
                                                    #   another checkout (git archive of a commit)
    python bench/memory.py --only import --out memory.json

With --baseline, both sources run the same commands one after the other on the same inputs, so
their peaks are measured side by side. Exit status: 0 when every target of the current checkout
is met, 1 when one is not, 2 when a command fails.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import random
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
GIB = 1024**3
SQL_TARGET_BYTES = 1 * GIB
IMPORT_TARGET_BYTES = 1.5 * GIB

DEVICES = [f"pi4-{i:02d}" for i in range(12)] + [f"jetson-{i:02d}" for i in range(6)]
FRAMEWORKS = ["tflite", "onnx", "torch", "ncnn", "openvino"]
MODELS = ["mobilenetv2", "resnet18", "squeezenet", "yolov8n", "vit_t"]
# 42 bytes a row on average, as the 200 MB, 4.8 M-row CSV of the issue that measured 9.98 GB
HEADER = "device,framework,model,batch_size,threads,latency_ms,mem_max_mb,firmware\n"


@dataclass
class Peak:
    source: str
    command: str
    rc: int
    wall_s: float
    peak_bytes: int
    stderr_tail: str


def write_runs_csv(path: Path, target_bytes: int, seed: int = 7) -> int:
    """A CSV of about `target_bytes`, one row per run as a published table has them; returns
    the number of rows. Seeded: the same arguments write the same bytes."""
    rng = random.Random(seed)
    rows, size = 0, len(HEADER)
    with open(path, "w", newline="") as f:
        f.write(HEADER)
        while size < target_bytes:
            chunk = []
            for _ in range(10_000):
                batch = rng.choice((1, 2, 4, 8, 16))
                latency = rng.lognormvariate(3.0, 0.6) * batch**0.7
                chunk.append(
                    f"{rng.choice(DEVICES)},{rng.choice(FRAMEWORKS)},{rng.choice(MODELS)},{batch},"
                    f"{rng.randint(1, 4)},{latency:.2f},{rng.uniform(80, 900):.0f},v1.{rng.randint(0, 9)}\n"
                )
            text = "".join(chunk)
            f.write(text)
            rows, size = rows + len(chunk), size + len(text)
    return rows


# Linux counts in a process's ru_maxrss the peak of the memory it had before exec: a command forked
# from this script would start with this script's. A small Python process starts the command and
# reports the command's own peak (os.wait4), so what it inherits is that process's few MB.
MEASURE = """
import os, subprocess, sys
stdout = open(sys.argv[2], "w")
proc = subprocess.Popen(sys.argv[3:], stdout=stdout, stderr=subprocess.PIPE)
stderr = proc.stderr.read()
_, status, usage = os.wait4(proc.pid, 0)
with open(sys.argv[1], "w") as f:
    f.write(f"{os.waitstatus_to_exitcode(status)} {usage.ru_maxrss}\\n{stderr.decode(errors='replace')}")
"""


def child_peak(source: str, label: str, src: Path, args: list[str], stdout: str = os.devnull) -> Peak:
    """Run `python -m edgestats ARGS` with the edgestats of `src`, its output to `stdout`: its exit
    status, wall time and own peak RSS."""
    env = {**os.environ, "PYTHONPATH": str(src)}
    with tempfile.NamedTemporaryFile("r", suffix=".rss") as report:
        start = time.perf_counter()
        subprocess.run(
            [sys.executable, "-c", MEASURE, report.name, stdout, sys.executable, "-m", "edgestats", *args],
            env=env,
            cwd=src,
            check=True,
        )
        wall_s = time.perf_counter() - start
        status, stderr = report.read().split("\n", 1)
    code, maxrss_kib = map(int, status.split())
    return Peak(source, label, code, round(wall_s, 1), maxrss_kib * 1024, stderr.strip()[-400:])


def run_sql(source: str, src: Path, db: Path, rows: int) -> list[Peak]:
    query = f"SELECT * FROM range({rows})"
    return [
        child_peak(source, f"sql {rows:,} rows --format {fmt}", src, ["sql", str(db), query, "-f", fmt])
        for fmt in ("csv", "json")
    ]


def run_import(source: str, src: Path, csv_path: Path, workdir: Path, label: str) -> Peak:
    db = workdir / f"import-{source}.duckdb"
    for leftover in (db, Path(f"{db}.wal")):
        leftover.unlink(missing_ok=True)
    peak = child_peak(source, label, src, ["import", str(db), str(csv_path), "--kind", "inference"])
    for leftover in (db, Path(f"{db}.wal")):
        leftover.unlink(missing_ok=True)
    return peak


def link_packages(src: Path) -> None:
    """A plain checkout keeps collectors/, reports/ and schema/ at its top, where the installed
    package has them inside edgestats/ (pyproject's package mapping): link them there, so that
    `python -m edgestats` run from the checkout imports its own and not the installed ones."""
    for name in ("collectors", "reports", "schema"):
        link = src / "edgestats" / name
        if not link.exists() and (src / name).is_dir():
            link.symlink_to(Path("..") / name)


def empty_db(src: Path, db: Path) -> None:
    code = f"from edgestats.store.results import Store; Store.open({str(db)!r}).close()"
    subprocess.run([sys.executable, "-c", code], check=True, env={**os.environ, "PYTHONPATH": str(src)})


def environment() -> dict:
    import duckdb
    import pyarrow

    try:
        load = [round(x, 2) for x in os.getloadavg()]
    except OSError:
        load = None
    commit = subprocess.run(
        ["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True, text=True
    ).stdout.strip()
    return {
        "date": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs",
        "python": platform.python_version(),
        "duckdb": duckdb.__version__,
        "pyarrow": pyarrow.__version__,
        "commit": commit,
        "load": load,
    }


def target_of(peak: Peak) -> float:
    return SQL_TARGET_BYTES if peak.command.startswith("sql") else IMPORT_TARGET_BYTES


def report(peaks: list[Peak]) -> int:
    print("\n| source | command | exit | wall s | peak RSS | target |\n|---|---|---:|---:|---:|---|")
    status = 0
    for p in peaks:
        met = p.peak_bytes < target_of(p)
        print(
            f"| {p.source} | {p.command} | {p.rc} | {p.wall_s} | {p.peak_bytes / 2**20:,.0f} MiB | "
            f"< {target_of(p) / GIB:g} GiB: {'met' if met else 'NOT met'} |"
        )
        if p.source == "current":
            status = max(status, 2 if p.rc != 0 else (0 if met else 1))
        if p.rc != 0:
            print(f"    {p.source} {p.command}: exit {p.rc}: {p.stderr_tail}")
    return status


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sql-rows", type=int, default=100_000_000)
    parser.add_argument("--csv-mb", type=float, default=200.0, help="size of the CSV to import, MB (10^6 B)")
    parser.add_argument("--only", choices=("sql", "import"))
    parser.add_argument(
        "--baseline", type=Path, help="a checkout of another edgestats to run beside this one"
    )
    parser.add_argument(
        "--baseline-sql-rows", type=int, help="rows for the baseline's sql (default: --sql-rows)"
    )
    parser.add_argument(
        "--baseline-csv-mb", type=float, help="CSV size for the baseline's import (default: --csv-mb)"
    )
    parser.add_argument("--dir", type=Path, help="where the DBs and the CSV go (default: a temporary folder)")
    parser.add_argument("--out", type=Path, help="write the measurements as JSON")
    args = parser.parse_args()
    sources = [("current", REPO)] + ([("baseline", args.baseline.resolve())] if args.baseline else [])
    if args.baseline:
        link_packages(args.baseline.resolve())
    env = environment()
    print(json.dumps(env))
    peaks: list[Peak] = []
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        workdir = Path(tmp)
        if args.only in (None, "sql"):
            db = workdir / "empty.duckdb"
            empty_db(REPO, db)
            for source, src in sources:
                rows = (
                    args.baseline_sql_rows
                    if source == "baseline" and args.baseline_sql_rows
                    else args.sql_rows
                )
                peaks += run_sql(source, src, db, rows)
        if args.only in (None, "import"):
            sizes = {"current": args.csv_mb, "baseline": args.baseline_csv_mb or args.csv_mb}
            for source, src in sources:
                csv_path = workdir / f"runs-{sizes[source]:g}.csv"
                if not csv_path.exists():
                    rows = write_runs_csv(csv_path, int(sizes[source] * 1e6))
                label = f"import {csv_path.stat().st_size / 1e6:.0f} MB CSV, {rows:,} rows"
                peaks.append(run_import(source, src, csv_path, workdir, label))
    env["load_end"] = environment()["load"]
    status = report(peaks)
    if args.out:
        args.out.write_text(json.dumps({"environment": env, "peaks": [asdict(p) for p in peaks]}, indent=2))
    return status


if __name__ == "__main__":
    sys.exit(main())
