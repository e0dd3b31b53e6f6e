"""One run per slot (collectors/slots.py): the claim on a (configuration, repeat) slot, held by
real processes and dropped by the kernel when one dies, and how a collect's plan runs, skips or
leaves slots that other collects hold or stored (collectors/collect.py, with a stand-in
orchestrator: no framework). The same with four real `collect` processes:
tests/collectors/test_signals.py::test_four_identical_collects_run_each_slot_once.

Cost: about 2 s in all, each test under 1 s (child Pythons of 0.15 s, small DuckDB files)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from edgestats.collectors.collect import Plan, execute
from edgestats.collectors.core.runconfig import RunConfig
from edgestats.collectors.ownership import SpoolOwner
from edgestats.collectors.record import RunOutcome
from edgestats.collectors.slots import (
    remove_dead_slot_files,
    slot_path,
    stored_counts,
    stored_since,
    try_claim,
)
from edgestats.collectors.sweep import Sweep
from edgestats.store.results import Store

HOLDER = """
import sys, time
from pathlib import Path
from edgestats.collectors.slots import try_claim
claim = try_claim(Path(sys.argv[1]), sys.argv[2], "owner-child.lock")
print("held" if claim else "refused", flush=True)
time.sleep(60)
"""


@pytest.fixture
def holder():
    """Start a child Python that claims a slot and keeps it; every child is killed at the end."""
    children: list[subprocess.Popen] = []

    def start(spool_dir: Path, config_hash: str) -> subprocess.Popen:
        child = subprocess.Popen(
            [sys.executable, "-c", HOLDER, str(spool_dir), config_hash], stdout=subprocess.PIPE, text=True
        )
        children.append(child)
        assert child.stdout.readline().strip() == "held"
        return child

    yield start
    for child in children:
        child.kill()
        child.wait()
        child.stdout.close()


def test_a_slot_held_by_a_live_process_is_refused_and_free_again_when_it_dies(tmp_path, holder):
    child = holder(tmp_path, "abc")
    assert try_claim(tmp_path, "abc", "owner-me.lock") is None, "a second claimer while the first lives"
    assert try_claim(tmp_path, "other", "owner-me.lock") is not None, "other slots are free"
    os.kill(child.pid, signal.SIGKILL)
    child.wait()
    claim = try_claim(tmp_path, "abc", "owner-me.lock")
    assert claim is not None and claim.previous_owner == "owner-child.lock", "the dead holder is named"
    claim.release()
    assert not slot_path(tmp_path, "abc").exists(), "a slot let go leaves no file"
    with try_claim(tmp_path, "abc", "owner-me.lock") as again:
        assert again.previous_owner is None


def test_two_claims_in_one_process_exclude_each_other_and_release_removes_the_file(tmp_path):
    first = try_claim(tmp_path, "abc", "owner-a.lock")
    assert first is not None and try_claim(tmp_path, "abc", "owner-b.lock") is None
    first.release()
    first.release()  # twice: nothing more happens
    assert list(tmp_path.iterdir()) == []


def test_a_lock_won_on_a_removed_file_is_taken_again_on_the_new_one(tmp_path):
    """A claimer that opened the file just before its holder removed it must not hold a lock
    that a third claimer, on the new file, holds too: two live claims of one slot."""
    stale = os.open(slot_path(tmp_path, "abc"), os.O_CREAT | os.O_RDWR)
    slot_path(tmp_path, "abc").unlink()  # the holder let the slot go after we opened it
    try:
        with try_claim(tmp_path, "abc", "owner-a.lock") as claim:
            assert claim is not None and slot_path(tmp_path, "abc").exists()
            assert try_claim(tmp_path, "abc", "owner-b.lock") is None
    finally:
        os.close(stale)


def test_dead_holders_files_are_removed_and_live_ones_kept(tmp_path, holder):
    holder(tmp_path, "live")
    dead = holder(tmp_path, "dead")
    dead.kill()
    dead.wait()
    remove_dead_slot_files(tmp_path)
    assert sorted(p.name for p in tmp_path.glob("slot-*")) == ["slot-live.lock"]


def write_run(db: Path, config: RunConfig, status: str = "ok") -> None:
    with Store.open(db) as store:
        device = store.register_device({"name": "stand-in"})
        store.write_run(
            {
                "device_id": device,
                "kind": "inference",
                "status": status,
                "framework": config.framework,
                "model": config.model,
                "repeat_index": config.repeat_index,
                "config_hash": config.config_hash(),
                "source": "collect",
            }
        )


SLOTS = [RunConfig(framework="onnxruntime", model="cnn9", iterations=5, repeat_index=k) for k in range(3)]


def test_a_slot_counts_as_stored_since_the_plan_only_for_a_new_run_not_killed(tmp_path):
    db = tmp_path / "r.duckdb"
    write_run(db, SLOTS[0], "error")
    with Store.open(db, read_only=True) as store:
        baseline = stored_counts(store)
    write_run(db, SLOTS[1], "killed")
    with Store.open(db, read_only=True) as store:
        assert baseline == {SLOTS[0].config_hash(): 1}
        assert not stored_since(store, SLOTS[0].config_hash(), baseline), "the error was there when planned"
        assert not stored_since(store, SLOTS[1].config_hash(), baseline), "a killed attempt is run again"
    write_run(db, SLOTS[0], "error")  # another collect with --retry-failed ran it meanwhile
    with Store.open(db, read_only=True) as store:
        assert stored_since(store, SLOTS[0].config_hash(), baseline)


class StandIn:
    """The orchestrator's side that execute() uses: it notes each run it is asked for (what it
    would store is not looked at: the slot's claim is held until run() returns)."""

    def __init__(self, db: Path):
        self.db_path, self.spool_dir = db, db.parent
        self.owner = SpoolOwner(db.parent)
        self.ran: list[int] = []

    def run(self, config: RunConfig, **_) -> RunOutcome:
        self.ran.append(config.repeat_index)
        return RunOutcome(uuid.uuid4(), config, "ok", None, 5, 0.0)

    def recover_orphans(self) -> list[RunOutcome]:
        return []


