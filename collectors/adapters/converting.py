"""The base of the converting adapters: a zoo model exported to a file format, cached, then loaded.

A converting runtime (MNN, ncnn, ExecuTorch, OpenVINO, TFLite) runs a file that prepare() makes
from a zoo model, in the cache folder of its configuration, or a user's file of that format where
it is. `ConvertingAdapter` holds what they all do, so a new one writes only what differs:

- class attributes: `user_suffixes` (the user's files it loads), `precisions` and
  `precision_why_not` (what check_config accepts, and why the others are refused), `accelerators`,
  `converter_needs` (the modules prepare() imports for a zoo model) and `artifact_template` (the
  cache file's name, formatted with the RunConfig's fields);
- `convert(config, cache_dir, target)`: build `target` and its sidecar (prepare() calls it only
  when the cache does not already hold a finished one);
- for load_model: `open_model(path)` (load the file, check it; returns what the next two hooks
  need, kept no longer than load_model), `file_sample_shape(path, loaded)` (one sample's shape as
  the file records it, asked only when the sidecar has none), `fix_batch(loaded)` (after the
  shape is known: reshape, compile, allocate) and `companion_bytes(path)` (files loaded beside
  it, e.g. weights).

`needs` and `run_converter` are the converters' import guard and external converter call.
Standard library only, as every adapter module at import time.
"""

from __future__ import annotations

import contextlib
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, ClassVar

from edgestats.collectors.adapters import common
from edgestats.collectors.adapters.base import Adapter, ModelInfo
from edgestats.collectors.adapters.inputs import FrameworkMissingError, ModelFileError
from edgestats.collectors.core.processes import die_with_parent
from edgestats.collectors.core.runconfig import RunConfig
from edgestats.collectors.zoo.catalog import is_zoo_model


class ConvertingAdapter(Adapter):
    """An adapter whose zoo models are converted to a file by prepare(), cached, then loaded."""

    user_suffixes: tuple[str, ...] = ()
    accelerators: tuple[str, ...] = ("cpu",)
    precisions: tuple[str, ...] = ("fp32",)
    precision_why_not: ClassVar[dict[str, str]] = {}
    converter_needs: tuple[str, ...] = ()  # prepare_needs of a zoo model
    artifact_template = ""  # e.g. "{model}-seed{seed}.fp32.mnn"
    reads_user_sidecar = False  # True: a user's file's own sidecar (if any) is read as well

    @classmethod
    def check_config(cls, config: RunConfig) -> str | None:
        return (
            super().check_config(config)
            or common.accelerator_problem(cls.framework, config, cls.accelerators)
            or common.precision_problem(cls.framework, config, cls.precisions, cls.precision_why_not)
            or common.model_problem(cls.framework, config, cls.user_suffixes)
        )

    @classmethod
    def prepare_needs(cls, config: RunConfig) -> tuple[str, ...]:
        return cls.converter_needs if is_zoo_model(config.model) else ()

    @classmethod
    def prepare(cls, config: RunConfig, cache_dir: Path) -> Path | None:
        if not is_zoo_model(config.model):
            return None  # the worker reads the user's file where it is
        cache_dir = Path(cache_dir)
        target = cache_dir / cls.artifact_template.format_map(vars(config))
        if not common.is_prepared(target):
            cls.convert(config, cache_dir, target)
        return target

    @classmethod
    def convert(cls, config: RunConfig, cache_dir: Path, target: Path) -> None:
        """Build the zoo model's file `target` in `cache_dir`, then its sidecar."""
        raise NotImplementedError

    # -- load_model and its hooks ----------------------------------------------------------------

    def load_model(self) -> ModelInfo:
        path = common.artifact_file(self)
        meta = common.read_sidecar(path) if self.artifact is not None or self.reads_user_sidecar else {}
        loaded = self.open_model(path)
        known = (
            tuple(meta["input_shape"]) if meta.get("input_shape") else self.file_sample_shape(path, loaded)
        )
        self.input_shape = common.resolve_input_shape(self.config, known, path.name)
        self.fix_batch(loaded)
        self.model_path = path
        return ModelInfo(
            params=meta.get("params"),
            flops=meta.get("flops"),
            input_shape=self.input_shape,
            file=str(path),
            file_bytes=common.file_bytes(path) + self.companion_bytes(path),
        )

    def open_model(self, path: Path) -> Any:
        """Load and check the model file; return what file_sample_shape and fix_batch need."""
        raise NotImplementedError

    def file_sample_shape(self, path: Path, loaded: Any) -> tuple[Any, ...] | None:
        """One sample's shape as the file records it (None or dynamic sizes: input_shape is asked for)."""
        return None

    def fix_batch(self, loaded: Any) -> None:
        """Once self.input_shape is known: what the runtime does with the run's shape."""

    def companion_bytes(self, path: Path) -> int:
        """Bytes of the files loaded beside the model file (its weights), counted in file_bytes."""
        return 0


@contextlib.contextmanager
def needs(why: str, install: str) -> Iterator[None]:
    """Around a converter's imports: an ImportError becomes "WHY (the error): INSTALL"."""
    try:
        yield
    except ImportError as exc:
        raise FrameworkMissingError(f"{why} ({exc}): {install}") from None


def run_converter(
    command: list[str],
    failure: str,
    succeeded: Callable[[subprocess.CompletedProcess[str]], bool],
    **options: Any,
) -> subprocess.CompletedProcess[str]:
    """Run an external converter, killed with its builder (docs/cli/prepare.md), its output captured;
    a non-zero exit or not `succeeded` raises "FAILURE (exit N): its last line of output"."""
    done = subprocess.run(command, preexec_fn=die_with_parent(), capture_output=True, text=True, **options)
    if done.returncode != 0 or not succeeded(done):
        tail = (done.stderr.strip() or done.stdout.strip()).splitlines()[-1:] or ["no output"]
        raise ModelFileError(f"{failure} (exit {done.returncode}): {tail[0][:300]}")
    return done
