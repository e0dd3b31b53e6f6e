"""bench/fidelity_openvino: does edgestats' OpenVINO latency agree with OpenVINO's own benchmark_app?

    python bench/fidelity_openvino.py [--model squeezenet] [--threads 1] [--iterations 200] [--pairs 3]

Side by side, alternating A and B, on the same IR file (the one edgestats prepared, so the same
weights and graph):
  A. `edgestats collect --framework openvino` (a fresh worker: the CPU plugin with the LATENCY
     hint, --threads, an f32 precision hint, batch 1, the seeded synthetic input); its median
     steady-state latency, read back from the DB.
  B. `benchmark_app -m IR -d CPU -api sync -hint none -nstreams 1 -nthreads T -infer_precision f32
     -niter N` (OpenVINO's tool, installed with the openvino package); the "Median" it prints.
Target: A's median within 5 % of B's. Prints each pair and the median ratio A/B.
"""

from __future__ import annotations

import argparse
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
MEDIAN = re.compile(r"^\s*(?:\[ INFO \]\s*)?Median:\s*([0-9.]+)\s*ms", re.MULTILINE)


def edgestats_median_ms(db: Path, cache: Path, args, repeat: int) -> float:
    """Run `repeat` of the configuration (collect resumes: one new run each call); its median."""
    cmd = [
        str(BIN / "edgestats"),
        "collect",
        "--db",
        str(db),
        "--cache-dir",
        str(cache),
        "-f",
        "openvino",
        "-m",
        args.model,
        "-t",
        str(args.threads),
        "-n",
        str(args.iterations),
        "--warmup",
        "10",
        "--repeat",
        str(repeat),
        "--sample-hz",
        "0",
        "--power",
        "none",
    ]
    subprocess.run(cmd, check=True, capture_output=True, text=True)
    query = "SELECT latency_median_ms FROM run_summary WHERE repeat_index = " + str(repeat - 1)
    out = subprocess.run(
        [str(BIN / "edgestats"), "sql", str(db), query, "--format", "csv"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.splitlines()
    return float(out[1])


def benchmark_app_median_ms(xml: Path, args, shape: str) -> float:
    tool = shutil.which("benchmark_app", path=str(BIN)) or "benchmark_app"
    cmd = [
        tool,
        "-m",
        str(xml),
        "-d",
        "CPU",
        "-api",
        "sync",
        "-hint",
        "none",
        "-nstreams",
        "1",
        "-nthreads",
        str(args.threads),
        "-infer_precision",
        "f32",
        "-niter",
        str(args.iterations),
        "-shape",
        shape,
    ]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    match = MEDIAN.search(out)
    if not match:
        raise SystemExit(f"benchmark_app printed no Median line:\n{out[-2000:]}")
    return float(match.group(1))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="squeezenet")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--iterations", type=int, default=200)
    parser.add_argument("--pairs", type=int, default=3)
    args = parser.parse_args(argv)
    sys.path.insert(0, str(REPO))
    from edgestats.collectors.zoo.catalog import zoo_model

    spec = zoo_model(args.model)
    shape = f"[1,{spec.channels},{spec.input_hw[0]},{spec.input_hw[1]}]"
    ratios = []
    with tempfile.TemporaryDirectory() as tmp:
        db, cache = Path(tmp) / "f.duckdb", Path(tmp) / "cache"
        for k in range(1, args.pairs + 1):
            a = edgestats_median_ms(db, cache, args, k)
            [xml] = list(cache.rglob("*.xml"))  # the IR edgestats prepared (and ran) in A
            b = benchmark_app_median_ms(xml, args, shape)
            ratios.append(a / b)
            print(f"pair {k}: edgestats {a:.3f} ms, benchmark_app {b:.3f} ms, A/B {a / b:.3f}", flush=True)
    ratio = statistics.median(ratios)
    met = abs(ratio - 1) <= 0.05
    print(
        f"{args.model}, {args.threads} thread(s), {args.iterations} iterations: median A/B {ratio:.3f} "
        f"({'met' if met else 'NOT met'}: target within 5 %)"
    )
    return 0 if met else 1


if __name__ == "__main__":
    raise SystemExit(main())
