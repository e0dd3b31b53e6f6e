"""Training under TensorFlow 2 / Keras 3: the zoo model trained from scratch, fed by a tf.data
pipeline. The model is zoo.keras_models' (seeded), its train step a tf.function (GradientTape; SGD
with momentum 0.9 or Adam; cross-entropy); the pipeline is the batch indices of the epoch, mapped by
a numpy_function that reads, decodes, resizes and stacks one batch and times itself.

num_workers is tf.data's equivalent of DataLoader workers: the map runs with num_parallel_calls
= num_workers and the pipeline prefetches 2 * num_workers batches (DataLoader's prefetch_factor
2 per worker). num_workers 0 is a sequential map with no prefetch, autotuning and prefetch
injection off, so each batch is built inside next(), as with a DataLoader of 0 workers. The map
runs Python (Pillow), so its threads share the GIL; Pillow's decode and resize release it.

The first step of the first epoch includes tracing the train step into a graph (its compute
time shows it). Imported by the worker after the framework's import phase.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import tensorflow as tf

from edgestats.collectors.core.runconfig import RunConfig
from edgestats.collectors.training.datasets import Dataset, Split
from edgestats.collectors.training.preprocess import Preprocess, timed_batch
from edgestats.collectors.zoo.catalog import zoo_model

MOMENTUM = 0.9


class Trainer:
    def __init__(self, config: RunConfig, adapter: Any, dataset: Dataset):
        self.config, self.dataset, self.keras = config, dataset, adapter.keras
        spec = zoo_model(config.model)
        self.spec = spec
        self.preprocess = Preprocess(spec.input_hw, spec.channels, "NHWC")
        self.workers = int(config.num_workers or 0)
        self.rng = np.random.default_rng(config.seed)  # the order of samples, per epoch
        self.momentum = MOMENTUM if config.optimizer != "adam" else None

    def build(self) -> dict[str, Any]:
        from edgestats.collectors.zoo.keras_models import build_keras, count_params_keras

        keras = self.keras
        keras.utils.set_random_seed(self.config.seed)  # dropout masks
        self.model = build_keras(
            self.config.model, seed=self.config.seed, num_classes=self.dataset.num_classes
        )
        lr = float(self.config.learning_rate)
        if self.config.optimizer == "adam":
            self.optimizer = keras.optimizers.Adam(learning_rate=lr)
        else:
            self.optimizer = keras.optimizers.SGD(learning_rate=lr, momentum=MOMENTUM)
        self.loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
        x_spec = tf.TensorSpec((None, *self.spec.input_shape_nhwc(1)[1:]), tf.float32)
        y_spec = tf.TensorSpec((None,), tf.int64)
        self._step = tf.function(self._train_step, input_signature=[x_spec, y_spec])
        self._eval = tf.function(self._eval_step, input_signature=[x_spec, y_spec])
        return {
            "params": count_params_keras(self.model),
            "input_shape": list(self.spec.input_shape_nhwc(1)[1:]),
            "num_classes": self.dataset.num_classes,
        }

    def _train_step(self, x: tf.Tensor, y: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
        with tf.GradientTape() as tape:
            logits = self.model(x, training=True)
            loss = self.loss_fn(y, logits)
        variables = self.model.trainable_variables
        self.optimizer.apply_gradients(zip(tape.gradient(loss, variables), variables))
        return loss, _correct(logits, y)

    def _eval_step(self, x: tf.Tensor, y: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
        logits = self.model(x, training=False)
        return self.loss_fn(y, logits), _correct(logits, y)

    def batches_per_epoch(self) -> int:
        return -(-self.dataset.train.n // self.config.batch_size)

    def _pipeline(self, split: Split, order: np.ndarray) -> tf.data.Dataset:
        size = self.config.batch_size
        chunks = [order[i : i + size] for i in range(0, len(order), size)]
        preprocess, shape = self.preprocess, self.spec.input_shape_nhwc(1)[1:]

        def load(k: Any) -> tuple[np.ndarray, np.ndarray, np.int64]:
            x, y, fetch_ns = timed_batch(split, chunks[int(k)], preprocess)
            return x, y, np.int64(fetch_ns)

        def mapped(k: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor, tf.Tensor]:
            x, y, fetch_ns = tf.numpy_function(load, [k], (tf.float32, tf.int64, tf.int64), stateful=False)
            return tf.ensure_shape(x, (None, *shape)), tf.ensure_shape(y, (None,)), fetch_ns

        options = tf.data.Options()
        if self.workers:
            data = tf.data.Dataset.range(len(chunks)).map(
                mapped, num_parallel_calls=self.workers, deterministic=True
            )
            data = data.prefetch(2 * self.workers)
        else:
            data = tf.data.Dataset.range(len(chunks)).map(mapped)
            options.autotune.enabled = False
            options.experimental_optimization.inject_prefetch = False
        return data.with_options(options)

    def train_batches(self, epoch: int) -> Iterator[Any]:
        order = self.rng.permutation(self.dataset.train.n)
        return ((x, y, int(f)) for x, y, f in self._pipeline(self.dataset.train, order))

    def end_epoch(self, batches: Iterator[Any]) -> None:
        close = getattr(batches, "close", None)
        if close:
            close()

    def step(self, x: tf.Tensor, y: tf.Tensor) -> tuple[float, int, int]:
        loss, correct = self._step(x, y)
        return float(loss.numpy()), int(correct.numpy()), int(y.shape[0])  # .numpy() waits for the result

    def evaluate(self) -> tuple[float, float]:
        loss_sum, correct, seen = 0.0, 0, 0
        for x, y, _ in self._pipeline(self.dataset.test, np.arange(self.dataset.test.n)):
            loss, right = self._eval(x, y)
            n = int(y.shape[0])
            loss_sum, correct, seen = (
                loss_sum + float(loss.numpy()) * n,
                correct + int(right.numpy()),
                seen + n,
            )
        return loss_sum / seen, 100.0 * correct / seen

    def pipeline_notes(self) -> dict[str, Any]:
        return {
            "loader": "tf.data: range -> map(numpy_function) -> prefetch",
            "num_parallel_calls": self.workers or None,
            "prefetch_batches": 2 * self.workers if self.workers else 0,
            "autotune": bool(self.workers),
            "preprocess": "decode (Pillow), convert, resize bilinear, scale to [-1, 1]",
        }


def _correct(logits: tf.Tensor, y: tf.Tensor) -> tf.Tensor:
    return tf.reduce_sum(tf.cast(tf.equal(tf.argmax(logits, axis=1), y), tf.int32))
