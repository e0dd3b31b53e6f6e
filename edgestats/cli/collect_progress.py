"""What `edgestats collect` shows while a sweep runs, and the loops that show it.

The plan's lines before the first run, the progress bar (or, with --until-precise, the rounds of
collectors/precision.py), one line per finished run and per configuration as it stops, the
telemetry line, and the noise sentinel's stop (--on-noise fail). Separate from cli/collect.py,
which turns the command's flags into a sweep and a goal and reports how the collect ended: this
module is the terminal side of running it.
"""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

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
from rich.text import Text

from edgestats.cli.analysis_extra import missing_error, require_analysis_python
from edgestats.collectors.collect import Plan, execute
from edgestats.collectors.core.runconfig import RunConfig
from edgestats.collectors.orchestrator import Orchestrator
from edgestats.collectors.precision import ConfigStop, PrecisionGoal, PrecisionLoop
from edgestats.collectors.record import RunOutcome
from edgestats.collectors.sweep import Sweep, feasibility
from edgestats.formatting import counted, hanging_indent, terminal_width, wrap_spans, wrap_text

NOISY_EXIT = 3  # --on-noise fail stopped the sweep (docs/cli/collect.md "Noise sentinel")
STATUS_STYLE = {"ok": "green", "error": "red", "timeout": "yellow", "killed": "magenta", "diverged": "cyan"}


# Steady latencies a run needs before summary counts its p90 / p99 (edgestats/analysis/estimators/tails.py
# MIN_LATENCIES, which this module cannot import on a device without the analysis extra)
TAIL_MIN_LATENCIES = {"p90": 20, "p99": 100}


def tail_warning(configs: list[RunConfig]) -> str | None:
    """Which tails the planned inference runs will be too short for, or None."""
    fewest = min((c.iterations for c in configs if c.kind == "inference"), default=None)
    short = {name: need for name, need in TAIL_MIN_LATENCIES.items() if fewest is not None and fewest < need}
    if not short:
        return None
    needs = " and ".join(f"{need} steady latencies for {name}" for name, need in short.items())
    return (
        f"--iterations {fewest}: a run needs {needs}; summary will mark "
        f"{' and '.join(short)} 'too few latencies' (docs/methodology.md)"
    )


def print_plan(
    console: Console, the_plan: Plan, orchestrator: Orchestrator, unit: str = "runs", *, verbose: bool = False
) -> None:
    """What the sweep will do, before the first run: recovered runs, skipped ones, the counts."""
    for warning in [*orchestrator.warnings, tail_warning(the_plan.to_run)]:
        if warning:
            say(console, f"warning: {warning}", markup=False)
    for outcome in the_plan.recovered:
        say(
            console,
            f"recovered an interrupted run: {outcome.config.label()} -> {outcome.status} "
            f"({outcome.n_latencies} latencies)",
            markup=False,
        )
    for config, reason, n_runs in skipped_once(the_plan.skipped):
        # escaped: a reason quotes `pip install 'edgestats[torch]'`, which rich would read as a tag
        runs = f" and {n_runs - 1} more run{'s' * (n_runs > 2)} of this model" if n_runs > 1 else ""
        say(console, f"[yellow]cannot run here[/]: {escape(config.label())}{runs}: {escape(reason)}")
    unit = unit if the_plan.total != 1 else unit.removesuffix("s")
    say(
        console,
        f"{the_plan.total} {unit} planned: {len(the_plan.to_run)} to run, "
        f"{the_plan.already_done} already stored, {len(the_plan.skipped)} cannot run here "
        f"(shuffle seed {the_plan.shuffle_seed})",
    )
    if orchestrator.device_line:
        say(console, orchestrator.device_line, markup=False)
    say(console, telemetry_line(orchestrator.telemetry, verbose=verbose), markup=False)


