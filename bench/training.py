"""bench/training: what edgestats' training bookkeeping costs per batch, against a bare loop.

    python bench/training.py [--framework pytorch] [--model mnist_cnn] [--batch-size 32]
                             [--n 2000] [--pairs 8]

Side by side in one process, on the same generated MNIST-format data (in the page cache), the
same model architecture, seed and optimizer, alternating one epoch of A and one of B:
  A. the harness: training.worker.train_epoch driving the framework's Trainer exactly as a
     collected run does — fetch timed inside the loader, perf_counter around next() and the
     step, loss and accuracy read back every batch, one spool record written and flushed per
     batch (to a file in a temporary directory on the same disk);
  B. a bare loop a user would write: the same DataLoader (PyTorch) or tf.data map (TensorFlow)
     without timing, forward + loss + backward + optimizer step, nothing recorded.
Each pair's figure is the ratio of the training windows (time.monotonic_ns around the epoch's
batches; the test pass is not part of either). The median of the pairs' ratios - 1 is the
overhead. Target: < 2 % per batch. One warm-up pair (graph tracing, allocator) is not counted.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from edgestats.collectors.core.runconfig import RunConfig  # noqa: E402
from edgestats.collectors.core.spool import SpoolWriter  # noqa: E402
from edgestats.collectors.training import datasets  # noqa: E402
from edgestats.collectors.training import synthetic as dataset_make  # noqa: E402
from edgestats.collectors.training.preprocess import load_batch  # noqa: E402
from edgestats.collectors.training.worker import train_epoch, trainer_for  # noqa: E402
from edgestats.registry.runtimes import runtime  # noqa: E402

TARGET = 0.02


def harness_epoch(trainer, epoch: int, spool: SpoolWriter) -> int:
    """A: ns of the training window, as train_epoch records it (evaluate() is outside it)."""
    marks = {}

    class Window:
        """Wraps the spool to catch the epoch record's training window."""

        def write(self, record_type, **fields):
            if record_type == "epoch":
                marks.update(fields)
            spool.write(record_type, **fields)

    evaluate, trainer.evaluate = trainer.evaluate, lambda: (None, None)  # not part of the window; skip it
    try:
        train_epoch(epoch, trainer, Window(), None, None, False)
    finally:
        trainer.evaluate = evaluate
    return marks["train_end_ns"] - marks["train_start_ns"]


def bare_torch(trainer):
    """B for PyTorch: the same model type, optimizer, loader and data, nothing measured."""
    import torch
    from torch.utils.data import BatchSampler, DataLoader, RandomSampler

    class Plain(torch.utils.data.Dataset):
        def __init__(self, split, preprocess):
            self.split, self.preprocess = split, preprocess

        def __len__(self):
            return self.split.n

        def __getitem__(self, indices):
            x, y = load_batch(self.split, indices, self.preprocess)
            return torch.from_numpy(x), torch.from_numpy(y)

    data = Plain(trainer.dataset.train, trainer.preprocess)
    model, optimizer, loss_fn = trainer.model, trainer.optimizer, trainer.loss_fn
    generator = torch.Generator().manual_seed(1)

    def epoch() -> int:
        loader = DataLoader(
            data,
            batch_size=None,
            num_workers=trainer.workers,
            sampler=BatchSampler(RandomSampler(data, generator=generator), trainer.config.batch_size, False),
        )
        model.train()
        t0 = time.monotonic_ns()
        for x, y in loader:
            optimizer.zero_grad(set_to_none=True)
            loss = loss_fn(model(x), y)
            loss.backward()
            optimizer.step()
        return time.monotonic_ns() - t0

    return epoch


def bare_tensorflow(trainer):
    """B for TensorFlow: the same tf.function step over the same tf.data map, no read-backs
    per batch; the last loss is read at the end so the work has finished."""
    import numpy as np
    import tensorflow as tf

    split, preprocess, shape = trainer.dataset.train, trainer.preprocess, trainer.spec.input_shape_nhwc(1)[1:]
    size = trainer.config.batch_size
    rng = np.random.default_rng(1)

    def epoch() -> int:
        order = rng.permutation(split.n)
        chunks = [order[i : i + size] for i in range(0, len(order), size)]

        def load(k):
            return load_batch(split, chunks[int(k)], preprocess)

        def mapped(k):
            x, y = tf.numpy_function(load, [k], (tf.float32, tf.int64), stateful=False)
            return tf.ensure_shape(x, (None, *shape)), tf.ensure_shape(y, (None,))

        # num_workers 0 as the harness runs it: no prefetch injected, no autotuning (tf.data's
        # defaults would overlap fetch and compute in B only)
        options = tf.data.Options()
        options.autotune.enabled = False
        options.experimental_optimization.inject_prefetch = False
        data = tf.data.Dataset.range(len(chunks)).map(mapped).with_options(options)
        t0 = time.monotonic_ns()
        loss = None
        for x, y in data:
            loss, _ = trainer._step(x, y)
        float(loss.numpy())
        return time.monotonic_ns() - t0

    return epoch


