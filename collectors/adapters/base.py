"""The interface every framework adapter implements, and the name -> "module:Class" registry.

The worker drives an adapter through pCAMP's phases (Table 3), timing each call itself:

    import_framework()  -> load_model()  -> load_input()  -> infer(x) ...

An adapter module is imported only when its framework is used, so `edgestats --help` or a
run under one framework never imports another. `prepare()` runs before the measured worker,
in a separate process, and turns a zoo model into the file the worker loads (TorchScript,
.keras, .tflite, .onnx), cached by configuration; the worker's load_model phase then
measures loading a model file, as a deployed application would.
"""

from __future__ import annotations

import importlib
import importlib.util
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from edgestats.collectors.runconfig import RunConfig

# framework name -> "module:Class". Runtime variants (torchscript, tf-eager) are options of an
# adapter, not adapters of their own.
REGISTRY: dict[str, str] = {
    "pytorch": "edgestats.collectors.adapters.pytorch:PyTorchAdapter",
    "tensorflow": "edgestats.collectors.adapters.tensorflow:TensorFlowAdapter",
    "tflite": "edgestats.collectors.adapters.tflite:TFLiteAdapter",
    "onnxruntime": "edgestats.collectors.adapters.onnxruntime:OnnxRuntimeAdapter",
}


@dataclass
class ModelInfo:
    """What load_model learned about the model; stored on the run."""

    params: int | None = None        # trainable parameters
    flops: int | None = None         # FLOPs per inference of one sample, where computable
    input_shape: tuple[int, ...] | None = None  # one sample, framework layout
    file: str | None = None          # the model file loaded
    file_bytes: int | None = None


class Adapter:
    """Base class. Subclasses set `framework`, `runtimes` and implement the phase methods."""

    framework: str = ""
    runtimes: tuple[str, ...] = ()   # the first is the default
    modules: tuple[str, ...] = ()    # what must be importable for is_available()

    def __init__(self, config: RunConfig, artifact: Path | None = None):
        self.config = config
        self.artifact = artifact     # the file prepare() made, or the user's model file
        self.runtime = config.runtime or self.runtimes[0]

    # -- availability, without importing the framework ------------------------------------------

    @classmethod
    def is_available(cls) -> tuple[bool, str | None]:
        """(True, None) or (False, why not and what to install). Cheap: finds, does not import."""
        for module in cls.modules:
            if importlib.util.find_spec(module.split(".")[0]) is None:
                return False, f"Python module {module!r} is not installed: pip install 'edgestats[{cls.extra()}]'"
        return True, None

    @classmethod
    def extra(cls) -> str:
        return cls.framework

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

    def load_input(self) -> Any:
        """One batch as the framework's input type (decoded + resized image, or synthetic)."""
        raise NotImplementedError

    def infer(self, batch: Any) -> Any:
        """One inference, finished (GPU work synchronised) before it returns."""
        raise NotImplementedError

    def environment(self) -> dict[str, Any]:
        """Math library, thread settings, devices: stored in runs.environment."""
        return {}


def adapter_class(framework: str) -> type[Adapter]:
    """Import the adapter module for a framework name (lazily) and return its class."""
    if framework not in REGISTRY:
        raise KeyError(framework)
    module_name, class_name = REGISTRY[framework].split(":")
    return getattr(importlib.import_module(module_name), class_name)
