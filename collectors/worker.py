"""The measured process: one run, one fresh interpreter.

    python -m edgestats.collectors.worker CONFIG_JSON SPOOL [--artifact PATH] [--spawn-ns NS]

It imports only the standard library and the one adapter it needs (no duckdb, no pyarrow), so
import time and memory footprint are the framework's. It walks pCAMP's phases (Table 3) and
writes every phase window and every inference's latency to the spool as it goes; the
orchestrator turns the spool into the run's rows.

Phases, each on time.monotonic_ns() (CLOCK_MONOTONIC, shared with the orchestrator's sampler):
  import, load_model, [compile: runtimes that compile on first call, e.g. torch.compile],
  load_first_input, first_inference, load_second_input, second_inference,
  warmup (--warmup inferences, stored and marked; with --warmup auto, until a steady state is
  detected: collectors/steady_state.py), steady (--iterations inferences), total.
Each inference's latency is time.perf_counter_ns() around adapter.infer(), which returns only
when the work is done (GPU synchronised).

A training run (config.kind "training") walks training/worker.py's phases instead, and a
generation run (config.kind "generation") generation/worker.py's.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import traceback
from pathlib import Path

from edgestats.collectors.core.runconfig import RunConfig, auto_warmup_limit
from edgestats.collectors.core.spool import SpoolWriter
from edgestats.collectors.steady_state import AUTO_FIRST_CHECK, auto_warmup_done, next_auto_check
from edgestats.registry.runtimes import runtime


class PhaseClock:
    """Times phases and writes each one to the spool when it ends."""

    def __init__(self, spool: SpoolWriter):
        self.spool = spool
        self.seq = 0

    def run(self, phase: str, action):
        self.spool.write("begin", phase=phase)
        start = time.monotonic_ns()
        result = action()
        self.spool.write("phase", phase=phase, seq=self.seq, start_ns=start, end_ns=time.monotonic_ns())
        self.seq += 1
        return result


def spin_cpu_ns(cpu_ns: int) -> None:
    """Busy-wait for `cpu_ns` of this thread's CPU time: extra work that a busy machine slows down
    as it slows the inference (a sleep would add the scheduler's wake-up delay instead, and a
    wall-clock deadline would not stretch when the thread is preempted)."""
    cpu = time.thread_time_ns
    deadline_ns = cpu() + cpu_ns
    while cpu() < deadline_ns:
        pass


def run_inferences(
    adapter,
    batch,
    spool: SpoolWriter,
    count: int,
    first_index: int,
    warmup: bool,
    added_delay_ns: int = 0,
    kept: list[int] | None = None,
) -> None:
    """`count` timed inferences, each latency written to the spool (and appended to `kept`)."""
    monotonic, perf = time.monotonic_ns, time.perf_counter_ns
    for i in range(first_index, first_index + count):
        started = monotonic()
        t0 = perf()
        adapter.infer(batch)
        if added_delay_ns:  # --option added_delay_ms: a known slowdown inside the timed region
            spin_cpu_ns(added_delay_ns)
        elapsed = perf() - t0
        spool.write("lat", i=i, w=warmup, s=started, ns=elapsed)  # after the timed region
        if kept is not None:
            kept.append(elapsed)


def run_auto_warmup(
    adapter, batch, spool: SpoolWriter, limit: int, iterations: int, added_delay_ns: int = 0
) -> int:
    """--warmup auto:MAX: warm-up inferences until the change-point analysis of those so far finds a
    steady state that covers at least their second half and would drift by less than 2 % over the
    `iterations` to come (collectors/steady_state.py, auto_warmup_done), checked after
    AUTO_FIRST_CHECK inferences and then after every 10 % more, or until `limit`. Returns how many
    ran; the decision goes to the spool's environment as warmup_auto."""
    latencies: list[int] = []
    check_at, verdict, checks = AUTO_FIRST_CHECK, None, 0
    while verdict is None and len(latencies) < limit:
        count = min(check_at, limit) - len(latencies)
        run_inferences(adapter, batch, spool, count, len(latencies), True, added_delay_ns, latencies)
        if len(latencies) >= check_at:  # between inferences, outside every timed region
            checks += 1
            verdict = auto_warmup_done(latencies, iterations)
            check_at = next_auto_check(len(latencies))
    spool.write(
        "env",
        warmup_auto={
            "limit": limit,
            "inferences": len(latencies),
            "stopped_by": "steady state" if verdict is not None else "limit",
            "steady_from": verdict.steady_from if verdict is not None else None,
            "checks": checks,
        },
    )
    return len(latencies)


