"""`edgestats collect`: run inference and training workloads on this device into a results DB.

The command turns its flags (cli/collect_options.py declares them) and the sweep file into a
sweep, and --until-precise into a goal; cli/collect_progress.py runs it on the terminal.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import typer
from rich.console import Console

from edgestats.cli.collect_options import (
    AcceleratorOpt,
    BatchSizeOpt,
    CacheDirOpt,
    ClockOffsetOpt,
    ContextDepthOpt,
    CooldownOpt,
    DataOpt,
    DbOpt,
    DeviceNameOpt,
    EpochsOpt,
    EvictCacheOpt,
    ForceOpt,
    FrameworkOpt,
    InputOpt,
    IterationsOpt,
    KindOpt,
    LearningRateOpt,
    MaxRepeatOpt,
    MemoryLimitOpt,
    ModelOpt,
    NewTokensOpt,
    NoiseCpuPctOpt,
    NoiseLoadOpt,
    NoiseWaitOpt,
    NumWorkersOpt,
    OnNoiseOpt,
    OptimizerOpt,
    OptionOpt,
    PowerOpt,
    PrecisionOpt,
    PromptTokensOpt,
    RepeatOpt,
    RetryFailedOpt,
    RuntimeOpt,
    SampleHzOpt,
    SeedOpt,
    ShuffleSeedOpt,
    SweepFileArg,
    ThreadsOpt,
    TimeoutOpt,
    UntilPreciseOpt,
    VerboseOpt,
    WarmupOpt,
)
from edgestats.cli.collect_progress import (
    NOISY_EXIT,
    NoisyRun,
    echo,
    print_plan,
    run_until_precise,
    run_with_progress,
    say,
)
from edgestats.cli.common import handle_errors
from edgestats.collectors.collect import open_orchestrator, plan
from edgestats.collectors.core.processes import Interrupted, signals_stop_collect
from edgestats.collectors.precision import DEFAULT_MAX_REPEAT, PILOT_RUNS, PrecisionGoal
from edgestats.collectors.storeaccess import appending_anyway
from edgestats.collectors.sweep import Sweep, combine, load_sweep_file, parse_option_flags
from edgestats.errors import EdgestatsError


@handle_errors
def collect_command(
    ctx: typer.Context,
    sweep_file: SweepFileArg = None,
    db: DbOpt = ...,
    kind: KindOpt = None,
    framework: FrameworkOpt = None,
    model: ModelOpt = None,
    runtime: RuntimeOpt = None,
    batch_size: BatchSizeOpt = None,
    threads: ThreadsOpt = None,
    precision: PrecisionOpt = None,
    accelerator: AcceleratorOpt = None,
    input_path: InputOpt = None,
    iterations: IterationsOpt = None,
    warmup: WarmupOpt = None,
    repeat: RepeatOpt = None,
    timeout: TimeoutOpt = None,
    cooldown: CooldownOpt = None,
    seed: SeedOpt = None,
    shuffle_seed: ShuffleSeedOpt = None,
    option: OptionOpt = None,
    cache_dir: CacheDirOpt = None,
    sample_hz: SampleHzOpt = None,
    power: PowerOpt = None,
    data: DataOpt = None,
    epochs: EpochsOpt = None,
    learning_rate: LearningRateOpt = None,
    optimizer: OptimizerOpt = None,
    num_workers: NumWorkersOpt = None,
    evict_cache: EvictCacheOpt = None,
    prompt_tokens: PromptTokensOpt = None,
    new_tokens: NewTokensOpt = None,
    context_depth: ContextDepthOpt = None,
    memory_limit_mb: MemoryLimitOpt = None,
    clock_offset: ClockOffsetOpt = None,
    device_name: DeviceNameOpt = None,
    until_precise: UntilPreciseOpt = None,
    max_repeat: MaxRepeatOpt = DEFAULT_MAX_REPEAT,
    on_noise: OnNoiseOpt = None,
    noise_wait: NoiseWaitOpt = None,
    noise_cpu_pct: NoiseCpuPctOpt = None,
    noise_load: NoiseLoadOpt = None,
    verbose: VerboseOpt = False,
    retry_failed: RetryFailedOpt = False,
    force: ForceOpt = False,
) -> None:
    """Run inference, training or generation workloads, one fresh process per run, and store
    every phase, latency, epoch, batch and token.

    Each run walks pCAMP's phases and stores each inference's latency. A sweep (the file and/or
    repeated flags) is checked before anything runs, shuffled with a recorded seed, and
    resumable: running it again skips runs already stored; what cannot run here is skipped.
    Training (`--kind training --data DIR`) stores each epoch and batch; generation (`--kind
    generation`) each token's latency and the prefill and decode phases (docs/generation.md).
    """
    sweep = combine(load_sweep_file(sweep_file) if sweep_file else None, sweep_flags(ctx.params), sweep_file)
    goal = precision_goal(until_precise, max_repeat, sweep) if until_precise is not None else None
    with appending_anyway(db, force):  # --force: a DB marked damaged is written to all the same
        collect_sweep(db, sweep, cache_dir, goal, verbose=verbose)


def collect_sweep(
    db: Path,
    sweep: Sweep,
    cache_dir: Path | None,
    goal: PrecisionGoal | None = None,
    *,
    verbose: bool = False,
) -> None:
    """Plan and run `sweep` into `db` (with `goal`, until each configuration is precise); a stop
    signal stores the run it stopped and exits 128 + signal."""
    console = Console(stderr=True, soft_wrap=True)  # whole lines in logs, wrapped only by terminals
    counts: Counter[str] = Counter()
    with signals_stop_collect():
        try:
            with open_orchestrator(db, sweep, cache_dir=cache_dir) as orchestrator:
                orchestrator.on_noise_wait = lambda reasons: say(
                    console,
                    f"waiting up to {orchestrator.noise.wait_s:g} s for a quiet machine: {reasons[0]}",
                    markup=False,
                )
                if goal is not None:
                    sweep = Sweep(dict(sweep.axes), {**sweep.settings, "repeat": 1}, dict(sweep.options))
                the_plan = plan(db, sweep, orchestrator)
                print_plan(
                    console,
                    the_plan,
                    orchestrator,
                    unit="configurations" if goal is not None else "runs",
                    verbose=verbose,
                )
                if goal is not None:
                    run_until_precise(console, db, the_plan, orchestrator, sweep, goal, counts)
                else:
                    run_with_progress(console, the_plan, orchestrator, sweep, counts)
        except Interrupted as stop:
            stored = ", ".join(f"{n} {s}" for s, n in sorted(counts.items())) or "no run"
            echo(
                f"{db}: stopped by {stop.name}: {stored} stored (a run it stopped is stored as killed, "
                "with what it measured); run the same command again to resume",
                err=True,
            )
            raise typer.Exit(stop.exit_code) from None
        except NoisyRun as noisy:
            echo(
                f"{db}: stopped: --on-noise fail and run {noisy.outcome.config.label()} was noisy "
                f"({noisy.outcome.noise_reason}). It is stored, flagged noisy (analyze --noisy exclude "
                "leaves it out); quieten the machine (edgestats doctor) and run the same command again",
                err=True,
            )
            raise typer.Exit(NOISY_EXIT) from None
    summary = ", ".join(f"{n} {s}" for s, n in sorted(counts.items())) or "nothing to run"
    echo(
        f"{db}: {summary}; {the_plan.already_done} already stored, {len(the_plan.skipped)} cannot run here"
        f"{the_plan.others_note()}"
    )
    if the_plan.skipped and not the_plan.to_run and not the_plan.already_done:
        raise EdgestatsError(
            f"{db}: no run of the sweep can run here ({len(the_plan.skipped)} cannot run here: what to "
            "install or prepare is said above); nothing was stored"
        )


# The options that are sweep keys: option name -> sweep key, in the order the sweep's axes take
# (the order of the configurations, and so of a shuffled sweep with a given seed).
SWEEP_FLAGS = {
    "framework": "framework",
    "model": "model",
    "runtime": "runtime",
    "batch_size": "batch_size",
    "threads": "threads",
    "precision": "precision",
    "accelerator": "accelerator",
    "input_path": "input",
    "iterations": "iterations",
    "warmup": "warmup",
    "seed": "seed",
    "repeat": "repeat",
    "timeout": "timeout",
    "cooldown": "cooldown",
    "shuffle_seed": "shuffle_seed",
    "option": "options",
    "sample_hz": "sample_hz",
    "power": "power",
    "clock_offset": "clock_offset",
    "memory_limit_mb": "memory_limit_mb",
    "kind": "kind",
    "data": "data",
    "epochs": "epochs",
    "learning_rate": "learning_rate",
    "optimizer": "optimizer",
    "num_workers": "num_workers",
    "evict_cache": "evict_cache",
    "prompt_tokens": "prompt_tokens",
    "new_tokens": "new_tokens",
    "context_depth": "context_depth",
    "on_noise": "on_noise",
    "noise_wait": "noise_wait",
    "noise_cpu_pct": "noise_cpu_pct",
    "noise_load": "noise_load",
    "retry_failed": "retry_failed",
    "device_name": "device_name",
}


def sweep_flags(params: dict[str, Any]) -> dict[str, Any]:
    """The command's options (by parameter name) as the sweep keys collectors/sweep.py's
    `combine` takes; an empty list or None is an option not given."""
    flags = {key: params[name] for name, key in SWEEP_FLAGS.items()}
    flags["options"] = parse_option_flags(flags["options"]) or None
    flags["evict_cache"] = None if flags["evict_cache"] is None else [flags["evict_cache"]]
    flags["retry_failed"] = flags["retry_failed"] or None  # not given: the sweep file's, if any
    return flags


def precision_goal(text: str, max_repeat: int, sweep: Sweep) -> PrecisionGoal:
    """--until-precise PCT ("2%" or "2": ±2 % of the median) and --max-repeat, checked; the
    pilot of the stopping rule (Stein's two-stage, edgestats/analysis/estimators/stopping.py) is 5 runs, or
    the sweep's repeat when larger."""
    number = text.strip().removesuffix("%").strip()
    try:
        pct = float(number)
    except ValueError:
        pct = float("nan")
    if not 0 < pct < 100:
        raise typer.BadParameter(
            f"{text!r}: give the target half-width in percent of the median, e.g. 2%",
            param_hint="--until-precise",
        )
    min_repeat = max(PILOT_RUNS, sweep.settings.get("repeat", 1))
    if max_repeat < min_repeat:
        raise typer.BadParameter(
            f"{max_repeat}: the stopping rule's pilot is {min_repeat} runs, all made before a "
            "configuration can be judged precise",
            param_hint="--max-repeat",
        )
    return PrecisionGoal(pct / 100, max_repeat=max_repeat, min_repeat=min_repeat)


def register(app: typer.Typer) -> None:
    app.command("collect")(collect_command)