def test_a_collect_runs_its_free_slots_and_leaves_the_others_to_their_collects(tmp_path, holder):
    db = tmp_path / "r.duckdb"
    with Store.open(db) as store:
        the_plan = Plan(uuid.uuid4(), 1, list(SLOTS), [], 0, 3, baseline=stored_counts(store))
    write_run(db, SLOTS[0])  # another collect stored repeat 0 after this one planned
    holder(tmp_path, SLOTS[2].config_hash())  # and a live one runs repeat 2
    orchestrator, told = StandIn(db), []
    outcomes = execute(
        the_plan, orchestrator, Sweep({}, {}), on_other=lambda i, c, why: told.append((c.repeat_index, why))
    )
    assert orchestrator.ran == [1] and [o.config.repeat_index for o in outcomes] == [1]
    assert told == [(0, "run by another collect"), (2, "still running in another collect")]
    assert (the_plan.by_others, the_plan.with_others) == (1, 1)
    assert the_plan.others_note() == "; 2 slots run by other collects (1 still running)"
    assert sorted(p.name for p in tmp_path.glob("slot-*")) == [f"slot-{SLOTS[2].config_hash()}.lock"]


def test_a_slot_freed_while_the_collect_ran_others_is_run_at_its_end(tmp_path, holder):
    """A collect that died holding a slot: the one that finds it free at the end runs it, after
    recovering what the dead one left (the file names it)."""
    db = tmp_path / "r.duckdb"
    with Store.open(db) as store:
        the_plan = Plan(uuid.uuid4(), 1, list(SLOTS), [], 0, 3, baseline=stored_counts(store))
    child = holder(tmp_path, SLOTS[0].config_hash())
    orchestrator = StandIn(db)
    real_run = orchestrator.run

    def run_and_kill_the_holder(config: RunConfig, **kw) -> RunOutcome:
        if child.poll() is None:
            child.kill()
            child.wait()
        return real_run(config, **kw)

    orchestrator.run = run_and_kill_the_holder
    recovered = []
    orchestrator.recover_orphans = lambda: recovered.append(True) or []
    execute(the_plan, orchestrator, Sweep({}, {}))
    assert sorted(orchestrator.ran) == [0, 1, 2] and orchestrator.ran[-1] == 0
    assert recovered == [True] and the_plan.others_note() == ""
    assert list(tmp_path.glob("slot-*")) == []