def skipped_once(skipped: list[tuple[RunConfig, str]]) -> list[tuple[RunConfig, str, int]]:
    """The runs that cannot run here, one entry per model file and reason (its first run, the
    reason, how many runs): repeats, batch sizes and thread counts of one model share a reason."""
    groups: dict[tuple, list] = {}
    for config, reason in skipped:
        key = (reason, config.kind, config.framework, config.runtime, config.model, config.precision)
        groups.setdefault(key, [config, reason, 0])[2] += 1
    return [tuple(group) for group in groups.values()]


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
            say(progress.console, _outcome_line(outcome))
            progress.advance(task)
            noise_check(progress.console, outcome, sweep)

        def on_other(index: int, config: RunConfig, why: str) -> None:
            say(progress.console, f"[dim]{why}[/]: {escape(config.label())}")
            progress.advance(task)

        try:
            execute(the_plan, orchestrator, sweep, on_start=on_start, on_done=on_done, on_other=on_other)
        finally:
            orchestrator.telemetry.close()


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
    require_analysis_python("--until-precise")  # the analysis side needs Python 3.11+
    try:
        from edgestats.analysis.estimators.stopping import stein_rule
    except ImportError as exc:
        raise missing_error("--until-precise", exc.name) from None
    configs, _ = feasibility(Sweep(dict(sweep.axes), dict(sweep.settings), dict(sweep.options)).configs())
    rule = stein_rule(
        goal.rel_half_width, level=goal.level, pilot_runs=goal.min_repeat, max_repeat=goal.max_repeat
    )
    loop = PrecisionLoop(db, orchestrator, goal, rule)

    def on_done(outcome: RunOutcome) -> None:
        counts[outcome.status] += 1
        say(console, _outcome_line(outcome))
        noise_check(console, outcome, sweep)

    def on_stop(stop: ConfigStop) -> None:
        say(console, f"{stop.reason}: {stop.config.label().rsplit(' #', 1)[0]}: {stop.detail}", markup=False)

    info = {
        "shuffle_seed": the_plan.shuffle_seed,
        "axes": sweep.axes,
        "settings": sweep.settings,
        "until_precise": goal.rel_half_width,
        "max_repeat": goal.max_repeat,
    }
    say(
        console,
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
    say(console, f"[yellow]noisy[/]: {escape(outcome.noise_reason or '')}")
    if sweep.settings.get("on_noise") == "fail":
        raise NoisyRun(outcome)


def echo(message: str, *, err: bool = False) -> None:
    """typer.echo, wrapped to the terminal's width as say() wraps (a log or pipe: the line whole)."""
    typer.echo(wrap_text(message, terminal_width(sys.stderr if err else sys.stdout)), err=err)


def say(console: Console, message: str, *, markup: bool = True) -> None:
    """Print one message; on a terminal, wrapped to its width at spaces with a hanging indent
    (edgestats.formatting.wrap_spans), never inside a word. A log or pipe gets the line whole
    (the console soft-wraps: rich adds no breaks of its own)."""
    text = console.render_str(message, markup=markup)  # highlighted as console.print(str) does
    width = console.width if console.is_terminal else None
    if width is None or text.cell_len <= width:
        console.print(text)
        return
    hang = hanging_indent(text.plain, width)
    pieces = [text[start:end] for start, end in wrap_spans(text.plain, width, hang)]
    # one print: a progress bar redrawn between two prints would land inside the message
    console.print(Text("\n").join([pieces[0]] + [Text(" " * hang) + piece for piece in pieces[1:]]))


def _outcome_line(outcome: RunOutcome) -> str:
    """ "ok pytorch cnn9 b1 fp32 #0 — 35 latencies, 7.6 s", with the error's last line when it failed."""
    style = STATUS_STYLE.get(outcome.status, "white")
    first_line = (outcome.error_text or "").strip().splitlines()[-1:] if outcome.error_text else []
    why = f": {first_line[0][:160]}" if first_line else ""
    if outcome.config.kind == "training":
        accuracy = f", test accuracy {outcome.accuracy_pct:.1f} %" if outcome.accuracy_pct is not None else ""
        measured = f"{outcome.n_batches} batches{accuracy}"
    elif outcome.config.kind == "generation":  # one latency per generated token (generation/worker.py)
        measured = f"{outcome.n_latencies} tokens"
    else:
        measured = f"{outcome.n_latencies} latencies"
    line = f"{outcome.config.label()} — {measured}, {outcome.seconds:.1f} s{why}"
    return f"[{style}]{outcome.status}[/] {escape(line)}"


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
