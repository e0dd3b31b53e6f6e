"""A whole `edgestats collect`: plan the sweep, recover interrupted runs, skip finished ones,
run the rest one fresh process at a time.

Resuming: a configuration (every field, repeat index included) that already has a stored run
is skipped, unless all its stored runs were `killed` — an interrupted or OOM-killed attempt is
tried again (and stays stored as history).

Concurrent collects of one sweep: each (configuration, repeat) slot is claimed before it runs
and looked up in the DB again under the claim (slots.py), so it is run and stored once. A slot
another live collect holds is tried again after this collect's other slots, and then left to
that collect; the summary counts the slots run by other collects.
"""

from __future__ import annotations

import random
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from edgestats.cachedir import user_cache_dir
from edgestats.collectors.core.processes import raise_if_stopped
from edgestats.collectors.core.runconfig import RunConfig
from edgestats.collectors.host.facts import named_device_facts
from edgestats.collectors.orchestrator import Orchestrator
from edgestats.collectors.record import RunOutcome
from edgestats.collectors.slots import remove_dead_slot_files, stored_counts, stored_since, try_claim
from edgestats.collectors.storeaccess import store_waiting
from edgestats.collectors.sweep import Sweep, feasibility, shuffled
from edgestats.collectors.telemetry.sentinel import DEFAULT_WAIT_S, NoisePolicy, NoiseThresholds
from edgestats.collectors.telemetry.session import DEFAULT_SAMPLE_HZ, Telemetry
from edgestats.formatting import counted


@dataclass
class Plan:
    sweep_id: uuid.UUID
    shuffle_seed: int
    to_run: list[RunConfig]
    skipped: list[tuple[RunConfig, str]]
    already_done: int
    total: int
    recovered: list[RunOutcome] = field(default_factory=list)
    baseline: dict[str, int] = field(default_factory=dict)  # stored runs per slot when planned (slots.py)
    by_others: int = 0  # planned slots another collect stored while this one ran
    with_others: int = 0  # planned slots another live collect still held when this one ended
    recovered_later: list[RunOutcome] = field(default_factory=list)  # of collects that died meanwhile

    def others_note(self) -> str:
        """ "; 3 slots run by other collects (1 still running)" for the summary line, or ""."""
        note = ""
        if others := self.by_others + self.with_others:
            running = f" ({self.with_others} still running)" if self.with_others else ""
            by = "another collect" if others == 1 else "other collects"
            note += f"; {counted(others, 'slots')} run by {by}{running}"
        if self.recovered_later:
            note += f"; {counted(len(self.recovered_later), 'runs')} of collects that died recovered"
        return note


def default_cache_dir() -> Path:
    return user_cache_dir() / "models"


def open_telemetry(sweep: Sweep) -> Telemetry:
    """The sweep's sampler rate and power source (settings sample_hz, power, clock_offset)."""
    settings = sweep.settings
    return Telemetry.open(
        settings.get("power", "auto"),
        settings.get("sample_hz", DEFAULT_SAMPLE_HZ),
        clock_offset_s=settings.get("clock_offset", 0.0),
    )


def noise_policy(sweep: Sweep) -> NoisePolicy:
    """The sweep's noise settings: on_noise (warn, wait, fail), noise_wait, noise_cpu_pct, noise_load."""
    settings = sweep.settings
    limits = NoiseThresholds(
        cpu_pct=settings.get("noise_cpu_pct", NoiseThresholds.cpu_pct),
        load_per_cpu=settings.get("noise_load", NoiseThresholds.load_per_cpu),
    )
    return NoisePolicy(settings.get("on_noise", "warn"), limits, settings.get("noise_wait", DEFAULT_WAIT_S))


def open_orchestrator(
    db_path: Path,
    sweep: Sweep,
    *,
    cache_dir: Path | None = None,
    on_spawn: Callable[[int], None] | None = None,
) -> Orchestrator:
    telemetry = open_telemetry(sweep)  # first: a named power source that is unusable stops here
    # --device-name: remembered for this machine's next collects and baselines; a name that could
    # not be, or a remembered one that was not used, is said before the first run
    facts, name_note = named_device_facts(sweep.settings.get("device_name"))
    with store_waiting(db_path) as store:
        device_id = store.register_device(facts)
    orchestrator = Orchestrator(
        db_path,
        device_id=device_id,
        cache_dir=cache_dir or default_cache_dir(),
        timeout_s=sweep.settings.get("timeout"),
        on_spawn=on_spawn,
        telemetry=telemetry,
        memory_limit_bytes=_mib_to_bytes(sweep.settings.get("memory_limit_mb")),
        noise=noise_policy(sweep),
    )
    if name_note:
        orchestrator.warnings.append(name_note)
    if facts["facts"].get("device_name_source") == "remembered":  # said: a name given once sticks
        why = facts["facts"]["device_name_note"]
        orchestrator.device_line = f"device: {facts['name']}, {why}; --device-name names it otherwise"
    return orchestrator


def _mib_to_bytes(mib: float | None) -> int | None:
    return round(mib * 2**20) if mib else None


