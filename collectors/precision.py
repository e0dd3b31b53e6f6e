"""`collect --precision`: repeat each configuration in fresh processes until its median latency has
the asked precision. `--max-repeat` caps the repeats.

Kalibera and Jones (ISMM 2013) measure at the level where the variance is: on edge devices two
identical processes differ by 1-8 % while one process's thousands of latencies barely move its
median, so precision comes from more runs, not longer ones. Runs go in rounds: round k runs
repeat k of every configuration still open, in a shuffled order, so drift (heat, background load)
is spread over all configurations instead of landing on the ones measured last.

After each run, before it is stored, a stopping rule decides from the configuration's runs so far:
continue, `precise`, `max-repeat`, or `failed` (a run that did not end ok: a repeat would measure
nothing more). The rule is Stein's two-stage procedure (Stein 1945) on the runs' medians: a pilot
of `min_repeat` runs (at least 10) measures the spread once, plans the number of runs that makes
the median's interval at most the target, and the configuration stops when that many runs are
stored (`precise`) or at --max-repeat. Stopping as soon as the observed interval looked narrow
enough, as this loop once did, stops on luck: coverage fell to 90-92 % at ±2 % and ±3 % with
run medians 5 % apart (docs/methodology.md, "Stopping rule"). The decision is stored with the run, in
runs.environment.precision (with the rule that fired), so the last run of each configuration
says why it stopped; the record travels with the run through merge, export and lakes.

The rule is the analysis side's (edgestats.analysis.estimators.stopping.stein_rule): device-side code
cannot import the statistics stack, so the caller passes it in as `rule` (the CLI does).
"""

from __future__ import annotations

import dataclasses
import random
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from edgestats.collectors.core.processes import raise_if_stopped
from edgestats.collectors.core.runconfig import RunConfig
from edgestats.collectors.core.spool import SpoolContents
from edgestats.collectors.orchestrator import Orchestrator
from edgestats.collectors.record import RunEnd, RunOutcome
from edgestats.collectors.slots import SlotClaim, wait_for_slot
from edgestats.collectors.storeaccess import store_waiting

DEFAULT_MAX_REPEAT = 20
# Stein's pilot: the runs whose spread plans the rest. Its guarantee assumes normal log run
# medians; a pilot of 5 that happened to agree stopped configurations whose runs take two states
# (30 % of them 10 % slower) at once, covering 82 % for 95 %; 10 runs cover 92-94 % there and for
# t(3) and skewed run medians (docs/methodology.md, "Stopping rule"; tests/analysis/test_stopping.py).
PILOT_RUNS = 10

# latencies (ns) of each ok run of one configuration so far, in repeat order -> the decision: a
# dict with at least `decision` (continue | precise | max-repeat), `detail` and `rel_half_width`
# (None: no interval), stored as it is in runs.environment.precision
StopRule = Callable[[Sequence[Sequence[int]]], dict[str, Any]]


@dataclass(frozen=True)
class PrecisionGoal:
    rel_half_width: float  # 0.02: the median known to ±2 %
    max_repeat: int = DEFAULT_MAX_REPEAT
    min_repeat: int = PILOT_RUNS  # Stein's pilot, n0: no decision but max-repeat before it
    level: float = 0.95


@dataclass
class ConfigStop:
    """Why one configuration stopped being repeated."""

    config: RunConfig  # repeat_index 0: the configuration, not one run of it
    n_runs: int
    rel_half_width: float | None  # the rule's interval at the stop (None: no interval could be made)
    reason: str  # precise | max-repeat | failed
    detail: str


class PrecisionLoop:
    """Interleaved rounds of `configs` until each one stops (see the module docstring)."""

    def __init__(self, db_path: Path, orchestrator: Orchestrator, goal: PrecisionGoal, rule: StopRule):
        self.db_path, self.orchestrator, self.goal, self.rule = db_path, orchestrator, goal, rule
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
                claim = self._claim_unstored(config)  # waits while another collect runs this slot
                if claim is None:
                    self._decide_stored(config, on_stop)  # another collect stored it meanwhile
                    continue
                if on_start:
                    on_start(config)
                with claim:
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

    def _claim_unstored(self, config: RunConfig) -> SlotClaim | None:
        """This collect's claim on the slot (collectors/slots.py), or None when another collect
        stored it; the decision needs every earlier repeat, so a held slot is waited for."""
        orchestrator = self.orchestrator
        claim = wait_for_slot(orchestrator.spool_dir, config.config_hash(), orchestrator.owner.name)
        try:
            if claim.previous_owner:  # it died holding the slot: store what it left spooled first
                orchestrator.recover_orphans()
            stored = config.config_hash() in self._stored_hashes()
        except BaseException:
            claim.release()
            raise
        if stored:
            claim.release()
            return None
        return claim

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
        if status != "ok":
            found: dict[str, Any] = {
                "decision": "failed",
                "detail": f"run #{config.repeat_index} ended {status}: a repeat would measure nothing more",
                "rule": "failed",
                "rel_half_width": None,
            }
        else:
            found = dict(self.rule(runs))
        if found["decision"] == "continue" and n >= goal.max_repeat:
            # the rule saw fewer runs than were made (a stored run without latencies): the loop ends here
            found.update(decision="max-repeat", detail=f"{n} runs, the --max-repeat; {found['detail']}")
        if found["decision"] != "continue":
            base = dataclasses.replace(config, repeat_index=0)
            self.stops[_key(base)] = ConfigStop(
                base, n, found["rel_half_width"], found["decision"], found["detail"]
            )
        return {
            **found,
            "n_runs": n,
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
