"""The interface every framework adapter implements.

The worker drives an adapter through pCAMP's phases (Table 3), timing each call itself:

    import_framework()  -> load_model()  -> load_input()  -> infer(x) ...

An adapter module is imported only when its framework is used, so `edgestats --help` or a
run under one framework never imports another. `prepare()` runs before the measured worker,
in a separate process, and turns a zoo model into the file the worker loads (TorchScript,
.keras, .tflite, .onnx), cached by configuration; the worker's load_model phase then
measures loading a model file, as a deployed application would.

Which adapter serves a `--framework` name, which modules it needs and what installs them are
facts of its entry in `edgestats.registry.runtimes` (docs/architecture.md §7), typed once there.
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from edgestats.collectors.core.runconfig import RunConfig
from edgestats.registry import names_text
from edgestats.registry.runtimes import runtime


@dataclass
class ModelInfo:
    """What load_model learned about the model; stored on the run."""

    params: int | None = None  # trainable parameters
    flops: int | None = None  # FLOPs per inference of one sample, where computable
    input_shape: tuple[int, ...] | None = None  # one sample, framework layout
    file: str | None = None  # the model file loaded
    file_bytes: int | None = None


class Adapter:
    """Base class. Subclasses set `framework` (their registry name), `runtimes` and implement the
    phase methods. Runtime variants (torchscript, tf-eager) are options of an adapter, not
    adapters of their own."""

    framework: str = ""
    runtimes: tuple[str, ...] = ()  # the first is the default
    # RunConfig fields, beyond prepare.ARTIFACT_FIELDS, that the prepared model file depends on:
    # ("batch_size",) for a runtime whose file fixes the batch (ExecuTorch's static shapes)
    artifact_fields: tuple[str, ...] = ()

    def __init__(self, config: RunConfig, artifact: Path | None = None):
        self.config = config
        self.artifact = artifact  # the file prepare() made, or the user's model file
        self.runtime = config.runtime or self.runtimes[0]

    # -- availability, without importing the framework ------------------------------------------

    @classmethod
    def is_available(cls) -> tuple[bool, str | None]:
        """(True, None) or (False, why not and what to install). Cheap: finds, does not import.

        Available when any of the entry's modules is installed (they are alternatives, e.g.
        LiteRT, tflite_runtime or TensorFlow for tflite). Top-level packages only: finding
        `ai_edge_litert.interpreter` would import its package."""
        entry = runtime(cls.framework)
        packages = list(dict.fromkeys(module.split(".")[0] for module in entry.imports))
        if any(importlib.util.find_spec(package) is not None for package in packages):
            return True, None
        if len(packages) == 1:
            return False, f"Python module {packages[0]!r} is not installed: {entry.install_hint}"
        return False, (
            f"{entry.title}: none of the Python modules {names_text(packages)} is installed: "
            f"{entry.install_hint}"
        )

    @classmethod
    def check_config(cls, config: RunConfig) -> str | None:
        """Why this configuration cannot run with this adapter (unknown runtime, precision), or None."""
        if config.runtime and config.runtime not in cls.runtimes:
            return f"{cls.framework} has no runtime {config.runtime!r}; use one of {', '.join(cls.runtimes)}"
        return None

    # -- before the measured run (separate process) ---------------------------------------------

    @classmethod
    def prepare(cls, config: RunConfig, cache_dir: Path) -> Path | None:
        """Make the model file the worker will load; return its path (None: built in load_model)."""
        return None

    # -- the measured phases (in the worker) ----------------------------------------------------

    def import_framework(self) -> dict[str, str]:
        """Import the framework; return {library: version} for the run's environment."""
        raise NotImplementedError

    def load_model(self) -> ModelInfo:
        raise NotImplementedError

    @classmethod
    def prepare_needs(cls, config: RunConfig) -> tuple[str, ...]:
        """The modules prepare() imports to build this configuration's model file (a zoo model's
        export or conversion): a device without them runs the configuration only from a model
        pack (`edgestats prepare`) or its cache. Empty when nothing needs building."""
        return ()

    # A runtime that compiles the model on its first call (torch.compile) sets `compiles` and
    # implements compile(): the worker then runs a `compile` phase between load_model and the
    # first input, so compile time is a phase of its own, not part of first_inference.
    compiles: bool = False

    def compile(self) -> None:
        """Compile the loaded model for the run's batch shape (only where `compiles`)."""

    def load_input(self) -> Any:
        """One batch as the framework's input type (decoded + resized image, or synthetic)."""
        raise NotImplementedError

    def infer(self, batch: Any) -> Any:
        """One inference, finished (GPU work synchronised) before it returns."""
        raise NotImplementedError

    def environment(self) -> dict[str, Any]:
        """Math library, thread settings, devices: stored in runs.environment."""
        return {}
