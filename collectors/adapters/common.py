"""What the four framework adapters share: config checks, the artifact sidecar, atomic writes.

Standard library only: an adapter module is imported by the worker before its framework, and
everything imported here would count in the worker's import phase.

The sidecar (`<artifact>.meta.json`) carries what prepare() learned about a model (parameters,
FLOPs, input shape, exporter) to load_model() in the worker, which must not import another
framework to find out: FLOPs are counted on the PyTorch zoo model even for a .tflite run.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from edgestats.collectors.adapters.inputs import ModelFileError
from edgestats.collectors.core.runconfig import ACCELERATORS, PRECISIONS, RunConfig
from edgestats.collectors.zoo.catalog import is_zoo_model

SIDECAR_SUFFIX = ".meta.json"


# -- config checks (no framework import) ---------------------------------------------------------


def accelerator_problem(framework: str, config: RunConfig, supported: tuple[str, ...]) -> str | None:
    if config.accelerator in supported:
        return None
    if config.accelerator in ACCELERATORS:
        return f"{framework} cannot run on {config.accelerator} here; use one of {', '.join(supported)}"
    return f"unknown accelerator {config.accelerator!r}; use one of {', '.join(supported)}"


def precision_problem(
    framework: str, config: RunConfig, supported: tuple[str, ...], why_not: dict[str, str]
) -> str | None:
    """None if config.precision is in `supported`; else a message listing the valid values."""
    if config.precision in supported:
        return None
    valid = ", ".join(supported)
    if config.precision in why_not:
        return f"{framework} cannot run {config.precision}: {why_not[config.precision]} (valid here: {valid})"
    if config.precision in PRECISIONS:
        return f"{framework} cannot run {config.precision} on {config.accelerator}; use one of {valid}"
    return f"{framework} has no precision {config.precision!r}; use one of {valid}"


def model_problem(
    framework: str, config: RunConfig, suffixes: tuple[str, ...], allow_dir: bool = False
) -> str | None:
    """A model that is neither a zoo name nor a usable file of the right kind."""
    if is_zoo_model(config.model):
        return None
    path = Path(config.model)
    if not path.exists():
        return (
            f"{config.model!r} is neither a zoo model (see `edgestats zoo`) nor an existing file; "
            f"{framework} loads {', '.join(suffixes)} files"
        )
    if path.is_dir():
        return (
            None if allow_dir else f"{framework} loads a model file ({', '.join(suffixes)}), not a directory"
        )
    if path.suffix.lower() not in suffixes:
        return f"{framework} loads {', '.join(suffixes)} files, not {path.name!r}"
    return None


# -- artifacts -------------------------------------------------------------------------------------


def sidecar_path(artifact: Path) -> Path:
    return artifact.with_name(artifact.name + SIDECAR_SUFFIX)


def write_sidecar(artifact: Path, **info: Any) -> None:
    """Written after the artifact, atomically: its presence means the artifact is complete."""
    info = {"edgestats_artifact": 1, **info}
    source = info.get("source")
    if source:  # a user's file linked into the cache: remember which version was counted
        st = os.stat(source)
        info.update(source_bytes=st.st_size, source_mtime_ns=st.st_mtime_ns)
    with atomic_target(sidecar_path(artifact)) as tmp:
        tmp.write_text(json.dumps(info, sort_keys=True, default=list))


def read_sidecar(artifact: Path | None) -> dict[str, Any]:
    """The sidecar's facts, or {} (a user's own file, or one changed since it was counted)."""
    if artifact is None:
        return {}
    path = sidecar_path(Path(artifact))
    try:
        info = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    if info.get("source"):
        try:
            st = os.stat(info["source"])
        except OSError:
            return {}
        if (st.st_size, st.st_mtime_ns) != (info.get("source_bytes"), info.get("source_mtime_ns")):
            return {}
    return info


def is_prepared(artifact: Path) -> bool:
    """An artifact from an earlier prepare() that finished (file and sidecar both there)."""
    return artifact.exists() and sidecar_path(artifact).is_file()


@contextlib.contextmanager
def atomic_target(target: Path) -> Iterator[Path]:
    """Yield a temporary path next to `target` (same suffix); rename it over `target` on success."""
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".tmp-{os.getpid()}-{target.name}")
    try:
        yield tmp
        os.replace(tmp, target)
    finally:
        if tmp.exists():
            tmp.unlink()


def link_user_file(config: RunConfig, cache_dir: Path) -> Path | None:
    """A symlink to the user's model file inside the cache, so a sidecar can sit next to it
    without writing into the user's folder; None where symlinks cannot be made."""
    source = Path(config.model).resolve()
    cache_dir.mkdir(parents=True, exist_ok=True)
    link = cache_dir / source.name
    try:
        if link.is_symlink() or link.exists():
            link.unlink()
        link.symlink_to(source)
    except OSError:  # no symlinks on this filesystem: the worker loads the user's file directly
        return None
    return link


def artifact_file(adapter: Any) -> Path:
    """The file load_model loads: prepare()'s artifact, else the user's model path."""
    if adapter.artifact is not None:
        path = Path(adapter.artifact)
    elif is_zoo_model(adapter.config.model):
        raise ModelFileError(
            f"zoo model {adapter.config.model!r} has no prepared file: run prepare() first "
            "(edgestats collect does this before each run)"
        )
    else:
        path = Path(adapter.config.model)
    if not path.exists():
        raise ModelFileError(f"model file {str(path)!r} does not exist")
    return path


def file_bytes(path: Path) -> int:
    path = Path(path)
    if path.is_dir():
        return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())
    return path.stat().st_size


def extra_input_shape(config: RunConfig) -> tuple[int, ...] | None:
    """extra['input_shape']: one sample in the framework's layout, e.g. [3, 224, 224]."""
    shape = config.extra.get("input_shape")
    return tuple(int(d) for d in shape) if shape else None


def resolve_input_shape(config: RunConfig, known: tuple[Any, ...] | None, what: str) -> tuple[int, ...]:
    """The sample shape: extra['input_shape'] if given, else `known` if fully static, else an error."""
    shape = extra_input_shape(config)
    if shape:
        return shape
    if known and all(isinstance(d, int) and d > 0 for d in known):
        return tuple(int(d) for d in known)
    raise ModelFileError(
        f"{what} does not fix its input shape ({known}); pass the shape of one sample "
        "as extra input_shape, e.g. [3, 224, 224] (NCHW) or [224, 224, 3] (NHWC)"
    )


def zoo_flops(name: str, seed: int) -> int | None:
    """FLOPs of one sample, counted on the PyTorch zoo model; None where torch is not installed."""
    try:
        from edgestats.collectors.zoo.catalog import zoo_model
        from edgestats.collectors.zoo.torch_models import build_torch, count_flops
    except ImportError:
        return None
    return int(count_flops(build_torch(name, seed=seed), zoo_model(name).input_shape_nchw(1)))


def os_threads() -> int | None:
    """OS threads of this process right now (Linux): what a thread setting actually produced."""
    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:
        return None
