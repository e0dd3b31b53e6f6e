"""TensorFlow Lite (LiteRT): a .tflite flatbuffer run by the interpreter.

prepare() converts the Keras zoo model (zoo.keras_models, seeded) with tf.lite.TFLiteConverter
.from_keras_model; int8 is dynamic-range quantization (Optimize.DEFAULT: int8 weights, float
activations quantized on the fly by the kernels that support it). Conversion needs TensorFlow,
which is fine there: prepare() is a separate process. The worker imports only an interpreter:
ai_edge_litert (LiteRT) when installed, else tflite_runtime (older Raspberry Pi images), else
tf.lite from full TensorFlow; which one is recorded.

load_model creates Interpreter(model_path, num_threads) and allocates tensors for the run's
batch size; XNNPACK is the interpreter's default CPU delegate (extra xnnpack=false runs the
builtin kernels instead). infer is set_tensor / invoke / get_tensor (a copy: work finished).
"""

from __future__ import annotations

import contextlib
import io
import os
import sys
from pathlib import Path
from typing import Any, ClassVar

from edgestats.collectors.adapters import common
from edgestats.collectors.adapters.converting import ConvertingAdapter, needs
from edgestats.collectors.adapters.inputs import FrameworkMissingError, ModelFileError, batch_for
from edgestats.collectors.core.runconfig import RunConfig
from edgestats.registry.runtimes import runtime

# ai_edge_litert, tflite_runtime, tensorflow: the registry entry's modules, tried in this order.
INTERPRETERS = tuple(dict.fromkeys(module.split(".")[0] for module in runtime("tflite").imports))


