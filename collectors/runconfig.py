"""One run's configuration: what the orchestrator plans, the worker executes and the store records.

Plain data (JSON-serialisable) so it crosses the process boundary unchanged. Its hash is what a
resumed sweep matches on: the same configuration and repeat index is the same run.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field, fields
from typing import Any

FRAMEWORKS = ("pytorch", "tensorflow", "tflite", "onnxruntime")
PRECISIONS = ("fp32", "fp16", "int8")
ACCELERATORS = ("cpu", "cuda")


@dataclass(frozen=True)
class RunConfig:
    framework: str
    model: str                       # a zoo name, or the path of a model file
    runtime: str | None = None       # None: the framework's default runtime
    batch_size: int = 1
    threads: int | None = None       # intra-op threads; None: the framework's default
    precision: str = "fp32"
    accelerator: str = "cpu"
    iterations: int = 100            # steady-state inferences
    warmup: int = 5                  # inferences before steady state, stored and marked
    input: str | None = None         # an image file, decoded and resized; None: synthetic
    seed: int = 0                    # model weights and synthetic input
    repeat_index: int = 0            # k of --repeat K: the same configuration, a fresh process
    extra: dict[str, Any] = field(default_factory=dict)  # options an adapter understands

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "RunConfig":
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known})

    def config_hash(self) -> str:
        """Identity of the run for resuming: every field, repeat index included."""
        return hashlib.sha256(self.to_json().encode()).hexdigest()[:32]

    def label(self) -> str:
        runtime = f"/{self.runtime}" if self.runtime else ""
        threads = f" t{self.threads}" if self.threads else ""
        return f"{self.framework}{runtime} {self.model} b{self.batch_size}{threads} {self.precision} #{self.repeat_index}"
