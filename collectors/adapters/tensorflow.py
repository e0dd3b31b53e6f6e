"""TensorFlow 2 with Keras 3: a .keras model run as a compiled tf.function (graph) or eagerly.

prepare() builds the zoo model with zoo.keras_models (seeded) and saves it as .keras into the cache;
load_model is keras.models.load_model. A user's .keras/.h5 file loads the same way; a SavedModel
directory loads with tf.saved_model.load and runs its serving_default signature (already a graph).

Runtimes: tf-function (default) wraps the model call in tf.function with a fixed input signature
(batch dimension free), so the first inference traces the graph and later ones run it; tf-eager
calls the Keras model op by op. Every result is turned into numpy, so the work has finished.
Only fp32: TensorFlow has no post-training int8 path outside TFLite, and Keras mixed precision is
a property of how a model is built and speeds up only on GPUs.
"""

from __future__ import annotations

import os
import sys
import warnings
from pathlib import Path
from typing import Any

from edgestats.collectors.adapters import common
from edgestats.collectors.adapters.base import Adapter, ModelInfo
from edgestats.collectors.adapters.inputs import AcceleratorError, batch_for
from edgestats.collectors.core.runconfig import RunConfig
from edgestats.collectors.zoo.catalog import KERAS_CUSTOM_LAYER_MODELS, is_zoo_model, zoo_model

SUFFIXES = (".keras", ".h5")


def quiet_tensorflow_env() -> None:
    """Before importing TensorFlow: no C++ INFO/WARNING chatter; Keras 3 on the TF backend."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    os.environ["KERAS_BACKEND"] = "tensorflow"


def keras_zoo_facts(config: RunConfig, model: Any) -> dict[str, Any]:
    """The sidecar's facts of a built Keras zoo model (saved here, converted by tflite): FLOPs
    counted on the PyTorch zoo model, one sample's shape NHWC."""
    from edgestats.collectors.zoo.keras_models import count_params_keras

    return {
        "model": config.model,
        "seed": config.seed,
        "params": count_params_keras(model),
        "flops": common.zoo_flops(config.model, config.seed),
        "input_shape": list(zoo_model(config.model).input_shape_nhwc(1)[1:]),
    }


