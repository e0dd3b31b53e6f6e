"""Generation with ONNX Runtime (framework "onnxruntime"): the zoo model's ONNX graph in an
InferenceSession on the CPU. The graph has the KV cache as inputs and outputs
(generation/onnx_export.py) and is built before the run by prepare() into the model cache or a model
pack.

Each forward is one session.run: the ids and every layer's past keys and values in, the last
position's logits and the present keys and values out (host numpy arrays, so the work has
finished). The presents are the next step's pasts: the cache grows by one position per decode
step, by the graph's Concat, as ONNX Runtime applications without I/O binding run it.
Threads: intra_op_num_threads = --threads, graph optimisation ORT_ENABLE_ALL (the default), as
for inference (adapters/onnxruntime.py).
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


class OnnxEngine(GenerationEngine):
    framework = "onnxruntime"
    runtimes = ("onnxruntime",)
    modules = ("onnxruntime", "numpy")
    install_hint = "pip install 'edgestats[onnx]'"
    builds_file = True
    file_kind = "ONNX file"

    @classmethod
    def check_config(cls, config: RunConfig) -> str | None:
        if config.accelerator == "cuda":  # session.run would copy every layer's cache to the host
            return (
                "onnxruntime generation runs on the CPU here: without I/O binding the KV cache would "
                "cross to the host at every step (use --accelerator cpu)"
            )
        why = {
            "fp16": "the CPU execution provider computes fp16 graphs by casting to fp32",
            "int8": "quantised generation is llama.cpp's (--framework llamacpp)",
        }
        return (
            super().check_config(config)
            or common.accelerator_problem(cls.framework, config, ("cpu",))
            or common.precision_problem(cls.framework, config, ("fp32",), why)
        )

    @classmethod
    def prepare_needs(cls, config: RunConfig) -> tuple[str, ...]:
        return ("torch",)  # torch.onnx.export

    @classmethod
    def prepare(cls, config: RunConfig, cache_dir: Path) -> Path | None:
        from edgestats.collectors.adapters.onnxruntime import _opset
        from edgestats.collectors.generation.onnx_export import export_onnx, onnx_file_name

        target = Path(cache_dir) / onnx_file_name(config.model, config.seed, "fp32")
        if not common.is_prepared(target):
            facts = export_onnx(config.model, config.seed, target)
            common.write_sidecar(target, **facts, opset=_opset(target))
        return target

    # -- the measured phases (in the worker) ----------------------------------------------------

    def import_framework(self) -> dict[str, str]:
        import numpy as np
        import onnxruntime as ort

        self.np, self.ort = np, ort
        return {"onnxruntime": ort.__version__, "numpy": np.__version__}

    def load_model(self) -> dict[str, Any]:
        ort, path = self.ort, self.model_path()
        self.meta = common.read_sidecar(path)
        options = ort.SessionOptions()
        options.log_severity_level = 3  # errors only
        if self.config.threads:
            options.intra_op_num_threads = int(self.config.threads)
        try:
            self.session = ort.InferenceSession(
                str(path), sess_options=options, providers=["CPUExecutionProvider"]
            )
        except Exception as exc:  # onnxruntime raises its own Fail/InvalidGraph/... types
            raise ModelFileError(
                f"onnxruntime cannot load {path.name}: {str(exc).splitlines()[0][:300]}"
            ) from None
        self.options, self.cfg = options, llama_config(self.config.model)
        self.input_names = [i.name for i in self.session.get_inputs()]
        expected = 1 + 2 * self.cfg.n_layers
        if len(self.input_names) != expected or self.input_names[0] != "tokens":
            raise ModelFileError(
                f"{path.name} is not a {self.config.model} KV-cache graph ({len(self.input_names)} inputs, "
                f"{expected} expected): delete it from the cache and collect again to rebuild it"
            )
        params = self.meta.get("params", self.cfg.params)
        return {"params": params, "file": str(path), "file_bytes": common.file_bytes(path)}

    def start(self, batch_size: int, max_tokens: int) -> None:
        cfg = self.cfg
        empty = self.np.zeros((batch_size, cfg.n_kv_heads, 0, cfg.head_dim), dtype=self.np.float32)
        self.past = [empty] * (2 * cfg.n_layers)  # read only by the graph: one empty array serves all
        self.batch, self.max_tokens, self.pos = batch_size, max_tokens, 0

    def forward(self, tokens: list[list[int]]) -> Any:
        end = self.pos + len(tokens[0])
        if end > self.max_tokens:
            raise ValueError(f"the KV cache holds {self.max_tokens} positions; {end} were asked for")
        ids = self.np.asarray(tokens, dtype=self.np.int64)
        logits, *self.past = self.session.run(None, dict(zip(self.input_names, (ids, *self.past))))
        self.pos = end
        return logits

    def pick(self, logits: Any) -> list[int]:
        return logits.argmax(-1).tolist()

    def kv_cache_bytes(self) -> int | None:
        """The contract's figure: K and V of every layer for every position of the run (the
        presents reach it at the last step; they are not allocated ahead)."""
        if getattr(self, "max_tokens", None) is None:
            return None
        return self.cfg.kv_cache_bytes(self.batch, self.max_tokens, FLOAT_BYTES)

    def environment(self) -> dict[str, Any]:
        ort, options = self.ort, getattr(self, "options", None)
        meta = getattr(self, "meta", {})
        return {
            "runtime": self.runtime,
            "version": ort.__version__,
            "device": ort.get_device(),
            "precision": self.config.precision,
            "providers": self.session.get_providers() if hasattr(self, "session") else None,
            "available_providers": ort.get_available_providers(),
            "graph_optimization_level": str(options.graph_optimization_level) if options else None,
            "threads_requested": self.config.threads,
            "intra_op_num_threads": (options.intra_op_num_threads or "default (0: one per physical core)")
            if options
            else None,
            "os_threads": common.os_threads(),
            "exporter": meta.get("exporter"),
            "opset": meta.get("opset"),
            "kv_cache": meta.get("kv_cache"),
            "model_format": "onnx",
        }
