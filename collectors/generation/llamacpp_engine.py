"""Generation with llama.cpp (framework "llamacpp"): the zoo model's GGUF file, run on the CPU with
its own KV cache. The calls go through llama-cpp-python's C API bindings; the file
(generation/gguf_export.py) is built before the run by prepare() into the model cache or a model
pack.

Precisions name the GGUF's weights: fp32 (F32), fp16 (F16), q8_0 or int8 (Q8_0) and q4_0 (Q4_0),
the last two made by llama.cpp's quantiser. The KV cache is llama.cpp's default F16 at every
precision, as llama-cli and llama-bench run it.

Each start() makes a fresh llama.cpp context (its KV cache allocated for batch x max_tokens
positions, llama.cpp rounds each sequence up to a multiple of 256) and a llama_batch; forward() is
one llama_decode of every sequence's tokens followed by llama_synchronize, so the work is finished
before the worker's clock stops, and the last positions' logits are copied to the host. --threads
sets n_threads (single-token decode) and n_threads_batch (prompt) alike; without it llama.cpp's
default applies. llama.cpp's own performance counters (llama_perf_context: t_p_eval_ms, n_p_eval,
t_eval_ms, n_eval) start with each context, so environment() reports the measured generation's:
runs.environment.runtime_detail.llamacpp_perf (bench/generation_fidelity.py compares them).
"""

from __future__ import annotations

import ctypes
from pathlib import Path
from typing import Any

from edgestats.collectors.adapters import common
from edgestats.collectors.adapters.inputs import ModelFileError
from edgestats.collectors.core.runconfig import RunConfig
from edgestats.collectors.generation.engine import GenerationEngine
from edgestats.collectors.zoo.llama_arch import llama_config

# --precision -> the GGUF's type (gguf_export.GGUF_PRECISIONS); int8 is llama.cpp's 8-bit, Q8_0
GGUF_TYPES = {"fp32": "fp32", "fp16": "fp16", "int8": "q8_0", "q8_0": "q8_0", "q4_0": "q4_0"}
KV_BYTES_PER_ELEMENT = 2  # llama.cpp's default KV cache type, F16 (GGML_TYPE_F16)
PERF_FIELDS = ("t_p_eval_ms", "n_p_eval", "t_eval_ms", "n_eval", "n_reused")


def gguf_type(config: RunConfig) -> str:
    return GGUF_TYPES[config.precision]


# ggml's log levels (ggml.h): llama-cpp-python's own callback maps them one level too high and
# prints llama.cpp's warnings as errors, so this engine installs its own
LOG_WARN, LOG_ERROR = 3, 4
LOG_KEPT = 20  # the warnings a run keeps in its environment


class LlamaLog:
    """llama.cpp's log: errors to stderr, warnings kept (environment), the rest dropped."""

    def __init__(self) -> None:
        self.warnings: list[str] = []
        self.callback: Any = None  # the ctypes callback must outlive every llama.cpp call

    def install(self, llama_cpp: Any) -> None:
        import sys

        def log(level: int, text: bytes, _user: Any) -> None:
            line = text.decode(errors="replace").rstrip()
            if level == LOG_ERROR:
                print(line, file=sys.stderr, flush=True)
            elif level == LOG_WARN and line and len(self.warnings) < LOG_KEPT:
                self.warnings.append(line)

        self.callback = llama_cpp.llama_log_callback(log)
        llama_cpp.llama_log_set(self.callback, ctypes.c_void_p(0))


LOG = LlamaLog()