class TensorFlowAdapter(Adapter):
    framework = "tensorflow"
    runtimes = ("tf-function", "tf-eager")

    @classmethod
    def check_config(cls, config: RunConfig) -> str | None:
        why = {
            "int8": "TensorFlow has no post-training int8 outside TFLite "
            "(use --framework tflite --precision int8)",
            "fp16": "Keras mixed precision is fixed when a model is built and speeds up GPUs only; "
            "not offered by this adapter",
        }
        return (
            super().check_config(config)
            or common.accelerator_problem(cls.framework, config, ("cpu", "cuda"))
            or common.precision_problem(cls.framework, config, ("fp32",), why)
            or common.model_problem(cls.framework, config, SUFFIXES, allow_dir=True)
        )

    @classmethod
    def prepare_needs(cls, config: RunConfig) -> tuple[str, ...]:
        return ("tensorflow",) if is_zoo_model(config.model) else ()  # the Keras zoo model, built and saved

    @classmethod
    def prepare(cls, config: RunConfig, cache_dir: Path) -> Path | None:
        if not is_zoo_model(config.model):
            return None
        quiet_tensorflow_env()
        from edgestats.collectors.zoo.keras_models import build_keras

        target = Path(cache_dir) / f"{config.model}-seed{config.seed}.keras"
        if common.is_prepared(target):
            return target
        model = build_keras(config.model, seed=config.seed)
        with common.atomic_target(target) as tmp, warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)  # Keras' own numpy-2 copy= warning
            model.save(str(tmp))
        common.write_sidecar(target, **keras_zoo_facts(config, model))
        return target

    # -- the measured phases ---------------------------------------------------------------------

    def import_framework(self) -> dict[str, str]:
        quiet_tensorflow_env()
        import tensorflow as tf

        self.tf = tf
        self._thread_notes: dict[str, Any] = {}
        threads = self.config.threads
        try:  # only before the TF runtime initialises (always so in a fresh worker)
            if threads:
                tf.config.threading.set_intra_op_parallelism_threads(int(threads))
                tf.config.threading.set_inter_op_parallelism_threads(
                    int(self.config.extra.get("interop_threads", threads))
                )
            if self.config.accelerator == "cpu":  # TF would place ops on a GPU by default
                tf.config.set_visible_devices([], "GPU")
        except RuntimeError as exc:
            self._thread_notes["threads_not_set"] = str(exc).splitlines()[0]
        if self.config.accelerator == "cuda" and not tf.config.list_physical_devices("GPU"):
            raise AcceleratorError(
                f"--accelerator cuda, but tensorflow {tf.__version__} sees no GPU "
                f"(built with CUDA: {tf.test.is_built_with_cuda()}; tensorflow-cpu never is)"
            )
        import keras

        self.keras = keras
        versions = {"tensorflow": tf.__version__, "keras": keras.__version__}
        if "numpy" in sys.modules:
            versions["numpy"] = sys.modules["numpy"].__version__
        return versions

    def load_model(self) -> ModelInfo:
        tf, keras = self.tf, self.keras
        path = common.artifact_file(self)
        meta = common.read_sidecar(path)
        params = meta.get("params")
        if path.is_dir():  # a SavedModel: its serving signature is a graph already
            loaded = tf.saved_model.load(str(path))
            signature = loaded.signatures["serving_default"]
            name, spec = next(iter(signature.structured_input_signature[1].items()))
            self._model, self.format, known = loaded, "saved_model", tuple(spec.shape[1:])
            variables = getattr(loaded, "trainable_variables", None)  # only if the SavedModel tracked them
            if params is None and variables:
                params = sum(v.shape.num_elements() for v in variables)
        else:
            if meta.get("model") in KERAS_CUSTOM_LAYER_MODELS:
                import edgestats.collectors.zoo.keras_models  # noqa: F401  registers its layers so the file loads
            model = keras.models.load_model(str(path), compile=False)
            self._model, self.format, known = model, "keras", tuple(model.input_shape[1:])
            if params is None:
                params = int(sum(int(tf.size(w)) for w in model.trainable_weights))
        if meta.get("input_shape"):
            known = tuple(meta["input_shape"])
        self.input_shape = common.resolve_input_shape(self.config, known, path.name)
        if self.format == "saved_model":
            self._call = lambda x: next(iter(signature(**{name: x}).values()))
        elif self.runtime == "tf-eager":
            self._call = lambda x: model(x, training=False)
        else:  # traced on the first inference; the free batch dimension means no retracing later
            spec = tf.TensorSpec((None, *self.input_shape), tf.float32)
            self._call = tf.function(
                lambda x: model(x, training=False),
                input_signature=[spec],
                jit_compile=bool(self.config.extra.get("jit_compile", False)),
            )
        return ModelInfo(
            params=params,
            flops=meta.get("flops"),
            input_shape=self.input_shape,
            file=str(path),
            file_bytes=common.file_bytes(path),
        )

    def load_input(self) -> Any:
        return self.tf.constant(batch_for(self.config, self.input_shape, "NHWC"))

    def infer(self, batch: Any) -> Any:
        return self._call(batch).numpy()  # .numpy() waits for the result (and copies it to the host)

    def environment(self) -> dict[str, Any]:
        tf = self.tf
        env: dict[str, Any] = {
            "runtime": self.runtime,
            "model_format": getattr(self, "format", None),
            "precision": self.config.precision,
            "keras_backend": os.environ.get("KERAS_BACKEND"),
            "jit_compile": bool(self.config.extra.get("jit_compile", False))
            and self.runtime == "tf-function",
            "threads_requested": self.config.threads,
            "intra_op_parallelism_threads": tf.config.threading.get_intra_op_parallelism_threads(),
            "inter_op_parallelism_threads": tf.config.threading.get_inter_op_parallelism_threads(),
            "os_threads": common.os_threads(),
            "TF_ENABLE_ONEDNN_OPTS": os.environ.get("TF_ENABLE_ONEDNN_OPTS"),
            "onednn_enabled": _onednn_enabled(),
            "devices": [d.name for d in tf.config.list_logical_devices()],
            "build_info": {k: str(v) for k, v in tf.sysconfig.get_build_info().items()},
            **getattr(self, "_thread_notes", {}),
        }
        return env


def _onednn_enabled() -> bool | None:
    """Whether TF's oneDNN (MKL) kernels are on: the default on x86 Linux since TF 2.9 unless
    TF_ENABLE_ONEDNN_OPTS=0. Asked of TF's private util when it has one, else None."""
    try:
        from tensorflow.python.util import _pywrap_util_port  # private, may move

        return bool(_pywrap_util_port.IsMklEnabled())
    except Exception:
        return None


def probe_detail(tf: Any) -> dict[str, Any]:
    """doctor's facts about an imported TensorFlow: its GPUs and whether it was built with CUDA."""
    return {
        "gpus": [d.name for d in tf.config.list_physical_devices("GPU")],
        "built_with_cuda": bool(tf.test.is_built_with_cuda()),
    }
