"""bench/rpi_pmic_cost: what one read of `--power rpi-pmic` costs, and how often the sampler reads it.

    python bench/rpi_pmic_cost.py [--reads 300] [--seconds 4] [--rates 10,100] [--json F]

The source runs `vcgencmd pmic_read_adc` once per read. No Raspberry Pi is here, so vcgencmd is
the tests' fake (tests/power_fakes.py: a shell script printing a real Pi 5's output, first on
PATH): these figures are the Python side (subprocess start, wait, parsing) plus a shell's start,
not the firmware's answer, which a real Pi adds. Two measurements:

- `read`: --reads calls of RpiPmicSource.read() back to back; per read, the wall time and the
  calling thread's CPU time (time.thread_time_ns: what the sampler's budget counts; the child's
  own CPU is not in it), median and 5th/95th percentiles;
- per rate in --rates: the real Sampler (no other group but the defaults of a `collect` on this
  process) with the source, for --seconds: how many reads a second the budget (0.5 % of a core)
  gives it, and the mean cost the sampler measured.

Target: a read costs at most 1 ms of the sampler thread's CPU (median), so that the default budget
reads the PMIC at least 5 times a second. Exit status 0 when met, 1 when not.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests"))

from power_fakes import make_fake_vcgencmd  # noqa: E402

from edgestats.collectors.power.rpi_pmic import RpiPmicSource  # noqa: E402
from edgestats.collectors.telemetry.sampler import Sampler  # noqa: E402

TARGET_CPU_MS = 1.0


def spread(values: list[float]) -> dict[str, float]:
    cuts = statistics.quantiles(values, n=20)
    return {"median": statistics.median(values), "p5": cuts[0], "p95": cuts[-1]}


def time_reads(source: RpiPmicSource, reads: int) -> dict[str, dict[str, float]]:
    walls, cpus = [], []
    for _ in range(reads):
        w0, c0 = time.perf_counter_ns(), time.thread_time_ns()
        source.read()
        walls.append((time.perf_counter_ns() - w0) / 1e6)
        cpus.append((time.thread_time_ns() - c0) / 1e6)
    return {"wall_ms": spread(walls), "thread_cpu_ms": spread(cpus)}


def sampled_rate(source: RpiPmicSource, hz: float, seconds: float) -> dict[str, float]:
    sampler = Sampler(os.getpid(), hz, extra_sources=[source], gpu=False)
    sampler.start()
    time.sleep(seconds)
    group = sampler.stop().stats["groups"][source.name]
    return {"sample_hz": hz, "reads_per_s": group["hz"], "cost_us": group["cost_us"]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reads", type=int, default=300)
    parser.add_argument("--seconds", type=float, default=4.0)
    parser.add_argument("--rates", default="10,100")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    print(
        f"load average at start: {os.getloadavg()}; cpus: {os.cpu_count()}; python {sys.version.split()[0]}"
    )
    with tempfile.TemporaryDirectory() as folder:
        make_fake_vcgencmd(Path(folder))
        os.environ["PATH"] = f"{folder}{os.pathsep}{os.environ['PATH']}"
        source = RpiPmicSource()
        ok, why = source.is_available()
        if not ok:
            print(f"the fake vcgencmd is not usable: {why}")
            return 2
        reads = time_reads(source, args.reads)
        rates = [sampled_rate(source, float(hz), args.seconds) for hz in args.rates.split(",")]
    for name, figures in reads.items():
        print(
            f"read {name}: median {figures['median']:.2f}, p5 {figures['p5']:.2f}, p95 {figures['p95']:.2f}"
        )
    for rate in rates:
        print(
            f"sampler at {rate['sample_hz']:g} Hz: rpi-pmic read {rate['reads_per_s']:.1f} times a second "
            f"(sampler's measured cost {rate['cost_us']:.0f} us per read)"
        )
    met = reads["thread_cpu_ms"]["median"] <= TARGET_CPU_MS
    print(f"target: <= {TARGET_CPU_MS:g} ms of sampler CPU per read: {'met' if met else 'MISSED'}")
    print(f"load average at end: {os.getloadavg()}")
    if args.json:
        args.json.write_text(json.dumps({"reads": reads, "rates": rates, "met": met}, indent=2))
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
