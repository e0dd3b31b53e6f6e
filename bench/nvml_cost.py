"""bench/nvml_cost: what each NVML query of the sampler costs, and how often the sampler reads them.

    python bench/nvml_cost.py [--reads 200] [--seconds 5] [--hz 10] [--json F]

Needs an NVIDIA GPU and its driver (pynvml, `edgestats[nvidia]`): without one it says why and exits
2. Two measurements:

- `query`: per metric of the sampler's NVML groups (collectors/telemetry/source_groups.py), a group
  reading that metric alone, read --reads times back to back through the group's own code: the
  calling thread's CPU time (what the sampler's budget counts) and the wall time, medians;
- `sampler`: the real Sampler on this process at --hz for --seconds: how many reads a second each
  NVML group got on the default budget (0.5 % of a core) and the cost it measured.

Target: the group that holds the clocks, utilisation and power is read at every tick (at least
90 % of --hz), so the noise sentinel's clock rule (10 readings in a steady phase) judges runs of
a second or more; the energy counter, in its own group, may be read less often. Exit status 0
when met, 1 when not.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from edgestats.collectors.telemetry.groups import Unavailable  # noqa: E402
from edgestats.collectors.telemetry.sampler import Sampler  # noqa: E402
from edgestats.collectors.telemetry.source_groups import ENERGY_METRICS, Nvml  # noqa: E402

METRICS = (
    "gpu_util_pct",
    "gpu_mem_bytes",
    "gpu_power_w",
    "gpu_energy_j",
    "gpu_sm_clock_mhz",
    "gpu_mem_clock_mhz",
    "gpu_pstate",
)
TARGET_SHARE = 0.9  # of the sampler's ticks, for the group with the clocks


def query_costs(reads: int) -> dict[str, dict[str, float]]:
    """Per metric: median thread-CPU and wall milliseconds of one read of a group holding it alone."""
    costs = {}
    for metric in METRICS:
        group = Nvml(1.0, lambda *note: None, only=(metric,))
        try:
            group.read(0, lambda names, values: None)  # the first call may load tables
            cpus, walls = [], []
            for _ in range(reads):
                c0, w0 = time.thread_time_ns(), time.perf_counter_ns()
                group.read(0, lambda names, values: None)
                cpus.append((time.thread_time_ns() - c0) / 1e6)
                walls.append((time.perf_counter_ns() - w0) / 1e6)
        finally:
            group.close()
        costs[metric] = {"thread_cpu_ms": statistics.median(cpus), "wall_ms": statistics.median(walls)}
    return costs


def sampled_rates(hz: float, seconds: float) -> dict[str, dict[str, float]]:
    """Reads a second and measured cost of each NVML group, the real Sampler on its default budget."""
    sampler = Sampler(os.getpid(), hz, uss_budget=0).start()
    time.sleep(seconds)
    groups = sampler.stop().stats["groups"]
    return {name: figures for name, figures in groups.items() if name.startswith("gpu")}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reads", type=int, default=200)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--hz", type=float, default=10.0)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    print(
        f"load average at start: {os.getloadavg()}; cpus: {os.cpu_count()}; python {sys.version.split()[0]}"
    )
    try:
        costs = query_costs(args.reads)
    except Unavailable as exc:
        print(f"no NVML here: {exc} (this benchmark needs an NVIDIA GPU and its driver)")
        return 2
    for metric, figures in costs.items():
        apart = " (a group of its own)" if metric in ENERGY_METRICS else ""
        print(
            f"{metric:18s} thread CPU {figures['thread_cpu_ms'] * 1e3:9.1f} us   "
            f"wall {figures['wall_ms'] * 1e3:9.1f} us{apart}"
        )
    rates = sampled_rates(args.hz, args.seconds)
    for name, figures in rates.items():
        rate, cost = figures["hz"], figures["cost_us"]
        print(f"sampler at {args.hz:g} Hz: {name} read {rate:.1f} times a second ({cost:.0f} us a read)")
    clocks = rates.get("gpu", {}).get("hz", 0.0)
    met = clocks >= TARGET_SHARE * args.hz
    verdict = "met" if met else "MISSED"
    print(f"target: clocks read at >= {TARGET_SHARE:.0%} of {args.hz:g} Hz: {verdict} ({clocks:.1f})")
    print(f"load average at end: {os.getloadavg()}")
    if args.json:
        args.json.write_text(json.dumps({"queries": costs, "sampler": rates, "met": met}, indent=2))
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
