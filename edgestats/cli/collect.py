"""`edgestats collect`: run inference and training workloads on this device into a results DB."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from edgestats.cli.common import handle_errors
from edgestats.collectors.collect import Plan, execute, open_orchestrator, plan
from edgestats.collectors.orchestrator import Orchestrator
from edgestats.collectors.precision import (
    DEFAULT_MAX_REPEAT,
    MIN_REPEAT,
    ConfigStop,
    PrecisionGoal,
    PrecisionLoop,
)
from edgestats.collectors.processes import Interrupted, signals_stop_collect
from edgestats.collectors.record import RunOutcome
from edgestats.collectors.runconfig import RunConfig
from edgestats.collectors.sweep import Sweep, combine, feasibility, load_sweep_file, parse_option_flags
from edgestats.collectors.telemetry.noise import DEFAULT_WAIT_S, NoiseThresholds
from edgestats.errors import EdgestatsError
from edgestats.formatting import counted
from edgestats.registry import power as power_sources
from edgestats.registry import runtimes

NOISY_EXIT = 3  # --on-noise fail stopped the sweep (docs/cli/collect.md "Noise sentinel")
STATUS_STYLE = {"ok": "green", "error": "red", "timeout": "yellow", "killed": "magenta", "diverged": "cyan"}


@handle_errors
def collect_command(
    ctx: typer.Context,
    sweep_file: Path = typer.Argument(
        None, help="A TOML sweep file with a [sweep] table (lists are axes, scalars fixed)."
    ),
    db: Path = typer.Option(..., "--db", metavar="PATH", help="Results DB to write (created if missing)."),
    kind: str = typer.Option(
        None, "--kind", metavar="KIND", help="inference (default) or training (zoo models trained on --data)."
    ),
    framework: list[str] = typer.Option(
        [], "--framework", "-f", metavar="F", help=f"{runtimes.choices_text()} (repeatable: an axis)."
    ),
    model: list[str] = typer.Option(
        [],
        "--model",
        "-m",
        metavar="M",
        help="Zoo model (alexnet, squeezenet, mobilenet_v2, mobilenet_v3_small, resnet18, cnn9, mnist_cnn, cifar_cnn, ...) or a model file (.pt, .onnx, .tflite, .keras). Repeatable.",
    ),
    runtime: list[str] = typer.Option(
        [], "--runtime", metavar="R", help="Runtime variant, e.g. torchscript or tf-eager (repeatable)."
    ),
    batch_size: list[int] = typer.Option(
        [], "--batch-size", "-b", metavar="N", help="Batch size (repeatable)."
    ),
    threads: list[int] = typer.Option(
        [],
        "--threads",
        "-t",
        metavar="N",
        help="Intra-op threads (repeatable); also sets OMP/MKL/OpenBLAS thread variables.",
    ),
    precision: list[str] = typer.Option(
        [], "--precision", metavar="P", help="fp32, fp16 or int8 where the runtime supports it (repeatable)."
    ),
    accelerator: list[str] = typer.Option(
        [], "--accelerator", metavar="cpu|cuda", help="cpu or cuda (repeatable)."
    ),
    input_path: str = typer.Option(
        None,
        "--input",
        metavar="IMAGE",
        help="An image file to run on (decoded and resized); default: a synthetic input.",
    ),
    iterations: list[int] = typer.Option(
        [],
        "--iterations",
        "-n",
        metavar="N",
        help="Steady-state inferences per run (default 100); training: optimizer steps (default: --epochs decides). Repeatable.",
    ),
    warmup: int = typer.Option(
        None,
        "--warmup",
        metavar="N",
        help="Warm-up inferences before steady state, stored and marked (default 5).",
    ),
    repeat: int = typer.Option(
        None,
        "--repeat",
        metavar="K",
        help="Fresh processes per configuration, for distributions of cold-start phases.",
    ),
    timeout: float = typer.Option(
        None,
        "--timeout",
        metavar="S",
        help="Seconds a run may take before its process tree is killed (status timeout).",
    ),
    cooldown: float = typer.Option(None, "--cooldown", metavar="S", help="Seconds to wait between runs."),
    seed: int = typer.Option(
        None, "--seed", metavar="N", help="Seed of model weights and synthetic input (default 0)."
    ),
    shuffle_seed: int = typer.Option(
        None,
        "--shuffle-seed",
        metavar="N",
        help="Seed of the run order (default: random, recorded with each run).",
    ),
    option: list[str] = typer.Option(
        [],
        "--option",
        "-o",
        metavar="KEY=VALUE",
        help="Adapter option (repeatable), e.g. interop_threads=1, jit_compile=true, xnnpack=false, architecture=resnet18 (docs/cli/collect.md lists them).",
    ),
    cache_dir: Path = typer.Option(
        None,
        "--cache-dir",
        metavar="DIR",
        help="Where prepared model files are cached, or a model pack (edgestats prepare). Default: edgestats/models in the user cache (XDG_CACHE_HOME, else ~/.cache).",
    ),
    sample_hz: float = typer.Option(
        None,
        "--sample-hz",
        metavar="HZ",
        help="Telemetry samples per second: memory, CPU, I/O, temperatures, GPU, power (default 10; 0 = off).",
    ),
    power: str = typer.Option(
        None,
        "--power",
        metavar="SRC",
        help=f"Power source for energy: {power_sources.spec_help()} (an external meter's log). Default auto: the best available, or none with the reason.",
    ),
    data: list[str] = typer.Option(
        [],
        "--data",
        metavar="DIR",
        help="Training: a dataset directory (MNIST IDX, CIFAR-10 binary or an image folder; `edgestats dataset make` writes one). Repeatable.",
    ),
    epochs: list[int] = typer.Option(
        [],
        "--epochs",
        metavar="N",
        help="Training: epochs (default 1, or as many as --iterations needs). Repeatable.",
    ),
    learning_rate: list[float] = typer.Option(
        [], "--learning-rate", metavar="LR", help="Training: learning rate (default 0.01). Repeatable."
    ),
    optimizer: list[str] = typer.Option(
        [],
        "--optimizer",
        metavar="sgd|adam",
        help="Training: sgd (momentum 0.9, default) or adam. Repeatable.",
    ),
    num_workers: list[int] = typer.Option(
        [],
        "--num-workers",
        metavar="N",
        help="Training: data-loading workers (DataLoader num_workers, tf.data parallel calls); 0 = no pipelining (default). Repeatable.",
    ),
    evict_cache: bool = typer.Option(
        None,
        "--evict-cache/--keep-cache",
        help="Training: drop the dataset from the page cache before the first epoch (cold start; no root needed).",
    ),
    memory_limit_mb: float = typer.Option(
        None,
        "--memory-limit-mb",
        metavar="MIB",
        help="Cap each worker's heap at this many MiB (RLIMIT_DATA), e.g. to emulate a board with less memory; an allocation past it is stored as an error with what the run measured.",
    ),
    clock_offset: float = typer.Option(
        None,
        "--clock-offset",
        metavar="S",
        help="Seconds added to an external meter's timestamps to put them on this host's clock (meter 2 s behind: 2).",
    ),
    until_precise: str = typer.Option(
        None,
        "--until-precise",
        metavar="PCT",
        help="Repeat each configuration in fresh processes until its median latency's 95 % interval (the run as unit) is within ±PCT, e.g. 2%; at least 3 runs (or --repeat), at most --max-repeat. Needs the analyze extra.",
    ),
    max_repeat: int = typer.Option(
        DEFAULT_MAX_REPEAT,
        "--max-repeat",
        metavar="K",
        help="With --until-precise: the most runs per configuration.",
    ),
    on_noise: str = typer.Option(
        None,
        "--on-noise",
        metavar="MODE",
        help=f"When the machine is busy with other work (noise sentinel): warn (default: store the run flagged noisy, print one line), wait (before each run, up to --noise-wait s, until the machine is quiet), fail (stop the sweep after a noisy run, exit {NOISY_EXIT}).",
    ),
    noise_wait: float = typer.Option(
        None,
        "--noise-wait",
        metavar="S",
        help=f"With --on-noise wait: the longest wait for a quiet machine before each run (default {DEFAULT_WAIT_S:g}); the run then starts anyway and is judged as usual.",
    ),
    noise_cpu_pct: float = typer.Option(
        None,
        "--noise-cpu-pct",
        metavar="PCT",
        help=f"A run is noisy when processes outside its tree used more than PCT % of all CPUs during it (default {NoiseThresholds.cpu_pct:g}).",
    ),
    noise_load: float = typer.Option(
        None,
        "--noise-load",
        metavar="PER_CPU",
        help=f"A run is noisy when the 1-minute load average before it exceeds PER_CPU times the number of CPUs (default {NoiseThresholds.load_per_cpu:g}).",
    ),
    verbose: bool = typer.Option(
        False,
        "--verbose",
        "-v",
        help="Say in full why each power source is unusable here (edgestats doctor says it too).",
    ),
    retry_failed: bool = typer.Option(
        False,
        "--retry-failed",
        help="Run again the configurations whose stored run failed (status error); without it, resuming retries only killed runs and errors that named a missing package.",
    ),
) -> None:
    """Run inference or training workloads, one fresh process per run, and store every phase,
    latency, epoch and batch.

    Each run walks pCAMP's phases (import, load model, first/second input and inference,
    warm-up, steady state) and stores each inference's latency. A sweep (the file and/or
    repeated flags) is checked before anything runs, shuffled with a recorded seed, and
    resumable: running it again skips runs already stored. Configurations that cannot run
    here are listed and skipped.

    Training (`--kind training --data DIR`) trains a zoo model from scratch per run and stores
    each epoch (train/test time, loss, accuracy, page-cache residency) and each batch (fetch,
    stall, compute); a run whose loss becomes NaN is stored as diverged.
    """
    file_values = load_sweep_file(sweep_file) if sweep_file else None
    sweep = combine(file_values, sweep_flags(ctx.params), sweep_file)
    goal = precision_goal(until_precise, max_repeat, sweep) if until_precise is not None else None
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
                orchestrator.on_noise_wait = lambda reasons: console.print(
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
            typer.echo(
                f"{db}: stopped by {stop.name}: {stored} stored (a run it stopped is stored as killed, "
                "with what it measured); run the same command again to resume",
                err=True,
            )
            raise typer.Exit(stop.exit_code) from None
        except NoisyRun as noisy:
            typer.echo(
                f"{db}: stopped: --on-noise fail and run {noisy.outcome.config.label()} was noisy "
                f"({noisy.outcome.noise_reason}). It is stored, flagged noisy (analyze --noisy exclude leaves "
                "it out); quieten the machine (edgestats doctor) and run the same command again",
                err=True,
            )
            raise typer.Exit(NOISY_EXIT) from None
    summary = ", ".join(f"{n} {s}" for s, n in sorted(counts.items())) or "nothing to run"
    typer.echo(
        f"{db}: {summary}; {the_plan.already_done} already stored, {len(the_plan.skipped)} cannot run here"
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
    "on_noise": "on_noise",
    "noise_wait": "noise_wait",
    "noise_cpu_pct": "noise_cpu_pct",
    "noise_load": "noise_load",
    "retry_failed": "retry_failed",
}


def sweep_flags(params: dict[str, Any]) -> dict[str, Any]:
    """The command's options (by parameter name) as the sweep keys collectors/sweep.py's
    `combine` takes; an empty list or None is an option not given."""
    flags = {key: params[name] for name, key in SWEEP_FLAGS.items()}
    flags["options"] = parse_option_flags(flags["options"]) or None
    flags["evict_cache"] = None if flags["evict_cache"] is None else [flags["evict_cache"]]
    flags["retry_failed"] = flags["retry_failed"] or None  # not given: the sweep file's, if any
    return flags


def print_plan(
    console: Console, the_plan: Plan, orchestrator: Orchestrator, unit: str = "runs", *, verbose: bool = False
) -> None:
    """What the sweep will do, before the first run: recovered runs, skipped ones, the counts."""
    for warning in orchestrator.warnings:
        console.print(f"warning: {warning}", markup=False)
    for outcome in the_plan.recovered:
        console.print(
            f"recovered an interrupted run: {outcome.config.label()} -> {outcome.status} ({outcome.n_latencies} "
            "latencies)",
            markup=False,
        )
    for config, reason in the_plan.skipped:
        # escaped: a reason quotes `pip install 'edgestats[torch]'`, which rich would read as a tag
        console.print(f"[yellow]cannot run here[/]: {escape(config.label())}: {escape(reason)}")
    unit = unit if the_plan.total != 1 else unit.removesuffix("s")
    console.print(
        f"{the_plan.total} {unit} planned: {len(the_plan.to_run)} to run, {the_plan.already_done} already stored, "
        f"{len(the_plan.skipped)} cannot run here (shuffle seed {the_plan.shuffle_seed})"
    )
    console.print(telemetry_line(orchestrator.telemetry, verbose=verbose), markup=False)


def run_with_progress(
    console: Console, the_plan: Plan, orchestrator: Orchestrator, sweep: Sweep, counts: Counter[str]
) -> None:
    """Run the plan under a progress bar, one line per finished run, counting each status."""
    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("ETA"),
        TimeRemainingColumn(),
    )
    if not the_plan.to_run:  # the plan line said why: no empty 0/0 bar
        orchestrator.telemetry.close()
        return
    with Progress(*columns, console=console, transient=False) as progress:
        task = progress.add_task("collect", total=len(the_plan.to_run))

        def on_start(index: int, config: RunConfig) -> None:
            progress.update(task, description=f"[{index + 1}/{len(the_plan.to_run)}] {config.label()}")

        def on_done(index: int, outcome: RunOutcome) -> None:
            counts[outcome.status] += 1
            progress.console.print(_outcome_line(outcome))
            progress.advance(task)
            noise_check(progress.console, outcome, sweep)

        try:
            execute(the_plan, orchestrator, sweep, on_start=on_start, on_done=on_done)
        finally:
            orchestrator.telemetry.close()


def precision_goal(text: str, max_repeat: int, sweep: Sweep) -> PrecisionGoal:
    """--until-precise PCT ("2%" or "2": ±2 % of the median) and --max-repeat, checked; the
    sweep's repeat, when larger than 3, is the minimum number of runs."""
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
    min_repeat = max(MIN_REPEAT, sweep.settings.get("repeat", 1))
    if max_repeat < min_repeat:
        raise typer.BadParameter(
            f"{max_repeat}: at least {min_repeat} runs are needed before a configuration can be "
            "judged precise",
            param_hint="--max-repeat",
        )
    return PrecisionGoal(pct / 100, max_repeat=max_repeat, min_repeat=min_repeat)


