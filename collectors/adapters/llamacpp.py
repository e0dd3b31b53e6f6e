"""llama.cpp (framework "llamacpp") in the inference registry: it refuses inference in one line.

It runs generation only, through collectors/generation/llamacpp_engine.py; this adapter is what
an inference configuration meets. Standard library only, like every adapter module before its framework."""

from __future__ import annotations

from edgestats.collectors.adapters.base import Adapter
from edgestats.collectors.core.runconfig import RunConfig


class LlamaCppAdapter(Adapter):
    framework = "llamacpp"
    runtimes = ("llama.cpp",)

    @classmethod
    def check_config(cls, config: RunConfig) -> str | None:
        return (
            f"llamacpp runs generation models only: add --kind generation (e.g. -m llama15m); "
            f"{config.model!r} as {config.kind} is for the other runtimes"
        )
