"""bench/overhead: does sampling slow the measured inference down?

    python bench/overhead.py [--rounds 8] [--iterations 400] [--threads 1]
                             [--framework onnxruntime] [--model squeezenet]

Four arms, each a real `collect` run (fresh worker process, same model, threads and input):
sampler off, sampler off again (the A/A control: how far two identical arms drift apart on this
machine), 10 Hz and 100 Hz. Each round runs every arm once, in a shuffled order, so drift
(thermal, background load) spreads over all arms instead of lining up with one. Per run the
figure is the median steady-state latency; per arm, the median over rounds of its ratio to the
"off" run of the same round (paired), with the range over rounds.

Targets: 10 Hz at most 1 % slower than off, 100 Hz at most 3 %. A target is judged against the
A/A control: when the control itself is further apart than the target, the machine is too noisy
to resolve it and the verdict says so instead of pass/fail. Also printed: the sampler's own CPU
time per tick and as a share of one core, and the achieved rate. Exit 0 when the targets are
met (or unresolvable), 1 when missed.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from edgestats.collectors.collect import default_cache_dir  # noqa: E402
from edgestats.collectors.core.runconfig import RunConfig  # noqa: E402
from edgestats.collectors.host.facts import read_device_facts  # noqa: E402
from edgestats.collectors.orchestrator import Orchestrator  # noqa: E402
from edgestats.collectors.telemetry.session import Telemetry  # noqa: E402
from edgestats.store.results import Store  # noqa: E402

ARMS = {"off": 0.0, "off (A/A control)": 0.0, "10 Hz": 10.0, "100 Hz": 100.0}
TARGETS = {"10 Hz": 0.01, "100 Hz": 0.03}


def run_arm(orchestrator: Orchestrator, config: RunConfig, hz: float) -> dict:
    orchestrator.telemetry = Telemetry(sample_hz=hz)
    outcome = orchestrator.run(config)
    if outcome.status != "ok":
        raise SystemExit(f"run failed ({outcome.status}): {outcome.error_text}")
    with Store.open(orchestrator.db_path, read_only=True) as store:
        median_ms, stats = store.con.execute(
            "SELECT l.latency_median_ms, r.environment->'sampler' "
            "FROM run_latency_stats l JOIN runs r USING (run_id) "
            "WHERE run_id = ?",
            [str(outcome.run_id)],
        ).fetchall()[0]
    return {"median_ms": median_ms, "sampler": json.loads(stats) if stats else {}}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--iterations", type=int, default=400)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--framework", default="onnxruntime")
    parser.add_argument("--model", default="squeezenet")
    parser.add_argument("--seed", type=int, default=0, help="seed of the arm order")
    args = parser.parse_args(argv)

    print(f"load average at start: {os.getloadavg()}", flush=True)
    config = RunConfig(
        framework=args.framework,
        model=args.model,
        threads=args.threads,
        iterations=args.iterations,
        warmup=20,
    )
    rng = random.Random(args.seed)
    results: dict[str, list[dict]] = {arm: [] for arm in ARMS}
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "overhead.duckdb"
        with Store.open(db) as store:
            device_id = store.register_device(read_device_facts())
        orchestrator = Orchestrator(db, device_id=device_id, cache_dir=default_cache_dir())
        run_arm(orchestrator, config, 0.0)  # prepares (caches) the model file and warms the page cache
        t0 = time.monotonic()
        for k in range(args.rounds):
            order = list(ARMS)
            rng.shuffle(order)
            for arm in order:
                results[arm].append(run_arm(orchestrator, config, ARMS[arm]))
            line = ", ".join(f"{arm} {results[arm][-1]['median_ms']:.3f}" for arm in ARMS)
            print(f"round {k + 1}/{args.rounds}: median ms: {line}", flush=True)
        wall_s = time.monotonic() - t0

    print(
        f"\n{args.framework} {args.model}, {args.threads} thread(s), "
        f"{args.iterations} steady inferences per run, "
        f"{args.rounds} rounds ({wall_s:.0f} s)"
    )
    print(
        f"{'arm':<18} {'median of run medians':>22} {'paired ratio vs off':>20} {'range over rounds':>20} "
        f"{'sampler CPU/tick':>17} {'% of a core':>12} {'achieved Hz':>12}"
    )
    ratios, ok = {}, True
    for arm in ARMS:
        medians = [r["median_ms"] for r in results[arm]]
        paired = [m / off["median_ms"] for m, off in zip(medians, results["off"])]
        ratios[arm] = statistics.median(paired)
        samplers = [r["sampler"] for r in results[arm] if r["sampler"]]
        cpu_us = statistics.median(s["cpu_s_per_tick"] * 1e6 for s in samplers) if samplers else None
        share = (
            statistics.median(s["cpu_s_per_tick"] * s["achieved_hz"] * 100 for s in samplers)
            if samplers
            else None
        )
        hz = statistics.median(s["achieved_hz"] for s in samplers) if samplers else None
        print(
            f"{arm:<18} {statistics.median(medians):>19.3f} ms {ratios[arm]:>20.4f} "
            f"{min(paired):>9.4f}-{max(paired):<10.4f} "
            f"{(f'{cpu_us:.0f} us' if cpu_us else '-'):>17} {(f'{share:.2f} %' if share else '-'):>12} "
            f"{(f'{hz:.1f}' if hz else '-'):>12}"
        )
    noise = abs(ratios["off (A/A control)"] - 1)
    print(
        f"\nA/A control: two identical 'off' arms differ by {noise * 100:.2f} % "
        "(the noise floor of this machine)"
    )
    for arm, target in TARGETS.items():
        slowdown = ratios[arm] - 1
        if slowdown <= target:
            verdict = "met"
        elif noise >= target:
            verdict = (
                f"not resolvable here (the A/A control differs by {noise * 100:.2f} %, more than the target)"
            )
        else:
            verdict, ok = "MISSED", False
        print(f"{arm}: {slowdown * 100:+.2f} % vs off (target <= {target * 100:.0f} %): {verdict}")
    print(f"load average at end: {os.getloadavg()}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