def make_trainer(framework: str, model: str, batch_size: int, data: Path, threads: int | None):
    config = RunConfig(
        framework,
        model,
        kind="training",
        data=str(data),
        batch_size=batch_size,
        epochs=1,
        iterations=0,
        learning_rate=0.01,
        optimizer="sgd",
        num_workers=0,
        threads=threads,
    )
    adapter = runtime(framework).adapter_class()(config, None)
    adapter.import_framework()
    trainer = trainer_for(config, adapter, datasets.open_dataset(data))
    trainer.build()
    return trainer


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--framework", default="pytorch", choices=("pytorch", "tensorflow"))
    parser.add_argument("--model", default="mnist_cnn")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument(
        "--n", type=int, default=2000, help="training samples of the generated MNIST-format set"
    )
    parser.add_argument("--pairs", type=int, default=8)
    parser.add_argument(
        "--threads", type=int, default=None, help="intra-op threads (default: the framework's)"
    )
    args = parser.parse_args(argv)
    print(f"load average at start: {os.getloadavg()[0]:.2f}")
    with tempfile.TemporaryDirectory(prefix="edgestats-bench-training-") as tmp:
        tmp = Path(tmp)
        dataset_make.make_dataset("mnist", tmp / "mnist", args.n, n_test=10)
        harness = make_trainer(args.framework, args.model, args.batch_size, tmp / "mnist", args.threads)
        bare = make_trainer(args.framework, args.model, args.batch_size, tmp / "mnist", args.threads)
        bare_epoch = (bare_torch if args.framework == "pytorch" else bare_tensorflow)(bare)
        spool = SpoolWriter(tmp / "spool.jsonl")
        n_batches = harness.batches_per_epoch()
        harness_epoch(harness, 0, spool), bare_epoch()  # warm-up pair
        ratios, a_s, b_s = [], [], []
        for k in range(args.pairs):
            if k % 2:  # alternate which goes first, so drift does not favour one side
                b = bare_epoch()
                a = harness_epoch(harness, k + 1, spool)
            else:
                a = harness_epoch(harness, k + 1, spool)
                b = bare_epoch()
            ratios.append(a / b)
            a_s.append(a / 1e9)
            b_s.append(b / 1e9)
            print(
                f"pair {k + 1}/{args.pairs}: harness {a / 1e6 / n_batches:.3f} ms/batch, "
                f"bare {b / 1e6 / n_batches:.3f} "
                f"ms/batch, ratio {a / b:.4f}"
            )
        spool.close()
        write_us = spool_write_cost_us(tmp / "cost.jsonl")
        loop_us = loop_cost_us(tmp / "loop.jsonl")
    overhead = statistics.median(ratios) - 1
    per_batch_ms = statistics.median(b_s) * 1e3 / n_batches
    print(
        f"\n{args.framework} {args.model}, batch {args.batch_size}, {n_batches} batches/epoch, "
        "num_workers 0, "
        f"Python {platform.python_version()}"
    )
    print(
        f"median bare epoch {statistics.median(b_s):.3f} s ({per_batch_ms:.3f} ms/batch), harness "
        f"{statistics.median(a_s):.3f} s"
    )
    print(
        f"one batch record to the spool (json + write + flush): {write_us:.1f} us = "
        f"{100 * write_us / 1e3 / per_batch_ms:.3f} % of a bare batch"
    )
    print(
        f"the harness loop's own work per batch (train_epoch with a zero-cost trainer): {loop_us:.1f} us = "
        f"{100 * loop_us / 1e3 / per_batch_ms:.3f} % of a bare batch"
    )
    print(
        f"harness overhead per batch: median {100 * overhead:+.2f} % "
        f"(pairs: min {100 * (min(ratios) - 1):+.2f} %, max {100 * (max(ratios) - 1):+.2f} %); "
        f"target < {100 * TARGET:.0f} %: {'MET' if overhead < TARGET else 'NOT MET'}"
    )
    print(f"load average at end: {os.getloadavg()[0]:.2f}")
    return 0 if overhead < TARGET else 1


class ZeroCostTrainer:
    """Batches that already exist and a step that does nothing: what is left of train_epoch is
    the harness's own per-batch work (clocks, loss/accuracy sums, the spool record)."""

    def __init__(self, n: int):
        self.n = n

    def train_batches(self, epoch: int):
        return iter([(0, 0, 812345)] * self.n)

    def step(self, x, y):
        return 0.123456789, 31, 32

    def end_epoch(self, batches) -> None:
        pass

    def evaluate(self):
        return 0.1, 99.0


def loop_cost_us(path: Path, n: int = 20000) -> float:
    spool = SpoolWriter(path)
    t0 = time.perf_counter_ns()
    train_epoch(0, ZeroCostTrainer(n), spool, None, None, False)
    elapsed = time.perf_counter_ns() - t0
    spool.close()
    return elapsed / n / 1e3


def spool_write_cost_us(path: Path, n: int = 20000) -> float:
    """The per-batch record alone: json.dumps + write + flush of a typical batch record."""
    spool = SpoolWriter(path)
    t0 = time.perf_counter_ns()
    for i in range(n):
        spool.write(
            "batch",
            e=1,
            b=i,
            s=123456789012345,
            f=812345,
            st=912345,
            c=11234567,
            e2e=12146912,
            n=32,
            l=0.123456789,
        )
    elapsed = time.perf_counter_ns() - t0
    spool.close()
    return elapsed / n / 1e3


if __name__ == "__main__":
    sys.exit(main())
