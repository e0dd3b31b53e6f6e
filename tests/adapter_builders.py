"""Driving a framework adapter in-process through the worker's phases (importable from tests)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from edgestats.collectors.adapters.base import Adapter
from edgestats.collectors.core.runconfig import RunConfig
from edgestats.registry import runtimes as runtime_registry

CNN9_PARAMS = 75_907


def adapter_class(framework: str) -> type[Adapter]:
    return runtime_registry.runtime(framework).adapter_class()


def config(framework: str, runtime: str | None = None, **kw) -> RunConfig:
    return RunConfig(
        framework=framework,
        model=kw.pop("model", "cnn9"),
        runtime=runtime,
        batch_size=kw.pop("batch_size", 2),
        threads=kw.pop("threads", 2),
        **kw,
    )


def run_phases(cfg: RunConfig, cache: Path):
    """prepare, then the worker's phases in order; returns (adapter, versions, info, out1, out2)."""
    cls = adapter_class(cfg.framework)
    assert cls.check_config(cfg) is None
    adapter = cls(cfg, cls.prepare(cfg, cache))
    versions = adapter.import_framework()
    info = adapter.load_model()
    out1 = np.asarray(adapter.infer(adapter.load_input()))
    out2 = np.asarray(adapter.infer(adapter.load_input()))
    return adapter, versions, info, out1, out2