class TFLiteAdapter(ConvertingAdapter):
    framework = "tflite"
    runtimes = ("tflite",)
    user_suffixes = (".tflite",)
    precisions = ("fp32", "int8")
    precision_why_not: ClassVar[dict[str, str]] = {
        "fp16": "TFLite float16 quantization only stores weights as fp16; the CPU interpreter "
        "dequantizes them and computes in fp32, and no GPU delegate is wired in"
    }
    converter_needs = ("tensorflow",)  # the Keras zoo model, built and converted
    artifact_template = "{model}-seed{seed}.{precision}.tflite"
    reads_user_sidecar = True  # a user's .tflite with a sidecar beside it takes its facts from it

    @classmethod
    def convert(cls, config: RunConfig, cache_dir: Path, target: Path) -> None:
        from edgestats.collectors.adapters.tensorflow import keras_zoo_facts, quiet_tensorflow_env

        quiet_tensorflow_env()
        with needs(
            f"converting zoo model {config.model!r} to .tflite needs TensorFlow",
            "pip install 'edgestats[tensorflow]' on this machine, or pass a .tflite file",
        ):
            import tensorflow as tf

            from edgestats.collectors.zoo.keras_models import build_keras
        model = build_keras(config.model, seed=config.seed)
        converter = tf.lite.TFLiteConverter.from_keras_model(model)
        if config.precision == "int8":
            converter.optimizations = [tf.lite.Optimize.DEFAULT]
        with contextlib.redirect_stdout(io.StringIO()):  # Keras prints the SavedModel it exports
            flatbuffer = converter.convert()
        with common.atomic_target(target) as tmp:
            tmp.write_bytes(flatbuffer)
        common.write_sidecar(
            target,
            **keras_zoo_facts(config, model),
            converter=f"tf.lite.TFLiteConverter.from_keras_model (tensorflow {tf.__version__})",
            quantization="dynamic-range int8 (Optimize.DEFAULT)" if config.precision == "int8" else None,
        )

    # -- the measured phases ---------------------------------------------------------------------

    def import_framework(self) -> dict[str, str]:
        errors = []
        for name in INTERPRETERS:
            try:
                if name == "tensorflow":
                    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
                    import tensorflow as tf  # tf.lite.Interpreter: deprecated for LiteRT, still there

                    self.interpreter_module, version = tf.lite, tf.__version__
                else:
                    module = __import__(f"{name}.interpreter", fromlist=["Interpreter"])
                    self.interpreter_module = module
                    version = getattr(sys.modules[name], "__version__", None) or _dist_version(name)
            except ImportError as exc:
                errors.append(str(exc))
                continue
            self.backend = "tensorflow.lite" if name == "tensorflow" else f"{name}.interpreter"
            versions = {name: str(version)}
            if "numpy" in sys.modules:
                versions["numpy"] = sys.modules["numpy"].__version__
            return versions
        raise FrameworkMissingError("no TFLite interpreter importable: " + "; ".join(errors))

    def open_model(self, path: Path) -> Any:
        kwargs: dict[str, Any] = {"model_path": str(path), "num_threads": self.config.threads}
        self.xnnpack = bool(self.config.extra.get("xnnpack", True))
        if not self.xnnpack:
            module = self.interpreter_module  # tf.lite keeps the enum under tf.lite.experimental
            resolver = getattr(module, "OpResolverType", None) or module.experimental.OpResolverType
            kwargs["experimental_op_resolver_type"] = resolver.BUILTIN_WITHOUT_DEFAULT_DELEGATES
        try:
            interpreter = self.interpreter_module.Interpreter(**kwargs)
        except ValueError as exc:
            raise ModelFileError(f"cannot load {path.name} as a TFLite model: {exc}") from None
        self.input_detail = interpreter.get_input_details()[0]
        self.output_index = interpreter.get_output_details()[0]["index"]
        return interpreter

    def file_sample_shape(self, path: Path, loaded: Any) -> tuple[int, ...]:
        return tuple(int(d) for d in self.input_detail["shape_signature"])[1:]

    def fix_batch(self, loaded: Any) -> None:
        wanted = [self.config.batch_size, *self.input_shape]
        if list(self.input_detail["shape"]) != wanted:
            loaded.resize_tensor_input(self.input_detail["index"], wanted)
        loaded.allocate_tensors()
        self.interpreter = loaded

    def load_input(self) -> Any:
        import numpy as np

        batch = batch_for(self.config, self.input_shape, "NHWC")
        dtype = self.input_detail["dtype"]
        if dtype != np.float32:  # a fully integer model: quantize the input as the model says
            scale, zero_point = self.input_detail["quantization"]
            if not scale:
                raise ModelFileError(
                    f"the model takes {np.dtype(dtype).name} input without quantization parameters"
                )
            info = np.iinfo(dtype)
            batch = np.clip(np.round(batch / scale + zero_point), info.min, info.max).astype(dtype)
        return batch

    def infer(self, batch: Any) -> Any:
        self.interpreter.set_tensor(self.input_detail["index"], batch)
        self.interpreter.invoke()
        return self.interpreter.get_tensor(self.output_index)

    def environment(self) -> dict[str, Any]:
        return {
            "runtime": self.runtime,
            "interpreter": getattr(self, "backend", None),
            "precision": self.config.precision,
            "threads_requested": self.config.threads,
            "num_threads": self.config.threads if self.config.threads else "interpreter default (-1)",
            "os_threads": common.os_threads(),
            "delegate": (
                "XNNPACK (the interpreter's default CPU delegate)"
                if getattr(self, "xnnpack", True)
                else "none: builtin kernels (extra xnnpack=false)"
            ),
            "input_dtype": getattr(getattr(self, "input_detail", {}).get("dtype"), "__name__", None),
            "tensors": len(self.interpreter.get_tensor_details()) if hasattr(self, "interpreter") else None,
        }


def _dist_version(name: str) -> str | None:
    import importlib.metadata

    for dist in (name.replace("_", "-"), name):
        try:
            return importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            continue
    return None


def probe_detail(module: Any) -> dict[str, Any]:
    """doctor's facts about the interpreter that imported: which backend, and that a full
    TensorFlow really carries tf.lite (else doctor tries the next module)."""
    if module.__name__ == "tensorflow":
        if getattr(getattr(module, "lite", None), "Interpreter", None) is None:
            from edgestats.collectors.host.probes import Unusable

            raise Unusable(f"tensorflow {module.__version__} has no tf.lite.Interpreter")
        return {"backend": "tensorflow.lite"}
    return {"backend": module.__name__.split(".")[0]}  # ai_edge_litert or tflite_runtime
