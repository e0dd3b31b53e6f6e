"""The training batch loop's clock (train_epoch), driven by a fake trainer whose fetch and compute
take known times, so the definitions of fetch, stall and e2e are checked exactly; NaN losses and
the iterations cap. Separate from test_training.py: no framework, no dataset, no worker."""

from __future__ import annotations

import math
import time

from edgestats.collectors.core.runconfig import RunConfig
from edgestats.collectors.core.spool import SpoolWriter, read_spool
from edgestats.collectors.training.rows import batch_rows, epoch_rows, training_results
from edgestats.collectors.training.worker import planned_epochs, train_epoch


class FakeTrainer:
    """Fetch takes fetch_s inside next() (as with num_workers 0), a step takes step_s."""

    def __init__(self, n_batches: int, fetch_s: float, step_s: float, losses: list[float] | None = None):
        self.n, self.fetch_s, self.step_s = n_batches, fetch_s, step_s
        self.losses = losses or [1.0] * n_batches

    def train_batches(self, epoch: int):
        for k in range(self.n):
            t0 = time.perf_counter_ns()
            time.sleep(self.fetch_s)
            yield k, k, time.perf_counter_ns() - t0

    def step(self, x, y):
        time.sleep(self.step_s)
        return self.losses[x], 3, 4

    def end_epoch(self, batches) -> None:
        pass

    def evaluate(self):
        return 0.5, 75.0


def test_stall_is_the_wait_for_the_batch_and_e2e_adds_compute(tmp_path):
    spool_path = tmp_path / "s.jsonl"
    spool = SpoolWriter(spool_path)
    # fetch 60 ms, step 40 ms: each upper bound sits 30-40 ms under what it would read if stall took
    # in the step or compute the fetch (100 ms), so a busy machine's late wake-ups do not fail it
    steps, diverged = train_epoch(0, FakeTrainer(4, 0.06, 0.04), spool, None, 0.25, True)
    spool.close()
    assert (steps, diverged) == (4, False)
    contents = read_spool(spool_path)
    for b in contents.batches:
        assert 60e6 <= b["f"] <= b["st"] < 90e6  # synchronous fetch: stall covers it
        assert 40e6 <= b["c"] < 80e6
        assert b["e2e"] == b["st"] + b["c"] and b["n"] == 4
    [epoch] = contents.epochs
    assert (
        epoch["n_batches"] == 4 and epoch["train_accuracy_pct"] == 75.0 and epoch["test_accuracy_pct"] == 75.0
    )
    assert epoch["cache_resident_pct"] == 25.0 and epoch["cache_evicted"] is True
    assert (
        epoch["train_start_ns"] <= contents.batches[0]["s"]
        and epoch["train_end_ns"] <= epoch["test_start_ns"]
    )


def test_nan_loss_stops_the_epoch_and_is_recorded_as_diverged(tmp_path):
    spool_path = tmp_path / "s.jsonl"
    spool = SpoolWriter(spool_path)
    steps, diverged = train_epoch(
        2, FakeTrainer(5, 0, 0, [2.0, 1e30, math.nan, 1.0, 1.0]), spool, None, None, False
    )
    spool.close()
    assert (steps, diverged) == (3, True)
    contents = read_spool(spool_path)
    assert contents.diverged == {"epoch": 2, "batch": 2, "loss": contents.diverged["loss"]}
    assert math.isnan(contents.diverged["loss"]) and math.isnan(contents.epochs[0]["train_loss"])
    assert "test_accuracy_pct" not in contents.epochs[0], "a diverged epoch is not tested"
    epochs, batches = epoch_rows(contents), batch_rows(contents)
    assert epochs.num_rows == 1 and batches.num_rows == 3 and math.isnan(batches.column("loss")[2].as_py())
    assert training_results(contents)["accuracy_pct"] is None


def test_iterations_cap_decides_the_epochs():
    def config(**kw):
        return RunConfig("pytorch", "cnn9", kind="training", **kw)

    assert planned_epochs(config(epochs=3, iterations=0), 10) == 3
    assert planned_epochs(config(epochs=None, iterations=25), 10) == 3
    assert planned_epochs(config(epochs=2, iterations=25), 10) == 2
    assert planned_epochs(config(epochs=None, iterations=0), 10) == 1