def run(config: RunConfig, spool: SpoolWriter, artifact: Path | None) -> None:
    clock = PhaseClock(spool)
    total_start = time.monotonic_ns()
    adapter = runtime(config.framework).adapter_class()(config, artifact)
    spool.write("adapter", runtime=adapter.runtime)
    spool.write("versions", **clock.run("import", adapter.import_framework))
    info = clock.run("load_model", adapter.load_model)
    spool.write("model", **{k: v for k, v in vars(info).items() if v is not None})
    if adapter.compiles:
        clock.run("compile", adapter.compile)
    first = clock.run("load_first_input", adapter.load_input)
    clock.run("first_inference", lambda: adapter.infer(first))
    second = clock.run("load_second_input", adapter.load_input)
    clock.run("second_inference", lambda: adapter.infer(second))
    delay_ns = round(float(config.extra.get("added_delay_ms", 0.0)) * 1e6)
    limit = auto_warmup_limit(config.warmup)
    if limit is None:
        warmed = config.warmup
        clock.run("warmup", lambda: run_inferences(adapter, second, spool, warmed, 0, True, delay_ns))
    else:
        warmed = clock.run(
            "warmup", lambda: run_auto_warmup(adapter, second, spool, limit, config.iterations, delay_ns)
        )
    clock.run(
        "steady",
        lambda: run_inferences(adapter, second, spool, config.iterations, warmed, False, delay_ns),
    )
    spool.write("phase", phase="total", seq=clock.seq, start_ns=total_start, end_ns=time.monotonic_ns())
    spool.write("env", **adapter.environment())


MEMORY_LIMIT_ENV = "EDGESTATS_MEMORY_LIMIT_BYTES"


def apply_memory_limit() -> None:
    """Cap this process's (and its children's) heap and anonymous mappings at the bytes the
    orchestrator passed (--memory-limit-mb), so a board with less memory than this machine can be
    emulated: an allocation past it fails inside the framework, and the run is stored as an error
    with what it measured. RLIMIT_DATA, not RLIMIT_AS: frameworks reserve far more address space
    than they touch."""
    limit = os.environ.get(MEMORY_LIMIT_ENV)
    if limit:
        import resource

        resource.setrlimit(resource.RLIMIT_DATA, (int(limit), int(limit)))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m edgestats.collectors.worker")
    parser.add_argument("config", type=Path, help="the run's RunConfig as a JSON file")
    parser.add_argument("spool", type=Path)
    parser.add_argument("--artifact", type=Path, default=None)
    parser.add_argument("--spawn-ns", type=int, default=None)
    args = parser.parse_args(argv)
    start_ns = time.monotonic_ns()
    apply_memory_limit()
    config = RunConfig.from_dict(json.loads(args.config.read_text()))
    spool = SpoolWriter(args.spool)
    spool.write("start", pid=os.getpid(), spawn_ns=args.spawn_ns, start_ns=start_ns)
    try:
        if config.kind == "training":
            from edgestats.collectors.training.worker import run_training

            run_training(config, spool, PhaseClock(spool))
        elif config.kind == "generation":
            from edgestats.collectors.generation.worker import run_generation

            run_generation(config, spool, PhaseClock(spool), args.artifact)
        else:
            run(config, spool, args.artifact)
    except BaseException as exc:  # recorded, then the exit status tells the orchestrator
        spool.write("error", text="".join(traceback.format_exception(exc)).strip())
        spool.close()
        return 1
    spool.write("end", end_ns=time.monotonic_ns())
    spool.close()
    return 0


if __name__ == "__main__":
    status = main()
    sys.stdout.flush()
    sys.stderr.flush()
    # Skip interpreter teardown: the spool is closed and fsynced, and tearing down torch or
    # TensorFlow takes hundreds of milliseconds that would only delay the next run.
    os._exit(status)
