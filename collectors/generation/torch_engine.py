"""Generation with PyTorch (framework "pytorch"): runtime torch-eager, or torch-compile. The
torch-compile runtime is the same model wrapped by torch.compile (inductor), with automatic dynamic
shapes so that the cache's growing length does not recompile every step, compiled in the worker's
`compile` phase. The zoo model is built from code with its seeded weights in load_model
(zoo/llama.py), and run with a static KV cache. Threads, interop threads and the device are set as
for inference (adapters/pytorch.py), whose import and environment steps this engine shares."""

from __future__ import annotations

from typing import Any

from edgestats.collectors.adapters import common
from edgestats.collectors.adapters.inputs import ModelFileError
from edgestats.collectors.adapters.pytorch import PyTorchAdapter, cxx_compiler
from edgestats.collectors.core.runconfig import RunConfig
from edgestats.collectors.generation.engine import GenerationEngine

# dynamic None: automatic dynamic shapes, so the prompt, the context and each cache length after
# the first two do not each compile a graph of their own (inference's torch-compile fixes shapes)
COMPILE_OPTIONS = {"backend": "inductor", "mode": "default", "dynamic": None, "fullgraph": False}


class TorchEngine(GenerationEngine):
    framework = "pytorch"
    runtimes = ("torch-eager", "torch-compile")
    modules = ("torch",)
    install_hint = "pip install 'edgestats[pytorch]'"

    @classmethod
    def check_config(cls, config: RunConfig) -> str | None:
        problem = super().check_config(config) or common.accelerator_problem(
            cls.framework, config, ("cpu", "cuda")
        )
        if problem:
            return problem
        compiled = config.runtime == "torch-compile"
        supported = ("fp32", "fp16") if config.accelerator == "cuda" and not compiled else ("fp32",)
        why = {
            "int8": "generation runs the zoo model in fp32 (fp16 on cuda); quantised generation is "
            "llama.cpp's (--framework llamacpp)",
            "fp16": "measured under torch-eager only"
            if compiled
            else "fp16 is a fast path on cuda only (use --accelerator cuda)",
        }
        return common.precision_problem(cls.framework, config, supported, why)

    def import_framework(self) -> dict[str, str]:
        self._inference = PyTorchAdapter(self.config)  # threads, interop threads, device
        versions = self._inference.import_framework()
        self.torch = self._inference.torch
        self.device = self._inference.device
        return versions

    def load_model(self) -> dict[str, Any]:
        from edgestats.collectors.zoo.llama import build_llama

        model = build_llama(self.config.model, self.config.seed).to(self.device)
        self.dtype = self.torch.float16 if self.config.precision == "fp16" else self.torch.float32
        self.model = model.to(self.dtype)
        self.call = self.model
        if self.compiles:  # compiled lazily, by the first calls: the worker's compile phase
            if self.device.type == "cpu" and cxx_compiler() is None:
                raise ModelFileError(
                    "--runtime torch-compile on the CPU needs a C++ compiler (inductor builds the "
                    "kernels it generates): apt install g++ (or set CXX), or use --runtime torch-eager"
                )
            self.call = self.torch.compile(self.model, **COMPILE_OPTIONS)
        return {"params": sum(p.numel() for p in model.parameters()), "file": None}

    def start(self, batch_size: int, max_tokens: int) -> None:
        from edgestats.collectors.zoo.llama import KVCache

        self.cache = None  # the previous cache is freed before the next is allocated
        self.cache = KVCache(self.model.cfg, batch_size, max_tokens, self.dtype, self.device)

    def forward(self, tokens: list[list[int]]) -> Any:
        torch = self.torch
        with torch.inference_mode():
            logits = self.call(torch.tensor(tokens, device=self.device), self.cache)[:, -1]
        if self.device.type == "cuda":
            torch.cuda.synchronize()
        return logits

    def pick(self, logits: Any) -> list[int]:
        return logits.argmax(-1).tolist()  # .tolist() copies to the host (synchronises a GPU)

    def kv_cache_bytes(self) -> int | None:
        return self.cache.nbytes if getattr(self, "cache", None) is not None else None

    @property
    def compiles(self) -> bool:  # the worker's `compile` phase (engine.GenerationEngine)
        return self.runtime == "torch-compile"

    def environment(self) -> dict[str, Any]:
        env = {**self._inference.environment(), "runtime": self.runtime, "model_format": "built from code"}
        if self.compiles:
            env["compile"] = {**COMPILE_OPTIONS, "cxx": cxx_compiler()}
        return env
