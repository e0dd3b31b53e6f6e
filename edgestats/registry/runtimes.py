"""Runtimes `edgestats collect` can measure: one entry per framework adapter.

Adding a runtime: an adapter module under collectors/adapters/ (a subclass of
`edgestats.collectors.adapters.base.Adapter`, plus an optional `probe_detail(module) -> dict`
that doctor runs after importing the framework), one entry here, its extra in pyproject.toml, its
place in the demo sweep and its section in docs/runtimes.md (docs/architecture.md §8 lists every
file). `collect --framework`, the sweep checks, `Adapter.is_available()` (which
modules, what to install) and doctor's framework probes all read this list.
"""

from __future__ import annotations

from dataclasses import dataclass

from edgestats.registry import names_text, resolve


@dataclass(frozen=True)
class RuntimeEntry:
    name: str  # --framework value and runs.framework
    title: str  # as people write it
    adapter: str  # "module:Class" of its Adapter subclass
    imports: tuple[str, ...]  # modules doctor tries, in order; the first that imports is the one used
    extra: str  # pip extra of edgestats that installs it: pip install 'edgestats[EXTRA]'
    help: str  # one line: what it runs (CLI help, docs)
    doc: str  # "docs/FILE.md#anchor" of its section
    # False for a generation-only runtime (llama.cpp): its adapter refuses inference in one line;
    # which runtimes generate is collectors/generation/engines.py's list
    inference: bool = True

    def adapter_class(self) -> type:
        return resolve(self.adapter)

    @property
    def install_hint(self) -> str:
        return f"pip install 'edgestats[{self.extra}]'"

    @property
    def probe_detail(self) -> str:
        """ "module:probe_detail" in the adapter's module: what doctor reports about the imported
        framework (CUDA, providers, ...). The function is optional; doctor runs it in its probe
        process, after timing the import."""
        return f"{self.adapter.partition(':')[0]}:probe_detail"


RUNTIMES: tuple[RuntimeEntry, ...] = (
    RuntimeEntry(
        "pytorch",
        "PyTorch",
        "edgestats.collectors.adapters.pytorch:PyTorchAdapter",
        ("torch",),
        "torch",
        "PyTorch, eager or TorchScript",
        "docs/runtimes.md#pytorch",
    ),
    RuntimeEntry(
        "tensorflow",
        "TensorFlow",
        "edgestats.collectors.adapters.tensorflow:TensorFlowAdapter",
        ("tensorflow",),
        "tensorflow",
        "TensorFlow 2 / Keras 3, tf.function graph or eager",
        "docs/runtimes.md#tensorflow",
    ),
    # LiteRT is the current home of the TFLite interpreter; tflite_runtime is what older
    # Raspberry Pi images have; full TensorFlow carries one as tf.lite.
    RuntimeEntry(
        "tflite",
        "TensorFlow Lite (LiteRT)",
        "edgestats.collectors.adapters.tflite:TFLiteAdapter",
        ("ai_edge_litert.interpreter", "tflite_runtime.interpreter", "tensorflow"),
        "tflite",
        "the TFLite interpreter (LiteRT, tflite_runtime or tf.lite)",
        "docs/runtimes.md#tflite",
    ),
    RuntimeEntry(
        "onnxruntime",
        "ONNX Runtime",
        "edgestats.collectors.adapters.onnxruntime:OnnxRuntimeAdapter",
        ("onnxruntime",),
        "onnx",
        "ONNX Runtime (CPU or CUDA execution provider)",
        "docs/runtimes.md#onnxruntime",
    ),
    RuntimeEntry(
        "openvino",
        "OpenVINO",
        "edgestats.collectors.adapters.openvino:OpenVINOAdapter",
        ("openvino",),
        "openvino",
        "OpenVINO's CPU plugin (LATENCY hint), IR converted from ONNX",
        "docs/runtimes.md#openvino",
    ),
    RuntimeEntry(
        "ncnn",
        "ncnn",
        "edgestats.collectors.adapters.ncnn:NcnnAdapter",
        ("ncnn",),
        "ncnn",
        "Tencent's ncnn on the CPU, .param/.bin converted by pnnx",
        "docs/runtimes.md#ncnn",
    ),
    RuntimeEntry(
        "mnn",
        "MNN",
        "edgestats.collectors.adapters.mnn:MNNAdapter",
        ("MNN",),
        "mnn",
        "Alibaba's MNN on its CPU backend, .mnn converted from ONNX",
        "docs/runtimes.md#mnn",
    ),
    # `executorch` is a namespace package (importing it proves nothing); its runtime bindings are
    # what the worker imports, so doctor times and checks those
    RuntimeEntry(
        "executorch",
        "ExecuTorch",
        "edgestats.collectors.adapters.executorch:ExecuTorchAdapter",
        ("executorch.runtime",),
        "executorch",
        "PyTorch's ExecuTorch runtime, an XNNPACK-delegated .pte",
        "docs/runtimes.md#executorch",
    ),
    # generation only: a GGUF of a generation zoo model (docs/generation.md)
    RuntimeEntry(
        "llamacpp",
        "llama.cpp",
        "edgestats.collectors.adapters.llamacpp:LlamaCppAdapter",
        ("llama_cpp",),
        "llamacpp",
        "llama.cpp through llama-cpp-python, GGUF F32/F16/Q8_0/Q4_0 (generation only)",
        "docs/runtimes.md#llamacpp",
        inference=False,
    ),
)
_BY_NAME = {entry.name: entry for entry in RUNTIMES}


def runtime_names() -> tuple[str, ...]:
    return tuple(_BY_NAME)


def inference_runtime_names() -> tuple[str, ...]:
    """The runtimes that run inference (every one but the generation-only ones)."""
    return tuple(e.name for e in RUNTIMES if e.inference)


def runtime(name: str) -> RuntimeEntry:
    """The entry of a --framework name; KeyError for an unknown one."""
    return _BY_NAME[name]


def choices_text() -> str:
    return names_text(runtime_names())