def run_until_precise(
    console: Console,
    db: Path,
    the_plan: Plan,
    orchestrator: Orchestrator,
    sweep: Sweep,
    goal: PrecisionGoal,
    counts: Counter[str],
) -> None:
    """Rounds of runs until each configuration stops (collectors/precision.py); a line per run
    and one per configuration as it stops."""
    try:
        from edgestats.analysis.hierarchical import relative_half_width
    except ImportError as exc:
        raise EdgestatsError(
            f"--until-precise needs the analysis extra ({exc.name} is missing): "
            "pip install 'edgestats[analyze]'"
        ) from None
    configs, _ = feasibility(Sweep(dict(sweep.axes), dict(sweep.settings), dict(sweep.options)).configs())
    loop = PrecisionLoop(db, orchestrator, goal, relative_half_width(goal.level))

    def on_done(outcome: RunOutcome) -> None:
        counts[outcome.status] += 1
        console.print(_outcome_line(outcome))
        noise_check(console, outcome, sweep)

    def on_stop(stop: ConfigStop) -> None:
        console.print(f"{stop.reason}: {stop.config.label().rsplit(' #', 1)[0]}: {stop.detail}", markup=False)

    info = {
        "shuffle_seed": the_plan.shuffle_seed,
        "axes": sweep.axes,
        "settings": sweep.settings,
        "until_precise": goal.rel_half_width,
        "max_repeat": goal.max_repeat,
    }
    console.print(
        f"until precise: each of {counted(len(configs), 'configurations')} until its median is known to "
        f"±{goal.rel_half_width * 100:g} % (95 %), {goal.min_repeat} to {goal.max_repeat} runs",
        markup=False,
    )
    try:
        loop.run(
            configs,
            sweep_id=the_plan.sweep_id,
            seed=the_plan.shuffle_seed,
            sweep_info=info,
            on_done=on_done,
            on_stop=on_stop,
        )
    finally:
        orchestrator.telemetry.close()


