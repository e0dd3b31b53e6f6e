"""One run's configuration: what the orchestrator plans, the worker executes and the store records.

Plain data (JSON-serialisable) so it crosses the process boundary unchanged. Its hash is what a
resumed sweep matches on: the same configuration and repeat index is the same run.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import asdict, dataclass, field, fields
from typing import Any

KINDS = ("inference", "training", "generation")
TRAINING_FRAMEWORKS = ("pytorch", "tensorflow")
OPTIMIZERS = ("sgd", "adam")  # sgd: with momentum 0.9 (the DLaaS study's SGD runs)
PRECISIONS = ("fp32", "fp16", "int8")
ACCELERATORS = ("cpu", "cuda")


@dataclass(frozen=True)
class RunConfig:
    framework: str
    model: str  # a zoo name, or the path of a model file
    runtime: str | None = None  # None: the framework's default runtime
    batch_size: int = 1
    threads: int | None = None  # intra-op threads; None: the framework's default
    precision: str = "fp32"
    accelerator: str = "cpu"
    iterations: int = 100  # steady-state inferences
    # inferences before steady state, stored and marked: a count, or "auto:MAX" (--warmup auto:
    # until a steady state is detected, at most MAX; collectors/steady_state.py)
    warmup: int | str = 5
    input: str | None = None  # an image file, decoded and resized; None: synthetic
    seed: int = 0  # model weights and synthetic input
    repeat_index: int = 0  # k of --repeat K: the same configuration, a fresh process
    extra: dict[str, Any] = field(default_factory=dict)  # options an adapter understands
    # training (kind "training"); for training, iterations caps the optimizer steps (0: no cap)
    # and warmup is unused. Fields added after inference runs were first stored are left out of
    # the hash while they hold their default (see NEW_FIELD_DEFAULTS), so stored inference sweeps
    # still resume.
    kind: str = "inference"
    data: str | None = None  # the dataset directory (--data)
    epochs: int | None = None
    learning_rate: float | None = None
    optimizer: str | None = None  # sgd (momentum 0.9) | adam
    num_workers: int | None = None  # DataLoader workers / tf.data parallel calls; 0: no pipelining
    evict_cache: bool = False  # drop the dataset from the page cache before the first epoch
    # generation (kind "generation", docs/generation.md): the measured prompt's tokens, the tokens
    # generated (exactly, greedy), and the tokens already in the KV cache before the prompt; warmup
    # counts warm-up generations of the same shapes, and iterations is unused (0)
    prompt_tokens: int | None = None
    new_tokens: int | None = None
    context_depth: int | None = None

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RunConfig:
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known})

    def config_hash(self) -> str:
        """Identity of the run for resuming: every field, repeat index included; a field added
        since the first release counts only when it differs from its default, so the hash of an
        inference configuration is what it was when its runs were stored."""
        data = {
            k: v
            for k, v in asdict(self).items()
            if not (k in NEW_FIELD_DEFAULTS and v == NEW_FIELD_DEFAULTS[k])
        }
        return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()[:32]

    def label(self) -> str:
        runtime = f"/{self.runtime}" if self.runtime else ""
        threads = f" t{self.threads}" if self.threads else ""
        if self.kind == "training":
            length = f" e{self.epochs}" if self.epochs else ""
            length += f" i{self.iterations}" if self.iterations else ""
            lr = f" lr{self.learning_rate:g}" if self.learning_rate is not None else ""
            return (
                f"train {self.framework} {self.model} b{self.batch_size}{threads} "
                f"{self.optimizer or 'sgd'}{lr}"
                f"{length} w{self.num_workers or 0}{' cold' if self.evict_cache else ''} #{self.repeat_index}"
            )
        if self.kind == "generation":
            depth = f" d{self.context_depth}" if self.context_depth else ""
            return (
                f"gen {self.framework}{runtime} {self.model} b{self.batch_size}{threads} {self.precision} "
                f"p{self.prompt_tokens} n{self.new_tokens}{depth} #{self.repeat_index}"
            )
        return (
            f"{self.framework}{runtime} {self.model} b{self.batch_size}{threads} "
            f"{self.precision} #{self.repeat_index}"
        )


WARMUP_AUTO = "auto"
WARMUP_AUTO_LIMIT = 1000  # `--warmup auto`'s most warm-up inferences; auto:MAX sets another


def parse_warmup(value: int | str) -> int | str:
    """A warm-up setting as a sweep or --warmup gives it: a count (an int, or its digits), "auto" or
    "auto:MAX", returned as the count or as "auto:MAX" (auto's limit spelled out, so the stored
    configuration and its hash say it). Raises ValueError with what is wrong."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if not isinstance(value, str):
        raise ValueError(f'expected a count or "auto", got {type(value).__name__} {value!r}')
    text = value.strip().lower()
    if re.fullmatch(r"[+-]?[0-9]+", text):
        return int(text)
    name, _, limit = text.partition(":")
    if name != WARMUP_AUTO:
        raise ValueError(
            f'{value!r}: give a count of warm-up inferences, "auto" or "auto:MAX" (e.g. auto:500)'
        )
    if not limit:
        return f"{WARMUP_AUTO}:{WARMUP_AUTO_LIMIT}"
    if not re.fullmatch(r"[0-9]+", limit) or not 1 <= int(limit) <= 2**31 - 1:
        raise ValueError(
            f"{value!r}: auto's limit MAX must be a whole number of inferences from 1 to 2147483647"
        )
    return f"{WARMUP_AUTO}:{int(limit)}"


def auto_warmup_limit(warmup: int | str) -> int | None:
    """The most warm-up inferences of an "auto:MAX" warm-up; None for a fixed count."""
    if isinstance(warmup, str) and warmup.startswith(WARMUP_AUTO + ":"):
        return int(warmup.partition(":")[2])
    return None


# Fields added after the first release, with their defaults: left out of config_hash() while at
# the default. Never remove an entry, and give every new field one.
NEW_FIELD_DEFAULTS: dict[str, Any] = {
    "kind": "inference",
    "data": None,
    "epochs": None,
    "learning_rate": None,
    "optimizer": None,
    "num_workers": None,
    "evict_cache": False,
    "prompt_tokens": None,
    "new_tokens": None,
    "context_depth": None,
}