def plan(db_path: Path, sweep: Sweep, orchestrator: Orchestrator) -> Plan:
    recovered = orchestrator.recover_orphans()
    remove_dead_slot_files(orchestrator.spool_dir)  # their runs were just recovered
    configs = sweep.configs()
    runnable, skipped = feasibility(configs)
    runnable, unpreparable = preparable(runnable, orchestrator.cache_dir)
    skipped += unpreparable
    with store_waiting(db_path, read_only=True) as store:
        done = store.finished_config_hashes(retry_failed=bool(sweep.settings.get("retry_failed")))
        baseline = stored_counts(store)
    pending = [c for c in runnable if c.config_hash() not in done]
    seed = sweep.settings.get("shuffle_seed", random.SystemRandom().randrange(2**31))
    return Plan(
        uuid.uuid4(),
        seed,
        shuffled(pending, seed),
        skipped,
        len(runnable) - len(pending),
        len(configs),
        recovered,
        baseline,
    )


# The pip extra of edgestats that installs each module a model's preparation imports.
PREPARE_EXTRAS = {
    "torch": "torch",
    "tensorflow": "tensorflow",
    "openvino": "openvino",
    "nncf": "openvino",
    "onnx": "onnx",
    "pnnx": "pnnx",
    "MNN": "mnn",
    "executorch": "executorch",
}


def module_installed(name: str) -> bool:
    """Whether `import name` would find the module, without importing it."""
    import importlib.util

    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def preparable(
    configs: list[RunConfig], cache_dir: Path
) -> tuple[list[RunConfig], list[tuple[RunConfig, str]]]:
    """Split off the configurations whose model file is neither in the cache (or model pack) nor
    buildable here, because a package the conversion needs is missing (a device with only its
    runtime installed), with what to do about it: said before any run, not as a failed run."""
    from edgestats.collectors.generation.engines import builder_class, needs_prepare
    from edgestats.collectors.pack import is_pack, missing_from_pack
    from edgestats.collectors.prepare import cached_artifact

    ready, skipped = [], []
    for config in configs:
        needs = builder_class(config).prepare_needs(config) if needs_prepare(config) else ()
        missing = [m for m in needs if not module_installed(m)]
        if missing and not cached_artifact(config, cache_dir)[0]:
            extras = ",".join(dict.fromkeys(PREPARE_EXTRAS.get(m, m) for m in missing))
            if is_pack(cache_dir):  # a pack was given: the model is missing from it (collectors/pack.py)
                skipped.append((config, missing_from_pack(config, cache_dir, missing, extras)))
                continue
            skipped.append(
                (
                    config,
                    f"its model file is built with {', '.join(missing)}, not installed here: "
                    f"pip install 'edgestats[{extras}]', or build a model pack on a machine that has "
                    f"it (edgestats prepare ... --cache-dir PACK, the same sweep), copy PACK here "
                    f"and collect with --cache-dir PACK",
                )
            )
        else:
            ready.append(config)
    return ready, skipped


def execute(
    plan_: Plan,
    orchestrator: Orchestrator,
    sweep: Sweep,
    *,
    on_start: Callable[[int, RunConfig], None] | None = None,
    on_done: Callable[[int, RunOutcome], None] | None = None,
    on_other: Callable[[int, RunConfig, str], None] | None = None,
) -> list[RunOutcome]:
    """Run each planned slot this collect can claim. A slot another live collect holds is tried
    again once this collect's other slots are done, and left to it if it still holds it then:
    `on_other(index, config, why)` tells of each slot another collect ran or runs."""
    runner = _SlotRunner(plan_, orchestrator, sweep, on_start, on_done, on_other)
    held = [(i, c) for i, c in enumerate(plan_.to_run) if not runner.try_run(i, c)]
    for index, config in held:
        if not runner.try_run(index, config):
            plan_.with_others += 1
            if on_other:
                on_other(index, config, "still running in another collect")
    return runner.outcomes


class _SlotRunner:
    def __init__(self, plan_: Plan, orchestrator: Orchestrator, sweep: Sweep, on_start, on_done, on_other):
        self.plan, self.orchestrator = plan_, orchestrator
        self.on_start, self.on_done, self.on_other = on_start, on_done, on_other
        self.cooldown_s = sweep.settings.get("cooldown", 0)
        self.info = {"shuffle_seed": plan_.shuffle_seed, "axes": sweep.axes, "settings": sweep.settings}
        self.outcomes: list[RunOutcome] = []

    def try_run(self, index: int, config: RunConfig) -> bool:
        """Run the slot unless another collect has (True), or False: a live collect holds it."""
        raise_if_stopped()  # a stop signal between runs: start no new one
        orchestrator, slot = self.orchestrator, config.config_hash()
        claim = try_claim(orchestrator.spool_dir, slot, orchestrator.owner.name)
        if claim is None:
            return False
        with claim:
            if claim.previous_owner:  # it died holding the slot: store what it left before looking
                self.plan.recovered_later += orchestrator.recover_orphans()
            with store_waiting(orchestrator.db_path, read_only=True) as store:
                taken = stored_since(store, slot, self.plan.baseline)
            if taken:
                self.plan.by_others += 1
                if self.on_other:
                    self.on_other(index, config, "run by another collect")
            else:
                self._run(index, config)
        return True

    def _run(self, index: int, config: RunConfig) -> None:
        if self.outcomes and self.cooldown_s:
            time.sleep(self.cooldown_s)  # let temperature and clocks settle between runs
        if self.on_start:
            self.on_start(index, config)
        raise_if_stopped()
        outcome = self.orchestrator.run(config, sweep_id=self.plan.sweep_id, sweep=self.info)
        self.outcomes.append(outcome)
        if self.on_done:
            self.on_done(index, outcome)
        if outcome.interrupted:  # stored as interrupted; now stop collect
            raise outcome.interrupted
        raise_if_stopped()
