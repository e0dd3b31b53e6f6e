"""The interface every generation engine implements (one per framework), driven by
generation/worker.py through the phases of docs/generation.md:

    import_framework() -> load_model() -> start(batch, max_tokens) -> forward(ids) -> pick(logits) ...

An engine module is imported only when its framework is used. Greedy decoding is the worker's:
an engine computes logits and picks each sequence's most likely next token; it never samples.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

from edgestats.collectors.core.runconfig import RunConfig


class GenerationEngine:
    """Base class. Subclasses set `framework` (the registry name), `runtimes` (the first is the
    default) and `modules` (what must be importable), and implement the phase methods."""

    framework: str = ""
    runtimes: tuple[str, ...] = ()
    modules: tuple[str, ...] = ()
    install_hint: str = ""
    # True for an engine whose model file is built before the run by prepare() (in collect's
    # separate preparation process, cached like inference's: collectors/prepare.py)
    builds_file: bool = False
    # True for a runtime that compiles on its first calls (torch.compile): the worker then runs one
    # untimed generation of the run's shapes in a `compile` phase of its own, before the warm-up
    compiles: bool = False
    file_kind: str = "model file"  # what prepare() builds, named when it is missing

    def model_path(self) -> Path:
        """The file prepare() built, which load_model() reads (engines that build a file)."""
        from edgestats.collectors.adapters.inputs import ModelFileError

        if self.artifact is None:
            raise ModelFileError(
                f"generation model {self.config.model!r} has no {self.file_kind}: run prepare() first "
                "(edgestats collect does this before each run)"
            )
        path = Path(self.artifact)
        if not path.exists():
            raise ModelFileError(f"model file {str(path)!r} does not exist")
        return path

    def __init__(self, config: RunConfig, artifact: Path | None = None):
        self.config = config
        self.artifact = artifact  # the file prepare() made, if the engine loads one
        self.runtime = config.runtime or self.runtimes[0]

    @classmethod
    def is_available(cls) -> tuple[bool, str | None]:
        """(True, None) or (False, what to install); finds the modules, does not import them."""
        missing = [m for m in cls.modules if importlib.util.find_spec(m.split(".")[0]) is None]
        if not missing:
            return True, None
        return False, f"Python module {missing[0]!r} is not installed: {cls.install_hint}"

    @classmethod
    def check_config(cls, config: RunConfig) -> str | None:
        """Why this configuration cannot run with this engine, or None."""
        if config.runtime and config.runtime not in cls.runtimes:
            valid = ", ".join(cls.runtimes)
            return f"{cls.framework} has no generation runtime {config.runtime!r}; use one of {valid}"
        return None

    @classmethod
    def prepare(cls, config: RunConfig, cache_dir: Path) -> Path | None:
        """The model file the worker loads, built before the run (None: built in load_model)."""
        return None

    @classmethod
    def prepare_needs(cls, config: RunConfig) -> tuple[str, ...]:
        """The modules prepare() imports (a device without them runs only from a model pack)."""
        return ()

    # -- the measured phases (in the worker) ----------------------------------------------------

    def import_framework(self) -> dict[str, str]:
        raise NotImplementedError

    def load_model(self) -> dict[str, Any]:
        """The model loaded (or built) and ready: {params, file, file_bytes} as known."""
        raise NotImplementedError

    def start(self, batch_size: int, max_tokens: int) -> None:
        """A fresh, empty KV cache for `batch_size` sequences of up to `max_tokens` positions."""
        raise NotImplementedError

    def forward(self, tokens: list[list[int]]) -> Any:
        """Run `tokens` (one equal-length list per sequence) at the cache's next positions,
        appending their keys and values; returns the logits (opaque to the worker) with the work
        finished (a GPU synchronised)."""
        raise NotImplementedError

    def pick(self, logits: Any) -> list[int]:
        """Greedy: each sequence's most likely next token after its last position, on the host."""
        raise NotImplementedError

    def kv_cache_bytes(self) -> int | None:
        """Bytes of the KV cache as allocated by start()."""
        return None

    def environment(self) -> dict[str, Any]:
        return {}
