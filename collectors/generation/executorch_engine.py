"""Generation with ExecuTorch (framework "executorch"): the zoo model's .pte program, run on the
CPU. The program is for the XNNPACK delegate, with its KV cache held in the program as mutable
buffers (generation/executorch_export.py); prepare() builds it before the run into the model cache
or a model pack, and ExecuTorch's Python runtime bindings run it.

Each forward is one Method.execute of `forward`: the ids and their absolute positions in, the
last position's logits out (a torch tensor on the host, written when execute returns). The keys
and values stay in the program's memory between calls; start() begins a fresh sequence at
position 0: what earlier generations left in the buffers lies past the positions written since,
which the attention mask hides, so no copy or clear is needed (as a static-cache application
resets its position). Batch and capacity (context + prompt + new tokens) are fixed in the file:
they are the cache key's `artifact_fields`, one .pte per shape, as for the CNNs' batch.
Threads: the runtime's thread pool (XNNPACK's kernels run on it) is set to --threads, as for
inference (adapters/executorch.py, whose import and environment steps this engine shares).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from edgestats.collectors.adapters import common
from edgestats.collectors.adapters.inputs import ModelFileError
from edgestats.collectors.core.runconfig import RunConfig
from edgestats.collectors.generation.engine import GenerationEngine
from edgestats.collectors.zoo.llama_arch import llama_config

FLOAT_BYTES = 4  # fp32: the only precision this engine runs


def capacity(config: RunConfig) -> int:
    """The positions the program's KV cache holds: context + prompt + new tokens of the run."""
    return int(config.context_depth or 0) + int(config.prompt_tokens or 0) + int(config.new_tokens or 0)


class ExecuTorchEngine(GenerationEngine):
    framework = "executorch"
    runtimes = ("executorch",)
    modules = ("executorch", "torch")
    install_hint = "pip install 'edgestats[executorch]'"
    builds_file = True
    file_kind = "ExecuTorch program"
    # the program's shapes are static: its file depends on these too (collectors/prepare.cache_key)
    artifact_fields = ("batch_size", "context_depth", "prompt_tokens", "new_tokens")

    @classmethod
    def check_config(cls, config: RunConfig) -> str | None:
        why = {
            "fp16": "the program is exported in fp32 (XNNPACK runs fp16 only from an fp16-exported model)",
            "int8": "quantised generation is llama.cpp's (--framework llamacpp)",
        }
        return (
            super().check_config(config)
            or common.accelerator_problem(cls.framework, config, ("cpu",))
            or common.precision_problem(cls.framework, config, ("fp32",), why)
        )

    @classmethod
    def prepare_needs(cls, config: RunConfig) -> tuple[str, ...]:
        return ("torch", "executorch")  # torch.export and exir

    @classmethod
    def prepare(cls, config: RunConfig, cache_dir: Path) -> Path | None:
        from edgestats.collectors.generation.executorch_export import export_program, pte_file_name

        size = capacity(config)
        name = pte_file_name(config.model, config.seed, config.batch_size, size)
        target = Path(cache_dir) / name
        if not common.is_prepared(target):
            facts = export_program(config.model, config.seed, config.batch_size, size, target)
            common.write_sidecar(target, **facts)
        return target

    # -- the measured phases (in the worker) ----------------------------------------------------

    def import_framework(self) -> dict[str, str]:
        from edgestats.collectors.adapters.executorch import ExecuTorchAdapter

        self._inference = ExecuTorchAdapter(self.config)  # the thread pool, the runtime
        versions = self._inference.import_framework()
        self.torch = self._inference.torch
        return versions

    def load_model(self) -> dict[str, Any]:
        path = self.model_path()
        self.meta = common.read_sidecar(path)
        try:
            program = self._inference.et_runtime.load_program(path)
            self.method = program.load_method("forward")
        except Exception as exc:  # the bindings raise RuntimeError with the runtime's error code
            raise ModelFileError(
                f"executorch cannot load {path.name}: {str(exc).splitlines()[0][:300] if str(exc) else exc!r}"
            ) from None
        self.cfg = llama_config(self.config.model)
        info = self.method.metadata if self.method is not None else None
        if info is None or info.num_inputs() != 2 or "capacity" not in self.meta:
            raise ModelFileError(
                f"{path.name} is not a {self.config.model} KV-cache program (tokens, positions): "
                "delete it from the cache and collect again to rebuild it"
            )
        self.program_batch, self.capacity = int(self.meta["batch_size"]), int(self.meta["capacity"])
        self._inference.model_path = path  # its environment() reads the sidecar
        return {"params": self.meta.get("params"), "file": str(path), "file_bytes": common.file_bytes(path)}

    def start(self, batch_size: int, max_tokens: int) -> None:
        if batch_size != self.program_batch or max_tokens > self.capacity:
            raise ModelFileError(
                f"the program runs {self.program_batch} sequences of up to {self.capacity} positions; "
                f"{batch_size} of {max_tokens} were asked for: prepare it for this run's shape"
            )
        self.batch, self.max_tokens, self.pos = batch_size, max_tokens, 0

    def forward(self, tokens: list[list[int]]) -> Any:
        torch, end = self.torch, self.pos + len(tokens[0])
        if end > self.max_tokens:
            raise ValueError(f"the KV cache holds {self.max_tokens} positions; {end} were asked for")
        positions = torch.arange(self.pos, end, dtype=torch.int64)
        (logits,) = self.method.execute([torch.tensor(tokens, dtype=torch.int64), positions])
        self.pos = end
        return logits

    def pick(self, logits: Any) -> list[int]:
        return logits.argmax(-1).tolist()

    def kv_cache_bytes(self) -> int | None:
        """K and V of every layer as the program allocates them (its whole capacity)."""
        if getattr(self, "max_tokens", None) is None:
            return None
        return self.cfg.kv_cache_bytes(self.program_batch, self.capacity, FLOAT_BYTES)

    def environment(self) -> dict[str, Any]:
        meta = getattr(self, "meta", {})
        return {
            **self._inference.environment(),
            "planned_batch": getattr(self, "program_batch", None),
            "capacity": meta.get("capacity"),
            "kv_cache": meta.get("kv_cache"),
            "model_format": "pte",
        }
