"""MNN: an .mnn model run by MNN's module API (MNN.nn.load_module_from_file) on its CPU backend.

prepare() exports the PyTorch zoo model to ONNX exactly as the onnxruntime adapter does (one
export serves ONNX Runtime, OpenVINO and MNN: the same weights) and converts it with MNN's
converter (`-f ONNX`, weights kept fp32: no --fp16). The converter is MNN's C++ extension
(`_tools.mnnconvert`) called in a child process: the `mnnconvert` entry point would also upload a
usage log to Alibaba's servers after converting, and the converter prints to the C-level stdout,
where prepare's own answer goes. A user's .mnn file is read where it is.

load_model creates a runtime manager for the CPU backend with numThread = --threads and
precision "high" (fp32: "low" lets MNN compute in fp16 or bf16 where the CPU has them), and
loads the module with the file's own input and output names. The batch is the ONNX export's
dynamic axis, fixed by the first input (MNN resizes the graph on the first call, which is part of
first_inference, as in an application). infer is module.forward, then read() of the output,
which waits for the backend and copies the result to the host.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any, ClassVar

from edgestats.collectors.adapters import common
from edgestats.collectors.adapters.converting import ConvertingAdapter, needs, run_converter
from edgestats.collectors.adapters.inputs import ModelFileError, batch_for
from edgestats.collectors.core.runconfig import RunConfig

USER_SUFFIXES = (".mnn",)
PRECISION_MODE = (
    "high"  # fp32 on every CPU: MNN's "normal" and "low" may use fp16/bf16 where the CPU has them
)
# its return value says nothing (True even for a missing input): success is the file and "Converted Success"
CONVERT = "import sys, _tools; _tools.mnnconvert(sys.argv)"


class MNNAdapter(ConvertingAdapter):
    framework = "mnn"
    runtimes = ("mnn",)
    user_suffixes = USER_SUFFIXES  # the worker reads a user's .mnn where it is
    precision_why_not: ClassVar[dict[str, str]] = {
        "int8": "MNN's int8 is offline quantization with calibration images (mnnquant); not offered",
        "fp16": "MNN computes fp16 only on CPUs with fp16 arithmetic (ARMv8.2), by precision mode",
    }
    converter_needs = ("torch", "MNN")
    artifact_template = "{model}-seed{seed}.fp32.mnn"

    @classmethod
    def convert(cls, config: RunConfig, cache_dir: Path, target: Path) -> None:
        _convert_zoo(config, cache_dir, target)

    # -- the measured phases ---------------------------------------------------------------------

    def import_framework(self) -> dict[str, str]:
        import MNN
        import MNN.expr
        import MNN.nn
        import numpy

        self.mnn, self.np = MNN, numpy
        return {"MNN": MNN.version(), "numpy": numpy.__version__}

    def open_model(self, path: Path) -> None:
        mnn = self.mnn
        self.runtime_config: dict[str, Any] = {"backend": "CPU", "precision": PRECISION_MODE}
        if self.config.threads:
            self.runtime_config["numThread"] = int(self.config.threads)
        manager = mnn.nn.create_runtime_manager((self.runtime_config,))
        try:  # empty names: the file's own inputs and outputs
            self.module = mnn.nn.load_module_from_file(str(path), [], [], runtime_manager=manager)
            self.info = self.module.get_info()
        except Exception as exc:  # MNN raises plain exceptions (or returns None) for a file it cannot read
            raise ModelFileError(
                f"MNN cannot load {path.name}: {str(exc).splitlines()[0][:300] if str(exc) else exc!r}"
            ) from None
        if (
            self.module is None
            or len(self.info.get("inputNames", [])) != 1
            or not self.info.get("outputNames")
        ):
            raise ModelFileError(
                f"{path.name}: edgestats feeds one image batch and reads one output "
                f"(inputs {self.info.get('inputNames') if self.module else '?'})"
            )
        self.manager = manager

    def file_sample_shape(self, path: Path, loaded: None) -> tuple[Any, ...] | None:
        return _file_input_shape(self.mnn, path, self.info)

    def load_input(self) -> Any:
        batch = self.np.ascontiguousarray(batch_for(self.config, self.input_shape, "NCHW"))
        return self.mnn.expr.const(batch, list(batch.shape), self.mnn.expr.NCHW)

    def infer(self, batch: Any) -> Any:
        expr = self.mnn.expr
        out = self.module.forward([batch])[0]
        if out.data_format == expr.NC4HW4:  # MNN's packed layout: back to what the model's caller sees
            out = expr.convert(out, expr.NCHW)
        return self.np.array(out.read())  # read() waits for the backend; the copy outlives the Var

    def environment(self) -> dict[str, Any]:
        mnn = self.mnn
        info = getattr(self, "info", None) or {}
        meta = common.read_sidecar(getattr(self, "model_path", None))
        return {
            "runtime": self.runtime,
            "version": mnn.version(),
            "device": "CPU",
            "backend": "CPU",
            "api": "MNN.nn module (load_module_from_file, runtime manager)",
            "precision": self.config.precision,
            "precision_mode": PRECISION_MODE,
            "threads_requested": self.config.threads,
            "requested": getattr(self, "runtime_config", None),
            "os_threads": common.os_threads(),
            "model_version": info.get("version"),
            "biz_code": info.get("bizCode"),
            "converter": meta.get("converter"),
            "exporter": meta.get("exporter"),
        }


def _convert_zoo(config: RunConfig, cache_dir: Path, target: Path) -> None:
    """The zoo model's ONNX export (shared with onnxruntime) converted to an fp32 .mnn."""
    from edgestats.collectors.adapters.onnxruntime import zoo_onnx_export

    onnx_file = zoo_onnx_export(config, cache_dir)
    with needs(
        f"converting {config.model!r} to MNN needs MNN", "pip install 'edgestats[mnn]' on this machine"
    ):
        import MNN
    with common.atomic_target(target) as tmp:
        run_converter(
            [
                sys.executable,
                "-c",
                CONVERT,
                "-f",
                "ONNX",
                "--modelFile",
                str(onnx_file),
                "--MNNModel",
                str(tmp),
                "--bizCode",
                "edgestats",
            ],
            f"MNN's converter could not convert {onnx_file.name}",
            lambda done: tmp.is_file() and "Converted Success" in done.stdout,
            env={**os.environ, "PYTHONWARNINGS": "ignore"},
        )
    common.write_sidecar(
        target,
        **common.read_sidecar(onnx_file),
        converter=f"MNN converter {MNN.version()} (-f ONNX, fp32 weights) from the ONNX export",
    )


def _file_input_shape(mnn: Any, path: Path, info: dict[str, Any]) -> tuple[Any, ...] | None:
    """One sample's shape as a user's .mnn records it for its input (None where it does not)."""
    try:
        var = mnn.expr.load_as_dict(str(path))[info["inputNames"][0]]
        return tuple(var.shape[1:]) if len(var.shape) > 1 else None
    except Exception:  # a graph that stores no shape for its input: input_shape is then asked for
        return None
