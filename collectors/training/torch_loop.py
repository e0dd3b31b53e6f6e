"""Training under PyTorch: the zoo model trained from scratch, fed by a DataLoader of num_workers
processes. The model is zoo.torch_models' (seeded), the loader a torch.utils.data.DataLoader (0
workers: batches are built inside next(), no pipelining); SGD with momentum 0.9 or Adam,
cross-entropy loss.

The DataLoader gets whole batches from a batch sampler (batch_size=None), so one __getitem__
call reads, decodes, resizes and stacks a batch and times itself: its fetch time travels back
with the batch, across the worker-process boundary. Workers are started per epoch
(persistent_workers=False, PyTorch's default), as in the Jetson study, and each keeps
prefetch_factor (2) batches in flight. Imported by the worker after the framework's import phase.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import torch
from torch.utils.data import BatchSampler, DataLoader, RandomSampler, SequentialSampler

from edgestats.collectors.core.runconfig import RunConfig
from edgestats.collectors.training.datasets import Dataset, Split
from edgestats.collectors.training.preprocess import Preprocess, timed_batch
from edgestats.collectors.zoo.catalog import zoo_model
from edgestats.collectors.zoo.torch_models import build_torch, count_flops, count_params

MOMENTUM = 0.9


class BatchDataset(torch.utils.data.Dataset):
    """dataset[list of sample indices] -> (x float32 NCHW, y int64, fetch + preprocess ns)."""

    def __init__(self, split: Split, preprocess: Preprocess):
        self.split, self.preprocess = split, preprocess

    def __len__(self) -> int:
        return self.split.n

    def __getitem__(self, indices: list[int]) -> tuple[torch.Tensor, torch.Tensor, int]:
        x, y, fetch_ns = timed_batch(self.split, indices, self.preprocess)
        return torch.from_numpy(x), torch.from_numpy(y), fetch_ns


class Trainer:
    def __init__(self, config: RunConfig, adapter: Any, dataset: Dataset):
        self.config, self.dataset = config, dataset
        self.momentum = MOMENTUM if config.optimizer != "adam" else None
        self.device = adapter.device
        spec = zoo_model(config.model)
        self.spec = spec
        self.preprocess = Preprocess(spec.input_hw, spec.channels, "NCHW")
        self.workers = int(config.num_workers or 0)
        self.generator = torch.Generator().manual_seed(config.seed)  # the order of samples, per epoch

    def build(self) -> dict[str, Any]:
        torch.manual_seed(self.config.seed)
        model = build_torch(self.config.model, seed=self.config.seed, num_classes=self.dataset.num_classes)
        info = {
            "params": count_params(model),
            "flops": count_flops(model, self.spec.input_shape_nchw(1)),
            "input_shape": list(self.spec.input_shape_nchw(1)[1:]),
            "num_classes": self.dataset.num_classes,
        }
        self.model = model.to(self.device).train()
        params = self.model.parameters()
        lr = float(self.config.learning_rate)
        if self.config.optimizer == "adam":
            self.optimizer = torch.optim.Adam(params, lr=lr)
        else:
            self.optimizer = torch.optim.SGD(params, lr=lr, momentum=MOMENTUM)
        self.loss_fn = torch.nn.CrossEntropyLoss()
        self.train_set = BatchDataset(self.dataset.train, self.preprocess)
        self.test_set = BatchDataset(self.dataset.test, self.preprocess)
        return info

    def batches_per_epoch(self) -> int:
        return -(-self.dataset.train.n // self.config.batch_size)

    def _loader(self, data: BatchDataset, shuffle: bool) -> DataLoader:
        order = RandomSampler(data, generator=self.generator) if shuffle else SequentialSampler(data)
        return DataLoader(
            data,
            batch_size=None,
            sampler=BatchSampler(order, self.config.batch_size, drop_last=False),
            num_workers=self.workers,
            pin_memory=self.device.type == "cuda",
        )

    def train_batches(self, epoch: int) -> Iterator[Any]:
        self.model.train()
        return iter(self._loader(self.train_set, shuffle=True))

    def end_epoch(self, batches: Iterator[Any]) -> None:
        shutdown = getattr(batches, "_shutdown_workers", None)  # an --iterations cap may stop mid-epoch
        if shutdown:
            shutdown()

    def step(self, x: torch.Tensor, y: torch.Tensor) -> tuple[float, int, int]:
        """One optimizer step; returns (loss, correct predictions, samples) once the work is done."""
        x, y = x.to(self.device, non_blocking=True), y.to(self.device, non_blocking=True)
        self.optimizer.zero_grad(set_to_none=True)
        logits = self.model(x)
        loss = self.loss_fn(logits, y)
        loss.backward()
        self.optimizer.step()
        correct = (logits.detach().argmax(1) == y).sum()
        return float(loss.item()), int(correct.item()), int(y.shape[0])  # .item() waits for a GPU

    def evaluate(self) -> tuple[float, float]:
        """(mean loss, accuracy %) on the held-out split."""
        self.model.eval()
        loss_sum, correct, seen = 0.0, 0, 0
        with torch.inference_mode():
            for x, y, _ in self._loader(self.test_set, shuffle=False):
                x, y = x.to(self.device), y.to(self.device)
                logits = self.model(x)
                loss_sum += float(self.loss_fn(logits, y).item()) * int(y.shape[0])
                correct += int((logits.argmax(1) == y).sum().item())
                seen += int(y.shape[0])
        self.model.train()
        return loss_sum / seen, 100.0 * correct / seen

    def pipeline_notes(self) -> dict[str, Any]:
        return {
            "loader": "torch.utils.data.DataLoader",
            "num_workers": self.workers,
            "prefetch_factor": 2 if self.workers else None,
            "persistent_workers": False,
            "batch_sampler": "RandomSampler + BatchSampler (whole batches per fetch)",
            "preprocess": "decode (Pillow), convert, resize bilinear, scale to [-1, 1]",
            "multiprocessing_start_method": torch.multiprocessing.get_start_method(allow_none=True),
        }
