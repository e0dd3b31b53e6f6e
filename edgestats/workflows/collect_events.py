"""What a collect tells while it runs: the events a caller of edgestats.workflows.collect hears.

`CollectEvents` is the listener: one method per event, each doing nothing here, so a Python
caller overrides those it wants (the terminal's is reports/terminal/collect.py, which has every
method and imports nothing of this package). A finished run is counted and told, then judged
by the noise sentinel (`finished_run`): with on_noise fail a noisy run stops the sweep (NoisyRun).
Standard library only at run time.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from edgestats.collectors.collect import Plan
    from edgestats.collectors.core.runconfig import RunConfig
    from edgestats.collectors.orchestrator import Orchestrator
    from edgestats.collectors.precision import ConfigStop, PrecisionGoal
    from edgestats.collectors.record import RunOutcome
    from edgestats.collectors.sweep import Sweep


class NoisyRun(Exception):
    """on_noise fail: a run was noisy; the sweep stops (the command exits NOISY_EXIT)."""

    def __init__(self, outcome: RunOutcome):
        super().__init__(outcome.noise_reason)
        self.outcome = outcome


class CollectEvents:
    """A collect's events, in the order they come; override those wanted."""

    def planned(self, plan: Plan, orchestrator: Orchestrator, *, unit: str, verbose: bool) -> None:
        """Before the first run: the plan (recovered, skipped, to run), the orchestrator's warnings,
        device line and telemetry; `unit` is runs or (until precise) configurations; `verbose`:
        the caller asked why each power source is unusable."""

    def noise_wait(self, reason: str, wait_s: float) -> None:
        """on_noise wait: waiting up to `wait_s` for a quiet machine, busy for `reason`."""

    def runs_starting(self, total: int) -> None:
        """The planned runs begin (not told when there is none to run, nor until precise)."""

    def run_starting(self, index: int, total: int, config: RunConfig) -> None:
        """Run `index` (from 0) of `total` starts."""

    def run_done(self, outcome: RunOutcome) -> None:
        """A run ended and is stored, whatever its status."""

    def run_elsewhere(self, config: RunConfig, why: str) -> None:
        """A planned run another collect ran, or still runs."""

    def noisy(self, outcome: RunOutcome) -> None:
        """The noise sentinel judged the run just told noisy."""

    def runs_ended(self) -> None:
        """The planned runs ended, or stopped (told after runs_starting only)."""

    def until_precise(self, n_configs: int, goal: PrecisionGoal) -> None:
        """The rounds begin: each of `n_configs` configurations until `goal`."""

    def config_stopped(self, stop: ConfigStop) -> None:
        """Until precise: a configuration stopped being repeated, and why."""

    def interrupted(self, db: Path, counts: Counter[str], signal_name: str) -> None:
        """A stop signal ended the collect: `counts` of each status stored (the run it stopped
        is stored as killed); Interrupted is raised next."""

    def stopped_noisy(self, db: Path, outcome: RunOutcome) -> None:
        """on_noise fail: `outcome` was noisy and the collect stops; NoisyRun is raised next."""

    def finished(self, result: Any) -> None:
        """The collect ended: its CollectResult (edgestats.workflows.collect)."""


def finished_run(outcome: RunOutcome, sweep: Sweep, events: CollectEvents, counts: Counter[str]) -> None:
    """Count and tell a finished run; a noisy one is told too, and with on_noise fail stops the sweep."""
    counts[outcome.status] += 1
    events.run_done(outcome)
    if outcome.noisy:
        events.noisy(outcome)
        if sweep.settings.get("on_noise") == "fail":
            raise NoisyRun(outcome)
