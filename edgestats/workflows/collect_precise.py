"""`collect --until-precise` as a library. The goal its options give, the analysis side's stopping
rule, and collectors/precision.py's rounds driven with that rule, told to a collect's events.

The rule is Stein's two-stage procedure (edgestats/analysis/estimators/stopping.py). The device
side cannot import the statistics stack, so it is imported here, lazily, only when a goal is
given; where it cannot be, StoppingRuleMissing names the missing module (the CLI says it in one
line, with the extra to install: cli/analysis_extra.py).
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from edgestats.collectors.collect import Plan
from edgestats.collectors.orchestrator import Orchestrator
from edgestats.collectors.precision import PILOT_RUNS, PrecisionGoal, PrecisionLoop, StopRule
from edgestats.collectors.sweep import Sweep, feasibility
from edgestats.options import OptionError
from edgestats.workflows.collect_events import CollectEvents, finished_run


class StoppingRuleMissing(ImportError):
    """The analysis side's stopping rule cannot be imported here; `name` is the missing module."""


def precision_goal(text: str | float, max_repeat: int, sweep: Sweep) -> PrecisionGoal:
    """--until-precise PCT ("2%" or "2": ±2 % of the median) and --max-repeat, checked; the
    pilot of the stopping rule (Stein's two-stage, edgestats/analysis/estimators/stopping.py) is
    PILOT_RUNS (10) runs, or the sweep's repeat when larger."""
    number = str(text).strip().removesuffix("%").strip()
    try:
        pct = float(number)
    except ValueError:
        pct = float("nan")
    if not 0 < pct < 100:
        raise OptionError(
            "--until-precise", f"{text!r}: give the target half-width in percent of the median, e.g. 2%"
        )
    min_repeat = max(PILOT_RUNS, sweep.settings.get("repeat", 1))
    if max_repeat < min_repeat:
        raise OptionError(
            "--max-repeat",
            f"{max_repeat}: the stopping rule's pilot is {min_repeat} runs, all made before a "
            "configuration can be judged precise",
        )
    return PrecisionGoal(pct / 100, max_repeat=max_repeat, min_repeat=min_repeat)


def stopping_rule(goal: PrecisionGoal) -> StopRule:
    """Stein's rule for `goal`, from the analysis side (its extra must be installed)."""
    try:
        from edgestats.analysis.estimators.stopping import stein_rule
    except ImportError as exc:
        raise StoppingRuleMissing(f"the stopping rule needs {exc.name}", name=exc.name) from None
    return stein_rule(
        goal.rel_half_width, level=goal.level, pilot_runs=goal.min_repeat, max_repeat=goal.max_repeat
    )


def run_until_precise(
    db: Path,
    the_plan: Plan,
    orchestrator: Orchestrator,
    sweep: Sweep,
    goal: PrecisionGoal,
    rule: StopRule,
    events: CollectEvents,
    counts: Counter[str],
) -> None:
    """Rounds of runs until each configuration stops (collectors/precision.py): each run and each
    configuration as it stops told to `events`, each status counted in `counts`."""
    configs, _ = feasibility(Sweep(dict(sweep.axes), dict(sweep.settings), dict(sweep.options)).configs())
    loop = PrecisionLoop(db, orchestrator, goal, rule)
    info = {
        "shuffle_seed": the_plan.shuffle_seed,
        "axes": sweep.axes,
        "settings": sweep.settings,
        "until_precise": goal.rel_half_width,
        "max_repeat": goal.max_repeat,
    }
    events.until_precise(len(configs), goal)
    try:
        loop.run(
            configs,
            sweep_id=the_plan.sweep_id,
            seed=the_plan.shuffle_seed,
            sweep_info=info,
            on_done=lambda outcome: finished_run(outcome, sweep, events, counts),
            on_stop=events.config_stopped,
        )
    finally:
        orchestrator.telemetry.close()
