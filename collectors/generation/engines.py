"""Which engine runs generation for each framework: "module:Class", imported only when used."""

from __future__ import annotations

import importlib
from typing import Any

from edgestats.collectors.core.runconfig import RunConfig
from edgestats.collectors.generation.engine import GenerationEngine
from edgestats.registry.runtimes import runtime

ENGINES: dict[str, str] = {
    "pytorch": "edgestats.collectors.generation.torch_engine:TorchEngine",
    "onnxruntime": "edgestats.collectors.generation.onnx_engine:OnnxEngine",
    "llamacpp": "edgestats.collectors.generation.llamacpp_engine:LlamaCppEngine",
    "executorch": "edgestats.collectors.generation.executorch_engine:ExecuTorchEngine",
}


def generation_frameworks() -> tuple[str, ...]:
    return tuple(ENGINES)


def builder_class(config: RunConfig) -> Any:
    """The class whose prepare() / prepare_needs() build `config`'s model file: the generation
    engine for kind "generation", else the inference adapter."""
    if config.kind == "generation":
        return engine_class(config.framework)
    return runtime(config.framework).adapter_class()


def needs_prepare(config: RunConfig) -> bool:
    """Whether a run of `config` has a model file built before it (training and the engines that
    build their model in load_model have none)."""
    if config.kind == "training":
        return False
    return config.kind != "generation" or engine_class(config.framework).builds_file


def engine_class(framework: str) -> type[GenerationEngine]:
    if framework not in ENGINES:
        raise KeyError(
            f"{framework} does not run generation; use one of {', '.join(generation_frameworks())}"
        )
    module, _, name = ENGINES[framework].partition(":")
    return getattr(importlib.import_module(module), name)
