"""A whole `edgestats collect` as one library call: `collect(db, sweep_file, **options)`, as the
command runs it and as Python may.

It builds the sweep from the file (or a [sweep] table) and the options (collectors/options.py
names them, the command's flags and these keywords alike), checks --until-precise's goal and
imports its stopping rule (collect_precise.py) before the DB is opened, then opens the
orchestrator, plans, and runs the plan, or rounds until each configuration is precise. Each step
is told to `events` (collect_events.py: nothing is printed here; the terminal's listener is
reports/terminal/collect.py). A stop signal stores the run it stopped and raises Interrupted, an
on_noise fail stop raises NoisyRun, each after telling it.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from edgestats.collectors.collect import Plan, execute, open_orchestrator, plan
from edgestats.collectors.core.processes import Interrupted, signals_stop_collect
from edgestats.collectors.options import COLLECT_OPTIONS
from edgestats.collectors.orchestrator import Orchestrator
from edgestats.collectors.precision import PrecisionGoal, StopRule
from edgestats.collectors.storeaccess import appending_anyway
from edgestats.collectors.sweep import Sweep, sweep_of
from edgestats.errors import EdgestatsError
from edgestats.options import check_keywords
from edgestats.workflows.collect_events import CollectEvents, NoisyRun, finished_run
from edgestats.workflows.collect_precise import precision_goal, run_until_precise, stopping_rule

DEFAULTS = {opt.name: opt.default for opt in COLLECT_OPTIONS if not opt.required}


@dataclass
class CollectResult:
    """How a collect ended: its plan (what was planned, stored already, skipped, run by others)
    and the runs it stored, counted by status."""

    db: Path
    plan: Plan
    counts: Counter[str]

    @property
    def nothing_could_run(self) -> bool:
        return bool(self.plan.skipped) and not self.plan.to_run and not self.plan.already_done


def collect(
    db: Path | str,
    sweep_file: Path | str | dict[str, Any] | None = None,
    *,
    events: CollectEvents | None = None,
    **options: Any,
) -> CollectResult:
    """Collect into `db` the sweep of `sweep_file` (a TOML file's path, or its [sweep] table as a
    dict) and `options`: collect's options by name, as its flags give them (framework=["pytorch"],
    model="cnn9", iterations=50, option=["xnnpack=false"], until_precise="2%", max_repeat=10,
    cache_dir=..., force=True, ...), overriding the file's keys. Raises SweepError (a sweep that
    cannot run), OptionError (--until-precise or --max-repeat), StoppingRuleMissing (until precise
    without the analysis extra), EdgestatsError (no run can run here; nothing stored)."""
    check_keywords(COLLECT_OPTIONS, options, "collect")
    values = {**DEFAULTS, **options}
    sweep = sweep_of(sweep_file, COLLECT_OPTIONS, values)
    goal, rule = None, None
    if values["until_precise"] is not None:
        goal = precision_goal(values["until_precise"], values["max_repeat"], sweep)
        rule = stopping_rule(goal)
    with appending_anyway(Path(db), values["force"]):  # force: a DB marked damaged is written to anyway
        return collect_sweep(
            Path(db),
            sweep,
            values["cache_dir"],
            goal,
            rule=rule,
            events=events or CollectEvents(),
            verbose=values["verbose"],
        )


def collect_sweep(
    db: Path,
    sweep: Sweep,
    cache_dir: Path | None,
    goal: PrecisionGoal | None = None,
    *,
    rule: StopRule | None = None,
    events: CollectEvents | None = None,
    verbose: bool = False,
) -> CollectResult:
    """Plan and run `sweep` into `db` (with `goal`, until each configuration is precise)."""
    events = events or CollectEvents()
    counts: Counter[str] = Counter()
    with signals_stop_collect():
        try:
            with open_orchestrator(db, sweep, cache_dir=cache_dir) as orchestrator:
                orchestrator.on_noise_wait = lambda reasons: events.noise_wait(
                    reasons[0], orchestrator.noise.wait_s
                )
                if goal is not None:
                    sweep = Sweep(dict(sweep.axes), {**sweep.settings, "repeat": 1}, dict(sweep.options))
                the_plan = plan(db, sweep, orchestrator)
                unit = "configurations" if goal is not None else "runs"
                events.planned(the_plan, orchestrator, unit=unit, verbose=verbose)
                if goal is not None:
                    rule = rule or stopping_rule(goal)
                    run_until_precise(db, the_plan, orchestrator, sweep, goal, rule, events, counts)
                else:
                    run_planned(the_plan, orchestrator, sweep, events, counts)
        except Interrupted as stop:
            events.interrupted(db, counts, stop.name)
            raise
        except NoisyRun as noisy:
            events.stopped_noisy(db, noisy.outcome)
            raise
    result = CollectResult(db, the_plan, counts)
    events.finished(result)
    if result.nothing_could_run:
        raise EdgestatsError(
            f"{db}: no run of the sweep can run here ({len(the_plan.skipped)} cannot run here: what to "
            "install or prepare is said above); nothing was stored"
        )
    return result


def run_planned(
    the_plan: Plan, orchestrator: Orchestrator, sweep: Sweep, events: CollectEvents, counts: Counter[str]
) -> None:
    """Run the plan, each run's start and end told to `events`, each status counted."""
    if not the_plan.to_run:  # nothing to run: no runs_starting (the plan said why)
        orchestrator.telemetry.close()
        return
    total = len(the_plan.to_run)
    events.runs_starting(total)
    try:
        execute(
            the_plan,
            orchestrator,
            sweep,
            on_start=lambda index, config: events.run_starting(index, total, config),
            on_done=lambda index, outcome: finished_run(outcome, sweep, events, counts),
            on_other=lambda index, config, why: events.run_elsewhere(config, why),
        )
    finally:
        orchestrator.telemetry.close()
        events.runs_ended()
