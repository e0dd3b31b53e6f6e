"""bench/fidelity: does edgestats measure what a reference timer measures, and what does the
harness cost per run?

    python bench/fidelity.py [--model squeezenet] [--threads 2] [--iterations 200] [--pairs 3]

Side by side in one process, alternating A and B:
  A. `edgestats collect` machinery (orchestrator + fresh worker) for PyTorch eager, the model,
     batch 1, the given threads and the same seeded synthetic input; its median steady-state
     latency is read back from the DB.
  B. torch.utils.benchmark.Timer(...).blocked_autorange() on the same model, weights, input and
     thread count, in this process; its median.
Target: A's median within 5 % of B's. Also reported: the harness's per-run overhead beyond
framework import, model load and the inferences themselves — the orchestrator's wall time for
the run minus those phases (process start-up, input loading, spool, DB write). Target < 0.3 s.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import torch  # noqa: E402
import torch.utils.benchmark as benchmark  # noqa: E402

from edgestats.collectors.adapters.inputs import batch_for  # noqa: E402
from edgestats.collectors.collect import open_orchestrator  # noqa: E402
from edgestats.collectors.core.runconfig import RunConfig  # noqa: E402
from edgestats.collectors.sweep import build_sweep  # noqa: E402
from edgestats.collectors.zoo.catalog import zoo_model  # noqa: E402
from edgestats.collectors.zoo.torch_models import build_torch  # noqa: E402
from edgestats.store.results import Store  # noqa: E402

MEASURED_PHASES = (
    "import",
    "load_model",
    "load_first_input",
    "first_inference",
    "load_second_input",
    "second_inference",
    "warmup",
    "steady",
)


def edgestats_run(db: Path, cache: Path, config: RunConfig) -> dict:
    sweep = build_sweep({"framework": [config.framework], "model": [config.model]})
    orchestrator = open_orchestrator(db, sweep, cache_dir=cache)
    t0 = time.monotonic()
    outcome = orchestrator.run(config)
    wall_s = time.monotonic() - t0
    if outcome.status != "ok":
        raise SystemExit(f"edgestats run failed: {outcome.status}: {outcome.error_text}")
    with Store.open(db, read_only=True) as store:
        rid = str(outcome.run_id)
        median_ms = store.frame("SELECT latency_median_ms AS m FROM run_summary WHERE run_id = ?", [rid])[
            "m"
        ][0]
        phases = store.frame(
            "SELECT phase, (end_ns - start_ns) / 1e9 AS s FROM phases WHERE run_id = ?", [rid]
        )
    seconds = dict(zip(phases["phase"].to_list(), phases["s"].to_list()))
    measured = sum(seconds.get(p, 0.0) for p in MEASURED_PHASES)
    return {"median_ms": median_ms, "wall_s": wall_s, "overhead_s": wall_s - measured, "phases": seconds}


def reference_median_ms(config: RunConfig, min_run_time: float) -> float:
    """torch.utils.benchmark on the same model, weights, input and threads, in this process."""
    model = build_torch(config.model, seed=config.seed).eval()
    # The very input the worker builds: batch_for(config, (C, H, W), "NCHW") for a synthetic run.
    x = torch.from_numpy(batch_for(config, zoo_model(config.model).input_shape_nchw(1)[1:], "NCHW"))
    timer = benchmark.Timer(
        stmt="with torch.inference_mode(): model(x)",
        globals={"model": model, "x": x, "torch": torch},
        num_threads=config.threads or torch.get_num_threads(),
    )
    return timer.blocked_autorange(min_run_time=min_run_time).median * 1e3


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--model", default="squeezenet")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--iterations", type=int, default=200)
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument(
        "--min-run-time", type=float, default=5.0, help="seconds blocked_autorange measures for"
    )
    args = parser.parse_args(argv)
    config = RunConfig("pytorch", args.model, threads=args.threads, iterations=args.iterations, warmup=10)
    with tempfile.TemporaryDirectory(prefix="edgestats-fidelity-") as tmp:
        tmp = Path(tmp)
        edgestats_run(
            tmp / "warm.duckdb", tmp / "cache", config
        )  # prepares the model file, warms the page cache
        results = []
        for k in range(args.pairs):
            a = edgestats_run(tmp / f"a{k}.duckdb", tmp / "cache", config)
            b = reference_median_ms(config, args.min_run_time)
            results.append((a, b))
            print(
                f"pair {k + 1}/{args.pairs}: edgestats median {a['median_ms']:.3f} ms, "
                f"torch.utils.benchmark median {b:.3f} ms, ratio {a['median_ms'] / b:.3f}; "
                f"harness overhead {a['overhead_s']:.3f} s of {a['wall_s']:.2f} s"
            )
    ratios = [a["median_ms"] / b for a, b in results]
    overheads = [a["overhead_s"] for a, _ in results]
    ratio, overhead = statistics.median(ratios), statistics.median(overheads)
    print(
        f"\nmodel {args.model}, batch 1, threads {args.threads}, torch {torch.__version__}, "
        f"{args.iterations} steady inferences"
    )
    print(
        f"median latency ratio edgestats / torch.utils.benchmark: {ratio:.3f} "
        f"(min {min(ratios):.3f}, max {max(ratios):.3f}); "
        f"target within 5 %: {'MET' if abs(ratio - 1) <= 0.05 else 'NOT MET'}"
    )
    print(
        f"harness overhead per run (wall - import - load_model - inferences): median {overhead:.3f} s "
        f"(min {min(overheads):.3f}, max {max(overheads):.3f}); "
        f"target < 0.3 s: {'MET' if overhead < 0.3 else 'NOT MET'}"
    )
    phases = results[-1][0]["phases"]
    print("last run's phases (s): " + ", ".join(f"{k} {v:.3f}" for k, v in phases.items()))
    return 0 if abs(ratio - 1) <= 0.05 and overhead < 0.3 else 1


if __name__ == "__main__":
    sys.exit(main())
