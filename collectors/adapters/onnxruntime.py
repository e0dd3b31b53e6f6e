"""ONNX Runtime: an .onnx model run by an InferenceSession.

prepare() exports the PyTorch zoo model (zoo.torch_models, seeded) with torch.onnx.export, batch axis
dynamic. torch >= 2.9 defaults to the dynamo exporter, which needs onnxscript; where onnxscript is
missing the TorchScript-based exporter (dynamo=False, deprecated but offline-capable) is used.
Which one ran is recorded in the sidecar and the run's environment. int8 is
onnxruntime.quantization.quantize_dynamic into a second file: int8 weights, activations quantized
at run time (MatMul/Gemm -> MatMulInteger, Conv -> ConvInteger). A user's .onnx file is linked
into the cache, where its initializers are counted (outside the measured worker); int8 quantizes
a copy of it.

load_model creates the session: intra_op_num_threads = threads, graph optimisation level
ORT_ENABLE_ALL (the default), providers CPU, or CUDA first when --accelerator cuda. infer is
session.run, which returns host numpy arrays, so the work has finished.
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import logging
import sys
import warnings
from pathlib import Path
from typing import Any

from edgestats.collectors.adapters import common
from edgestats.collectors.adapters.base import Adapter, ModelInfo
from edgestats.collectors.adapters.inputs import (
    AcceleratorError,
    FrameworkMissingError,
    ModelFileError,
    batch_for,
)
from edgestats.collectors.core.runconfig import RunConfig
from edgestats.collectors.zoo.catalog import is_zoo_model, zoo_model

INT8_NOTE = (
    "dynamic quantization (onnxruntime.quantization.quantize_dynamic): int8 weights, activations "
    "quantized at run time; MatMul/Gemm -> MatMulInteger, Conv -> ConvInteger"
)


class OnnxRuntimeAdapter(Adapter):
    framework = "onnxruntime"
    runtimes = ("onnxruntime",)

    @classmethod
    def check_config(cls, config: RunConfig) -> str | None:
        if config.accelerator == "cuda":
            supported, why = (
                ("fp32",),
                {
                    "int8": "ConvInteger/MatMulInteger have no CUDA kernels (they would run on the CPU)",
                    "fp16": "needs an fp16-converted model (onnxconverter-common); not offered",
                },
            )
        else:
            supported, why = (
                ("fp32", "int8"),
                {
                    "fp16": "the CPU execution provider computes fp16 models by "
                    "casting to fp32; no fp16 kernels to measure"
                },
            )
        return (
            super().check_config(config)
            or common.accelerator_problem(cls.framework, config, ("cpu", "cuda"))
            or common.precision_problem(cls.framework, config, supported, why)
            or common.model_problem(cls.framework, config, (".onnx",))
        )

    @classmethod
    def prepare_needs(cls, config: RunConfig) -> tuple[str, ...]:
        export = ("torch",) if is_zoo_model(config.model) else ()  # torch.onnx.export
        return export + (("onnx",) if config.precision == "int8" else ())  # quantize_dynamic reads the graph

    @classmethod
    def prepare(cls, config: RunConfig, cache_dir: Path) -> Path | None:
        cache_dir = Path(cache_dir)
        if is_zoo_model(config.model):
            fp32 = cache_dir / f"{config.model}-seed{config.seed}.fp32.onnx"
            if not common.is_prepared(fp32):
                _export_zoo(config, fp32)
        else:
            fp32 = common.link_user_file(config, cache_dir)
            if fp32 is None:  # no symlinks here: the worker loads the user's file, uncounted
                if config.precision == "int8":
                    raise ModelFileError(
                        f"cannot quantize {config.model!r}: the cache folder allows no symlinks; "
                        "quantize it (onnxruntime.quantization.quantize_dynamic) and pass that file"
                    )
                return None
            if not common.read_sidecar(fp32):
                common.write_sidecar(
                    fp32,
                    source=str(Path(config.model).resolve()),
                    params=_count_initializers(fp32),
                    exporter=None,
                    opset=_opset(fp32),
                )
        if config.precision != "int8":
            return fp32
        int8 = fp32.with_name(fp32.name.removesuffix(".onnx").removesuffix(".fp32") + ".int8.onnx")
        if common.is_prepared(int8) and common.read_sidecar(int8):
            return int8
        from onnxruntime.quantization import quantize_dynamic

        root = logging.getLogger()
        level = root.level
        root.setLevel(logging.ERROR)  # it logs "consider pre-processing" at WARNING
        try:
            with common.atomic_target(int8) as tmp:
                quantize_dynamic(str(fp32), str(tmp))
        finally:
            root.setLevel(level)
        common.write_sidecar(
            int8, **{**common.read_sidecar(fp32), "quantization": INT8_NOTE, "edgestats_artifact": 1}
        )
        return int8

    # -- the measured phases ---------------------------------------------------------------------

    def import_framework(self) -> dict[str, str]:
        import onnxruntime as ort

        self.ort = ort
        versions = {"onnxruntime": ort.__version__}
        if "numpy" in sys.modules:
            versions["numpy"] = sys.modules["numpy"].__version__
        return versions

    def load_model(self) -> ModelInfo:
        ort = self.ort
        path = common.artifact_file(self)
        meta = common.read_sidecar(path)
        options = ort.SessionOptions()
        options.log_severity_level = 3  # errors only
        if self.config.threads:
            options.intra_op_num_threads = int(self.config.threads)
        providers = ["CPUExecutionProvider"]
        if self.config.accelerator == "cuda":
            if "CUDAExecutionProvider" not in ort.get_available_providers():
                raise AcceleratorError(
                    f"--accelerator cuda, but onnxruntime {ort.__version__} has no CUDAExecutionProvider "
                    f"(has {', '.join(ort.get_available_providers())}): pip install onnxruntime-gpu"
                )
            providers.insert(0, "CUDAExecutionProvider")
        try:
            self.session = ort.InferenceSession(str(path), sess_options=options, providers=providers)
        except Exception as exc:  # onnxruntime raises its own Fail/InvalidGraph/... types
            raise ModelFileError(
                f"onnxruntime cannot load {path.name}: {str(exc).splitlines()[0][:300]}"
            ) from None
        self.options, self.model_path = options, path
        first = self.session.get_inputs()[0]
        self.input_name = first.name
        known = tuple(meta["input_shape"]) if meta.get("input_shape") else tuple(first.shape[1:])
        self.input_shape = common.resolve_input_shape(self.config, known, path.name)
        if first.type != "tensor(float)":
            raise ModelFileError(f"{path.name} takes {first.type} input; edgestats feeds float32 images")
        return ModelInfo(
            params=meta.get("params"),
            flops=meta.get("flops"),
            input_shape=self.input_shape,
            file=meta.get("source") if path.is_symlink() else str(path),
            file_bytes=common.file_bytes(path),
        )

    def load_input(self) -> Any:
        return batch_for(self.config, self.input_shape, "NCHW")

    def infer(self, batch: Any) -> Any:
        return self.session.run(None, {self.input_name: batch})[0]

    def environment(self) -> dict[str, Any]:
        ort = self.ort
        meta = common.read_sidecar(getattr(self, "model_path", None))
        options = getattr(self, "options", None)
        env: dict[str, Any] = {
            "runtime": self.runtime,
            "version": ort.__version__,
            "device": ort.get_device(),
            "precision": self.config.precision,
            "providers": self.session.get_providers() if hasattr(self, "session") else None,
            "available_providers": ort.get_available_providers(),
            "graph_optimization_level": str(options.graph_optimization_level) if options else None,
            "execution_mode": str(options.execution_mode) if options else None,
            "threads_requested": self.config.threads,
            "intra_op_num_threads": (options.intra_op_num_threads or "default (0: one per physical core)")
            if options
            else None,
            "os_threads": common.os_threads(),
            "exporter": meta.get("exporter"),
            "opset": meta.get("opset"),
        }
        if self.config.precision == "int8":
            env["int8"] = INT8_NOTE
        return env


def zoo_onnx_export(config: RunConfig, cache_dir: Path) -> Path:
    """The zoo model's fp32 ONNX export, as onnxruntime runs it (prepared into `cache_dir` if
    missing): the one graph the OpenVINO and MNN converters start from, so all three run the
    same weights."""
    return OnnxRuntimeAdapter.prepare(
        RunConfig(framework="onnxruntime", model=config.model, seed=config.seed), cache_dir
    )


def _export_zoo(config: RunConfig, target: Path) -> None:
    """Export the seeded PyTorch zoo model to `target` with a dynamic batch axis; write its sidecar."""
    try:
        import torch

        from edgestats.collectors.zoo.torch_models import build_torch, count_flops, count_params
    except ImportError as exc:
        raise FrameworkMissingError(
            f"exporting zoo model {config.model!r} to ONNX needs PyTorch ({exc}): "
            "pip install 'edgestats[torch]' on this machine, or pass an .onnx file"
        ) from None
    spec = zoo_model(config.model)
    model = build_torch(config.model, seed=config.seed)
    dynamo = importlib.util.find_spec("onnxscript") is not None
    kwargs: dict[str, Any] = {
        "input_names": ["input"],
        "output_names": ["output"],
        "dynamic_axes": {"input": {0: "batch"}, "output": {0: "batch"}},
        "dynamo": dynamo,
    }
    if dynamo:
        kwargs["external_data"] = False  # one self-contained file (the zoo's largest is far below 2 GB)
    with (
        common.atomic_target(target) as tmp,
        warnings.catch_warnings(),
        contextlib.redirect_stdout(io.StringIO()),
    ):
        warnings.simplefilter("ignore")  # the TorchScript exporter's deprecation and tracer warnings
        torch.onnx.export(model, (torch.zeros(spec.input_shape_nchw(1)),), str(tmp), **kwargs)
    common.write_sidecar(
        target,
        model=config.model,
        seed=config.seed,
        params=count_params(model),
        flops=count_flops(model, spec.input_shape_nchw(1)),
        input_shape=list(spec.input_shape_nchw(1)[1:]),
        exporter=f"torch.onnx.export ({'dynamo' if dynamo else 'TorchScript-based, dynamo=False'}; "
        f"torch {torch.__version__})",
        opset=_opset(target),
    )


def _count_initializers(path: Path) -> int | None:
    """Elements of the float initializers, counted once per use: the torch exporter stores
    identical tensors (e.g. zero biases) once and shares them, which counting by use undoes.
    BatchNorm folded into convolutions is not undone, so this approximates the source model's
    trainable parameters. None without the onnx package, or for a file onnx cannot parse (the
    worker's load_model then reports what is wrong with it, as a measured run's error)."""
    try:
        import onnx

        graph = onnx.load(str(path), load_external_data=False).graph
    except Exception:
        return None
    floats = {
        onnx.TensorProto.FLOAT,
        onnx.TensorProto.FLOAT16,
        onnx.TensorProto.BFLOAT16,
        onnx.TensorProto.DOUBLE,
    }
    sizes = {}
    for init in graph.initializer:
        if init.data_type in floats:
            size = 1
            for d in init.dims:
                size *= d
            sizes[init.name] = size
    return sum(sizes.get(name, 0) for node in graph.node for name in node.input)


def _opset(path: Path) -> int | None:
    try:
        import onnx

        model = onnx.load(str(path), load_external_data=False)
    except Exception:
        return None
    return next((op.version for op in model.opset_import if op.domain in ("", "ai.onnx")), None)


def probe_detail(ort: Any) -> dict[str, Any]:
    """doctor's facts about an imported ONNX Runtime: its execution providers and device."""
    return {"providers": list(ort.get_available_providers()), "device": ort.get_device()}
