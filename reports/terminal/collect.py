"""What `edgestats collect` prints: the events of edgestats.workflows.collect on a terminal.

`CollectReport` hears every event (it has each method of workflows/collect_events.py's
CollectEvents, and imports nothing of workflows): the plan's lines before the first run, the
progress bar, one line per finished run and per configuration as it stops (--until-precise), the
telemetry line, the noise sentinel's lines, and how the collect ended (the summary, or what a
stop signal or --on-noise fail left). Lines go to stderr, wrapped at spaces on a terminal
(`say`); the summary goes to stdout.
"""

from __future__ import annotations

import sys
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
from rich.text import Text

from edgestats.formatting import counted, hanging_indent, terminal_width, wrap_spans, wrap_text

STATUS_STYLE = {"ok": "green", "error": "red", "timeout": "yellow", "killed": "magenta", "diverged": "cyan"}


# Steady latencies a run needs before summary counts its p90 / p99 (edgestats/analysis/estimators/tails.py
# MIN_LATENCIES, which this module cannot import on a device without the analysis extra)
TAIL_MIN_LATENCIES = {"p90": 20, "p99": 100}


def tail_warning(configs: list[Any]) -> str | None:
    """Which tails the planned inference runs (RunConfigs) will be too short for, or None."""
    fewest = min((c.iterations for c in configs if c.kind == "inference"), default=None)
    short = {name: need for name, need in TAIL_MIN_LATENCIES.items() if fewest is not None and fewest < need}
    if not short:
        return None
    needs = " and ".join(f"{need} steady latencies for {name}" for name, need in short.items())
    return (
        f"--iterations {fewest}: a run needs {needs}; summary will mark "
        f"{' and '.join(short)} 'too few latencies' (docs/methodology.md)"
    )


class CollectReport:
    """A collect's events on the terminal (stderr; the summary on stdout)."""

    def __init__(self) -> None:
        self.console = Console(stderr=True, soft_wrap=True)  # whole lines in logs, wrapped only by terminals
        self.progress: Progress | None = None
        self.task: Any = None

    def planned(self, plan: Any, orchestrator: Any, *, unit: str, verbose: bool) -> None:
        print_plan(self.console, plan, orchestrator, unit, verbose=verbose)

    def noise_wait(self, reason: str, wait_s: float) -> None:
        say(self.console, f"waiting up to {wait_s:g} s for a quiet machine: {reason}", markup=False)

    def runs_starting(self, total: int) -> None:
        columns = (
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TextColumn("ETA"),
            TimeRemainingColumn(),
        )
        self.progress = Progress(*columns, console=self.console, transient=False)
        self.progress.start()
        self.task = self.progress.add_task("collect", total=total)

    def run_starting(self, index: int, total: int, config: Any) -> None:
        if self.progress is not None:
            self.progress.update(self.task, description=f"[{index + 1}/{total}] {config.label()}")

    def run_done(self, outcome: Any) -> None:
        say(self.console, outcome_line(outcome))
        self._advance()

    def run_elsewhere(self, config: Any, why: str) -> None:
        say(self.console, f"[dim]{why}[/]: {escape(config.label())}")
        self._advance()

    def noisy(self, outcome: Any) -> None:
        say(self.console, f"[yellow]noisy[/]: {escape(outcome.noise_reason or '')}")

    def runs_ended(self) -> None:
        if self.progress is not None:
            self.progress.stop()
            self.progress = None

    def until_precise(self, n_configs: int, goal: Any) -> None:
        say(
            self.console,
            f"until precise: each of {counted(n_configs, 'configurations')} until its median is known to "
            f"±{goal.rel_half_width * 100:g} % (95 %), {goal.min_repeat} to {goal.max_repeat} runs; "
            f"{STOPPING_ASSUMPTIONS}",
            markup=False,
        )

    def config_stopped(self, stop: Any) -> None:
        label = stop.config.label().rsplit(" #", 1)[0]
        say(self.console, f"{stop.reason}: {label}: {stop.detail}", markup=False)

    def interrupted(self, db: Path, counts: Counter[str], signal_name: str) -> None:
        echo(
            f"{db}: stopped by {signal_name}: {_stored(counts) or 'no run'} stored (a run it stopped is "
            "stored as killed, with what it measured); run the same command again to resume",
            err=True,
        )

    def stopped_noisy(self, db: Path, outcome: Any) -> None:
        echo(
            f"{db}: stopped: --on-noise fail and run {outcome.config.label()} was noisy "
            f"({outcome.noise_reason}). It is stored, flagged noisy (analyze --noisy exclude "
            "leaves it out); quieten the machine (edgestats doctor) and run the same command again",
            err=True,
        )

    def finished(self, result: Any) -> None:
        plan = result.plan
        echo(
            f"{result.db}: {_stored(result.counts) or 'nothing to run'}; {plan.already_done} already stored, "
            f"{len(plan.skipped)} cannot run here{plan.others_note()}"
        )

    def _advance(self) -> None:
        if self.progress is not None:
            self.progress.advance(self.task)


# What the stopping rule's 95 % rests on, said where collect reports it (docs/methodology.md,
# "Stopping rule", gives the figures).
STOPPING_ASSUMPTIONS = (
    "Stein's rule: exact for normal log run medians, 92.5-95 % in simulation for heavy-tailed, skewed "
    "and two-state ones, less (90-91 %) when a few runs are much slower than the rest or a state "
    "shows in fewer than 1 run in 4"
)


def _stored(counts: Counter[str]) -> str:
    return ", ".join(f"{n} {s}" for s, n in sorted(counts.items()))


def print_plan(
    console: Console, the_plan: Any, orchestrator: Any, unit: str = "runs", *, verbose: bool = False
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


def skipped_once(skipped: list[tuple[Any, str]]) -> list[tuple[Any, str, int]]:
    """The runs that cannot run here, one entry per model file and reason (its first run, the
    reason, how many runs): repeats, batch sizes and thread counts of one model share a reason."""
    groups: dict[tuple, list] = {}
    for config, reason in skipped:
        key = (reason, config.kind, config.framework, config.runtime, config.model, config.precision)
        groups.setdefault(key, [config, reason, 0])[2] += 1
    return [tuple(group) for group in groups.values()]


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


def outcome_line(outcome: Any) -> str:
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


def telemetry_line(telemetry: Any, *, verbose: bool = False) -> str:
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