def padded(tokens: int) -> int:
    """llama.cpp's KV cache positions per sequence: a multiple of 256 (llama-context.cpp)."""
    return -(-tokens // 256) * 256


class LlamaCppEngine(GenerationEngine):
    framework = "llamacpp"
    runtimes = ("llama.cpp",)
    modules = ("llama_cpp", "numpy")
    install_hint = "pip install 'edgestats[llamacpp]' (builds llama.cpp from source: minutes)"
    builds_file = True
    file_kind = "GGUF file"

    @classmethod
    def check_config(cls, config: RunConfig) -> str | None:
        why = {}
        if config.precision not in GGUF_TYPES:
            why[config.precision] = "a GGUF here is F32, F16, Q8_0 (int8) or Q4_0"
        return (
            super().check_config(config)
            or common.accelerator_problem(cls.framework, config, ("cpu",))
            or common.precision_problem(cls.framework, config, tuple(GGUF_TYPES), why)
        )

    @classmethod
    def prepare_needs(cls, config: RunConfig) -> tuple[str, ...]:
        # the zoo's weights come from torch; gguf writes F32/F16; llama.cpp's quantiser the rest
        quantised = gguf_type(config) not in ("fp32", "fp16")
        return ("torch", "gguf", *(("llama_cpp",) if quantised else ()))

    @classmethod
    def prepare(cls, config: RunConfig, cache_dir: Path) -> Path | None:
        from edgestats.collectors.generation.gguf_export import export_gguf, gguf_file_name

        kind = gguf_type(config)
        target = Path(cache_dir) / gguf_file_name(config.model, config.seed, kind)
        if not common.is_prepared(target):
            if kind not in ("fp32", "fp16"):
                import llama_cpp

                LOG.install(llama_cpp)  # the quantiser reports every tensor otherwise
            target.parent.mkdir(parents=True, exist_ok=True)
            export_gguf(config.model, config.seed, kind, target.parent)
            cfg = llama_config(config.model)
            common.write_sidecar(target, params=cfg.params, gguf_type=kind, exporter="gguf")
        return target

    # -- the measured phases (in the worker) ----------------------------------------------------

    def import_framework(self) -> dict[str, str]:
        import llama_cpp
        import numpy as np

        LOG.install(llama_cpp)
        llama_cpp.llama_backend_init()
        self.llama, self.np = llama_cpp, np
        self.ctx = self.batch = None
        return {"llama_cpp_python": llama_cpp.__version__, "numpy": np.__version__}

    def load_model(self) -> dict[str, Any]:
        llama, path = self.llama, self.model_path()
        self.meta, self.cfg = common.read_sidecar(path), llama_config(self.config.model)
        params = llama.llama_model_default_params()
        params.n_gpu_layers = 0  # the CPU: the accelerator this engine runs on
        self.model = llama.llama_model_load_from_file(str(path).encode(), params)
        if not self.model:
            raise ModelFileError(
                f"llama.cpp cannot load {path.name}: delete it from the cache and collect again to rebuild it"
            )
        n_vocab = llama.llama_vocab_n_tokens(llama.llama_model_get_vocab(self.model))
        if n_vocab != self.cfg.vocab_size or llama.llama_model_n_layer(self.model) != self.cfg.n_layers:
            raise ModelFileError(f"{path.name} is not a {self.config.model} GGUF: rebuild it with prepare")
        self.n_vocab = n_vocab
        params_count = int(llama.llama_model_n_params(self.model))
        return {"params": params_count, "file": str(path), "file_bytes": common.file_bytes(path)}

    def start(self, batch_size: int, max_tokens: int) -> None:
        """A fresh context: its KV cache, its counters, and a batch as large as the whole run."""
        llama = self.llama
        self._free()
        params = llama.llama_context_default_params()
        # llama.cpp allocates n_ctx / n_seq_max positions per sequence, rounded up to 256
        params.n_ctx = batch_size * padded(max_tokens)
        params.n_batch = batch_size * max_tokens  # any forward is one llama_decode
        params.n_seq_max = batch_size
        params.no_perf = False  # keep llama.cpp's counters (its default turns them off)
        if self.config.threads:
            params.n_threads = params.n_threads_batch = int(self.config.threads)
        self.ctx = llama.llama_init_from_model(self.model, params)
        if not self.ctx:
            raise RuntimeError(f"llama.cpp could not make a context of {params.n_ctx} positions")
        self.params = params
        self.batch = llama.llama_batch_init(batch_size * max_tokens, 0, 1)
        self.sequences, self.max_tokens, self.pos = batch_size, max_tokens, 0
        self.logits_address, self.logits_view = None, None

    def _free(self) -> None:
        if getattr(self, "batch", None) is not None:
            self.llama.llama_batch_free(self.batch)
        if getattr(self, "ctx", None):
            self.llama.llama_free(self.ctx)
        self.ctx = self.batch = None

    def forward(self, tokens: list[list[int]]) -> Any:
        llama, batch, length, pos = self.llama, self.batch, len(tokens[0]), self.pos
        if pos + length > self.max_tokens:
            raise ValueError(f"the KV cache holds {self.max_tokens} positions; {pos + length} were asked for")
        token, position, n_seq, seq, wants = (
            batch.token,
            batch.pos,
            batch.n_seq_id,
            batch.seq_id,
            batch.logits,
        )
        i = 0
        for s, ids in enumerate(tokens):
            for j, t in enumerate(ids):
                token[i], position[i], n_seq[i], seq[i][0], wants[i] = t, pos + j, 1, s, 0
                i += 1
            wants[i - 1] = 1  # logits of each sequence's last position only
        batch.n_tokens = i
        status = llama.llama_decode(self.ctx, batch)
        if status != 0:
            raise RuntimeError(f"llama_decode failed with status {status} at position {pos}")
        llama.llama_synchronize(self.ctx)  # the work finished (and counted by llama.cpp's counters)
        self.pos = pos + length
        return self._logits().copy()  # the next decode overwrites llama.cpp's buffer

    def _logits(self) -> Any:
        """A numpy view of llama.cpp's logits buffer ([sequences, vocab]: the outputs asked for),
        made again only when llama.cpp moves the buffer: a view built each step through ctypes'
        buffer protocol cost about 40 us, 1 % of a llama15m decode step on one thread here."""
        pointer = self.llama.llama_get_logits(self.ctx)
        address = ctypes.addressof(pointer.contents)
        if address != self.logits_address:
            self.logits_view = self.np.ctypeslib.as_array(pointer, shape=(self.sequences, self.n_vocab))
            self.logits_address = address
        return self.logits_view

    def pick(self, logits: Any) -> list[int]:
        return logits.argmax(-1).tolist()

    def kv_cache_bytes(self) -> int | None:
        """K and V of every layer for the positions llama.cpp allocated (llama_n_ctx: batch x
        max_tokens, each sequence rounded up to 256), F16."""
        if not getattr(self, "ctx", None):
            return None
        allocated = int(self.llama.llama_n_ctx(self.ctx))
        return self.cfg.kv_cache_bytes(1, allocated, KV_BYTES_PER_ELEMENT)

    def perf(self) -> dict[str, Any] | None:
        """llama.cpp's counters of the current context (the measured generation)."""
        if not getattr(self, "ctx", None):
            return None
        data = self.llama.llama_perf_context(self.ctx)
        return {name: getattr(data, name) for name in PERF_FIELDS}

    def environment(self) -> dict[str, Any]:
        llama, ctx = self.llama, getattr(self, "ctx", None)
        return {
            "runtime": self.runtime,
            "version": llama.__version__,
            "precision": self.config.precision,
            "gguf_type": gguf_type(self.config),
            "kv_cache_type": "f16",
            "threads_requested": self.config.threads,
            "n_threads": llama.llama_n_threads(ctx) if ctx else None,
            "n_threads_batch": llama.llama_n_threads_batch(ctx) if ctx else None,
            "n_ctx": llama.llama_n_ctx(ctx) if ctx else None,
            "n_batch": llama.llama_n_batch(ctx) if ctx else None,
            "n_ubatch": llama.llama_n_ubatch(ctx) if ctx else None,
            "system_info": llama.llama_print_system_info().decode(errors="replace").strip(),
            "os_threads": common.os_threads(),
            "exporter": getattr(self, "meta", {}).get("exporter"),
            "model_format": "gguf",
            "llamacpp_perf": self.perf(),
            "llamacpp_warnings": LOG.warnings,
        }
