"""A training run in the measured worker (kind "training"), for the DLaaS and Jetson studies. It
makes the DLaaS study's hyperparameter runs and the Jetson study's data-pipeline measurements; the
framework-specific parts are in training/torch_loop.py / training/tf_loop.py (imported only after
the import phase).

Phases (time.monotonic_ns(), shared with the sampler): import, load_dataset (open and check the
dataset files, evict them from the page cache if asked), build_model, train (every epoch with
its test pass), total. Each epoch and each training batch goes to the spool as it finishes, so
a run killed at epoch 3 (the OOM killer at a large batch size) is stored with epochs 0-2.

Per training batch (all perf_counter_ns, in ns):
  fetch    fetch + preprocess of the batch (read, decode, resize, normalise, stack), measured
           inside the loader in whichever process or thread built it, and carried with the batch;
  stall    how long the training loop waited for the batch: the wall time of next(iterator).
           With num_workers 0 the batch is built inside next(), so stall = fetch (+ the loader's
           own overhead); with workers it is what pipelining did not hide, about
           max(fetch / workers - compute, 0) per batch once the pipeline is full (docs/architecture.md §5).
           The first batch of an epoch also waits for the workers to start;
  compute  forward, loss, backward and the optimizer step, ending when the loss is on the host
           (which synchronises a GPU);
  e2e      stall + compute + the loop's own bookkeeping for that batch.
Per epoch: the training window (first next() to last step), the test window, mean training loss
and accuracy over the batches, test loss and accuracy on the held-out split, and the dataset's
page-cache residency just before the epoch (mincore over every dataset file).

A loss that becomes NaN or infinite ends training at once: that batch, the epoch so far and a
`diverged` record are written and the worker exits normally, so the run is stored with status
diverged and its history (the DLaaS study's NaN rows), not as a crash.
"""

from __future__ import annotations

import math
import time
from typing import Any

from edgestats.collectors.core.runconfig import RunConfig
from edgestats.collectors.core.spool import SpoolWriter
from edgestats.collectors.training import pagecache
from edgestats.collectors.training.datasets import Dataset, open_dataset
from edgestats.collectors.zoo.catalog import zoo_model
from edgestats.registry.runtimes import runtime

TRAINERS = {
    "pytorch": "edgestats.collectors.training.torch_loop",
    "tensorflow": "edgestats.collectors.training.tf_loop",
}


def trainer_for(config: RunConfig, adapter: Any, dataset: Dataset) -> Any:
    import importlib

    module = importlib.import_module(TRAINERS[config.framework])
    return module.Trainer(config, adapter, dataset)


def load_dataset(config: RunConfig, spool: SpoolWriter) -> Dataset:
    assert config.data, "a training run needs config.data"
    dataset = open_dataset(config.data)
    storage = pagecache.storage_of(dataset.root)
    spool.write("dataset", **dataset.describe(), storage=storage)
    if config.evict_cache:
        pagecache.evict(dataset.files)
    return dataset


def run_training(config: RunConfig, spool: SpoolWriter, clock: Any) -> None:
    """Walk the training phases; `clock` is the worker's PhaseClock."""
    total_start = time.monotonic_ns()
    adapter = runtime(config.framework).adapter_class()(config, None)
    spool.write("adapter", runtime=adapter.runtime)
    spool.write("versions", **clock.run("import", adapter.import_framework))
    dataset = clock.run("load_dataset", lambda: load_dataset(config, spool))
    trainer = trainer_for(config, adapter, dataset)
    spool.write("model", **clock.run("build_model", trainer.build))
    spool.write(
        "hyper",
        optimizer=config.optimizer,
        learning_rate=config.learning_rate,
        momentum=trainer.momentum,
        batch_size=config.batch_size,
        epochs=config.epochs,
        iterations=config.iterations or None,
        num_workers=config.num_workers,
        evict_cache=config.evict_cache,
        seed=config.seed,
        loss="cross-entropy",
        input_shape=list(zoo_model(config.model).input_shape_nchw(1)[1:]),
        num_classes=dataset.num_classes,
        batches_per_epoch=trainer.batches_per_epoch(),
    )
    clock.run("train", lambda: train(config, trainer, dataset, spool))
    spool.write("phase", phase="total", seq=clock.seq, start_ns=total_start, end_ns=time.monotonic_ns())
    spool.write("env", **adapter.environment(), pipeline=trainer.pipeline_notes())


def planned_epochs(config: RunConfig, batches_per_epoch: int) -> int:
    """--epochs, or as many as --iterations needs (both given: whichever ends first)."""
    if config.iterations:
        needed = -(-config.iterations // max(batches_per_epoch, 1))
        return min(needed, config.epochs) if config.epochs else needed
    return config.epochs or 1


def train(config: RunConfig, trainer: Any, dataset: Dataset, spool: SpoolWriter) -> None:
    steps_left = config.iterations or None
    for epoch in range(planned_epochs(config, trainer.batches_per_epoch())):
        resident = pagecache.residency(dataset.files)
        steps, diverged = train_epoch(
            epoch, trainer, spool, steps_left, resident, config.evict_cache and epoch == 0
        )
        if diverged:
            return
        if steps_left is not None:
            steps_left -= steps
            if steps_left <= 0:
                return


def train_epoch(
    epoch: int,
    trainer: Any,
    spool: SpoolWriter,
    steps_left: int | None,
    resident: float | None,
    evicted: bool,
) -> tuple[int, bool]:
    """One epoch's training batches and its test pass; (steps taken, diverged?)."""
    perf, monotonic, write = time.perf_counter_ns, time.monotonic_ns, spool.write
    loss_sum = correct_sum = seen = steps = 0
    diverged = None
    train_start = monotonic()
    batches = trainer.train_batches(epoch)
    while steps_left is None or steps < steps_left:
        started = monotonic()
        t0 = perf()
        try:
            x, y, fetch_ns = next(batches)
        except StopIteration:
            break
        t1 = perf()
        loss, correct, n = trainer.step(x, y)
        t2 = perf()
        write(
            "batch", e=epoch, b=steps, s=started, f=fetch_ns, st=t1 - t0, c=t2 - t1, e2e=t2 - t0, n=n, l=loss
        )
        steps += 1
        loss_sum, correct_sum, seen = loss_sum + loss * n, correct_sum + correct, seen + n
        if not math.isfinite(loss):
            diverged = {"epoch": epoch, "batch": steps - 1, "loss": loss}
            break
    trainer.end_epoch(batches)
    train_end = monotonic()
    record = {
        "epoch": epoch,
        "train_start_ns": train_start,
        "train_end_ns": train_end,
        "n_batches": steps,
        "train_loss": loss_sum / seen if seen else None,
        "train_accuracy_pct": 100.0 * correct_sum / seen if seen else None,
        "cache_resident_pct": None if resident is None else 100.0 * resident,
        "cache_evicted": evicted,
    }
    if diverged is None:
        record["test_start_ns"] = monotonic()
        record["test_loss"], record["test_accuracy_pct"] = trainer.evaluate()
        record["test_end_ns"] = monotonic()
    write("epoch", **record)
    if diverged is not None:
        write("diverged", **diverged)
    return steps, diverged is not None
