"""report: time to write the HTML report of 10,000 runs, and how big it is.

The DB is synthetic (tests/report_builders.py, bulk Arrow inserts through the Store): N
inference runs over 2 devices x 3 frameworks x 2 models with phases, latencies, memory and
energy, one run with a RAPL power trace and an idle baseline, plus 18 training runs (batch size
x iterations x workers x storage). Timed separately: the analyses (`run_analyses`) and the report
(`write_report`: charts, page, analysis.json), median of --repeats. Target: the page stays under
--max-mb (a few MB) however many runs there are, because charts embed aggregates.

    python bench/report.py                 # 10,000 runs x 30 latencies, 3 repeats
    python bench/report.py --runs 1000 --repeats 1
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests"))

from report_builders import make_report_db  # noqa: E402

from edgestats.analysis import run_analyses  # noqa: E402
from edgestats.analysis.load.overview import load_overview  # noqa: E402
from edgestats.analysis.load.power_trace import load_power_trace  # noqa: E402
from edgestats.reports import write_report  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=10_000)
    parser.add_argument("--latencies", type=int, default=30, help="steady latencies per run")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--max-mb", type=float, default=3.0, help="target: index.html at most this size")
    args = parser.parse_args()
    print(f"load average at start: {os.getloadavg()[0]:.2f}")
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "bench.duckdb"
        t = time.perf_counter()
        make_report_db(db, n_inference_runs=args.runs, latencies_per_run=args.latencies)
        print(
            f"DB: {args.runs:,} inference runs x {args.latencies} latencies + 18 training runs, built in "
            f"{time.perf_counter() - t:.1f} s, {db.stat().st_size / 1e6:.1f} MB"
        )
        analyse_s, report_s = [], []
        for i in range(args.repeats):
            t = time.perf_counter()
            results = run_analyses(db)
            analyse_s.append(time.perf_counter() - t)
            t = time.perf_counter()
            # the header and the power trace are read by the analysis layer now; timed with the
            # report, as when write_report read them itself, so figures stay comparable
            files = write_report(Path(tmp) / f"report-{i}", results, load_overview(db), load_power_trace(db))
            report_s.append(time.perf_counter() - t)
        html_mb = files.index.stat().st_size / 1e6
        json_mb = files.analysis_json.stat().st_size / 1e6
    print(
        f"run_analyses: median {statistics.median(analyse_s):.2f} s "
        f"(min {min(analyse_s):.2f}, max {max(analyse_s):.2f})"
    )
    print(
        f"write_report: median {statistics.median(report_s):.2f} s "
        f"(min {min(report_s):.2f}, max {max(report_s):.2f})"
    )
    print(f"index.html: {html_mb:.2f} MB (Vega bundle ~0.9 MB of it); analysis.json: {json_mb:.2f} MB")
    print(f"load average at end: {os.getloadavg()[0]:.2f}")
    met = html_mb <= args.max_mb and not files.chart_errors
    print(f"target index.html <= {args.max_mb} MB: {'met' if met else 'NOT met'}")
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
