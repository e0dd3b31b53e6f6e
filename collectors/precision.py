"""`collect --precision`: repeat each configuration in fresh processes until its median latency
is known to the asked precision, or --max-repeat is reached.

Kalibera and Jones (ISMM 2013) measure at the level where the variance is: on edge devices two
identical processes differ by 1-8 % while one process's thousands of latencies barely move its
median, so precision comes from more runs, not longer ones. Runs go in rounds: round k runs
repeat k of every configuration still open, in a shuffled order, so drift (heat, background load)
is spread over all configurations instead of landing on the ones measured last.

After each run, before it is stored, the configuration's median interval (the run as unit, over
its stored runs and this one) decides: continue, `precise` (half-width within the target, after
at least the minimum number of runs), `max-repeat`, or `failed` (a run that did not end ok: a
repeat would measure nothing more). The decision is stored with the run, in
runs.environment.precision, so the last run of each configuration says why it stopped; the
record travels with the run through merge, export and lakes.

The interval is the analysis side's (edgestats.analysis.hierarchical, the same one `analyze`
reports): device-side code cannot import the statistics stack, so the caller passes it in as
`relative_half_width` (the CLI does).
"""

from __future__ import annotations

import dataclasses
import random
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from edgestats.collectors.orchestrator import Orchestrator
from edgestats.collectors.processes import raise_if_stopped
from edgestats.collectors.record import RunEnd, RunOutcome
from edgestats.collectors.runconfig import RunConfig
from edgestats.collectors.spool import SpoolContents
from edgestats.collectors.storeaccess import store_waiting

DEFAULT_MAX_REPEAT = 20
# Fewer runs than this give a t interval with one or two degrees of freedom: a half-width that
# happens to be small says little about the next run.
MIN_REPEAT = 3

# latencies (ns) of each run of one configuration -> half-width of its median's interval as a
# fraction of the median; None when no interval can be made
HalfWidth = Callable[[Sequence[Sequence[int]]], float | None]


@dataclass(frozen=True)
class PrecisionGoal:
    rel_half_width: float  # 0.02: the median known to ±2 %
    max_repeat: int = DEFAULT_MAX_REPEAT
    min_repeat: int = MIN_REPEAT
    level: float = 0.95


@dataclass
class ConfigStop:
    """Why one configuration stopped being repeated."""

    config: RunConfig  # repeat_index 0: the configuration, not one run of it
    n_runs: int
    rel_half_width: float | None  # at the stop (None: no interval could be made)
    reason: str  # precise | max-repeat | failed
    detail: str


class PrecisionLoop:
    """Interleaved rounds of `configs` until each one stops (see the module docstring)."""

    def __init__(
        self, db_path: Path, orchestrator: Orchestrator, goal: PrecisionGoal, relative_half_width: HalfWidth
    ):
        self.db_path, self.orchestrator, self.goal = db_path, orchestrator, goal
        self.relative_half_width = relative_half_width
        self.stops: dict[str, ConfigStop] = {}  # by the config_hash of the configuration's repeat 0
        self.outcomes: list[RunOutcome] = []

    def run(
        self,
        configs: list[RunConfig],
        *,
        sweep_id: uuid.UUID,
        seed: int,
        sweep_info: dict,
        on_start: Callable[[RunConfig], None] | None = None,
        on_done: Callable[[RunOutcome], None] | None = None,
        on_stop: Callable[[ConfigStop], None] | None = None,
    ) -> list[ConfigStop]:
        rng = random.Random(seed)
        for k in range(self.goal.max_repeat):
            still_open = [c for c in configs if _key(c) not in self.stops]
            if not still_open:
                break
            done = self._stored_hashes()
            round_ = [dataclasses.replace(c, repeat_index=k) for c in still_open]
            rng.shuffle(round_)
            for config in round_:
                if config.config_hash() in done:
                    self._decide_stored(config, on_stop)  # a resumed collect: that run is already in the DB
                    continue
                raise_if_stopped()
                if on_start:
                    on_start(config)
                outcome = self.orchestrator.run(
                    config,
                    sweep_id=sweep_id,
                    sweep=sweep_info,
                    extra_environment=lambda end, spool, c=config: self._decide(c, end, spool),
                )
                self.outcomes.append(outcome)
                if on_done:
                    on_done(outcome)
                if outcome.interrupted:
                    raise outcome.interrupted
                if _key(config) in self.stops and on_stop:
                    on_stop(self.stops[_key(config)])
        return list(self.stops.values())

    def _decide(self, config: RunConfig, end: RunEnd, spool: SpoolContents) -> dict[str, Any]:
        """The decision stored with this run: runs.environment.precision."""
        runs = self._stored_latencies(config)
        if end.status == "ok":
            runs.append([r["ns"] for r in spool.latencies if not r.get("w")])
        return {"precision": self._decision(config, end.status, runs)}

    def _decide_stored(self, config: RunConfig, on_stop) -> None:
        """A run that a resumed collect finds stored: decided again, as if it had just run (the
        decision stored with it may have been made for another target)."""
        self._decision(config, "ok", self._stored_latencies(config, through=config.repeat_index + 1))
        if _key(config) in self.stops and on_stop:
            on_stop(self.stops[_key(config)])

    def _decision(self, config: RunConfig, status: str, runs: list[list[int]]) -> dict[str, Any]:
        goal, n = self.goal, config.repeat_index + 1
        width = self.relative_half_width(runs) if len(runs) >= 2 else None
        shown = f"±{width * 100:.2f} %" if width is not None else "no interval"
        target = f"±{goal.rel_half_width * 100:g} %"
        if status != "ok":
            reason, detail = (
                "failed",
                f"run #{config.repeat_index} ended {status}: a repeat would measure nothing more",
            )
        elif n >= goal.min_repeat and width is not None and width <= goal.rel_half_width:
            reason, detail = "precise", f"{shown} after {n} runs (target {target})"
        elif n >= goal.max_repeat:
            reason, detail = (
                "max-repeat",
                f"{shown} after {n} runs, the --max-repeat; target {target} not reached",
            )
        else:
            reason, detail = "continue", f"{shown} after {n} runs (target {target})"
        if reason != "continue":
            base = dataclasses.replace(config, repeat_index=0)
            self.stops[_key(base)] = ConfigStop(base, n, width, reason, detail)
        return {
            "decision": reason,
            "detail": detail,
            "n_runs": n,
            "rel_half_width": width,
            "target_rel_half_width": goal.rel_half_width,
            "level": goal.level,
            "max_repeat": goal.max_repeat,
        }

    def _stored_hashes(self) -> set[str]:
        if not self.db_path.exists():
            return set()
        with store_waiting(self.db_path, read_only=True) as store:
            return store.finished_config_hashes()

    def _stored_latencies(self, config: RunConfig, through: int | None = None) -> list[list[int]]:
        """The steady-state latencies (ns) of each stored ok run of `config`'s repeats before
        this one (or through repeat `through` - 1)."""
        last = config.repeat_index if through is None else through
        hashes = [dataclasses.replace(config, repeat_index=k).config_hash() for k in range(last)]
        if not hashes or not self.db_path.exists():
            return []
        with store_waiting(self.db_path, read_only=True) as store:
            return store.steady_latencies_ns(hashes)


def _key(config: RunConfig) -> str:
    return dataclasses.replace(config, repeat_index=0).config_hash()