class NoisyRun(Exception):
    """--on-noise fail: a run was noisy; the sweep stops (exit NOISY_EXIT)."""

    def __init__(self, outcome: RunOutcome):
        super().__init__(outcome.noise_reason)
        self.outcome = outcome


def noise_check(console: Console, outcome: RunOutcome, sweep: Sweep) -> None:
    """One line when a run was noisy; with --on-noise fail, stop the sweep."""
    if not outcome.noisy:
        return
    console.print(f"[yellow]noisy[/]: {escape(outcome.noise_reason or '')}")
    if sweep.settings.get("on_noise") == "fail":
        raise NoisyRun(outcome)


def _outcome_line(outcome: RunOutcome) -> str:
    """ "ok pytorch cnn9 b1 fp32 #0 — 35 latencies, 7.6 s", with the error's last line when it failed."""
    style = STATUS_STYLE.get(outcome.status, "white")
    first_line = (outcome.error_text or "").strip().splitlines()[-1:] if outcome.error_text else []
    why = f": {first_line[0][:160]}" if first_line else ""
    if outcome.config.kind == "training":
        accuracy = f", test accuracy {outcome.accuracy_pct:.1f} %" if outcome.accuracy_pct is not None else ""
        measured = f"{outcome.n_batches} batches{accuracy}"
    else:
        measured = f"{outcome.n_latencies} latencies"
    return f"[{style}]{outcome.status}[/] {escape(f'{outcome.config.label()} — {measured}, {outcome.seconds:.1f} s{why}')}"


def telemetry_line(telemetry, *, verbose: bool = False) -> str:
    """One short line: the sampler's rate and the power source. Why each source is unusable
    takes a paragraph (sysfs paths, drivers), so it is printed with -v and by doctor; every
    run also stores it as its energy_unavailable_reason."""
    rate = f"{telemetry.sample_hz:g} Hz" if telemetry.sample_hz else "off"
    if telemetry.power is not None:
        power = f"{telemetry.power_name} (rails {', '.join(telemetry.rails)})"
    elif not telemetry.not_used:
        power = "off (--power none)"
    elif verbose:
        power = f"none: {telemetry.no_energy_reason()}"
    else:
        power = (
            f"none here ({', '.join(telemetry.not_used)} unusable: -v or edgestats doctor says why; "
            "an external meter: --power csv:PATH)"
        )
    return f"telemetry: sampler {rate}; energy {power}"


def register(app: typer.Typer) -> None:
    app.command("collect")(collect_command)
