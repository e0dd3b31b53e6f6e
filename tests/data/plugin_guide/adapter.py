"""numpyref: the zoo's cnn9 computed by NumPy alone, a reference runtime with no framework.

The plug-in guide's example runtime (docs/architecture.md §8): tests/test_plugin_guide.py writes
this file as collectors/adapters/numpyref.py in a copy of the repository.

prepare() draws cnn9's weights from the run's seed as Keras initialises them (Glorot uniform, zero
biases) and saves them as .npz; the worker loads that file and runs the seven 3x3 'valid'
convolutions with ReLU and the dense layer as NumPy array operations, on NHWC input. The module
imports nothing but the standard library and edgestats until import_framework(), so the worker's
import phase is NumPy's alone.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from edgestats.collectors.adapters import common
from edgestats.collectors.adapters.base import Adapter, ModelInfo
from edgestats.collectors.core.runconfig import RunConfig
from edgestats.collectors.zoo.catalog import zoo_model

MODELS = ("cnn9",)  # the zoo models it computes
WIDTHS = (3, 16, 16, 32, 32, 64, 64, 1)  # cnn9's channels, input to last conv (zoo/torch_models.py)
KERNEL = 3


class NumpyRefAdapter(Adapter):
    framework = "numpyref"
    runtimes = ("numpyref",)

    @classmethod
    def check_config(cls, config: RunConfig) -> str | None:
        """Everything it cannot run is refused here, before any run: an unknown runtime, accelerator,
        precision or model, and an input image (it feeds synthetic input only)."""
        return (
            super().check_config(config)
            or common.accelerator_problem(cls.framework, config, ("cpu",))
            or common.precision_problem(cls.framework, config, ("fp32",), {})
            or (
                None
                if config.model in MODELS
                else f"{config.model!r}: {cls.framework} computes only the zoo's {', '.join(MODELS)}"
            )
            or (f"{cls.framework} feeds synthetic input only, not {config.input!r}" if config.input else None)
        )

    @classmethod
    def prepare_needs(cls, config: RunConfig) -> tuple[str, ...]:
        return ("numpy",)

    @classmethod
    def prepare(cls, config: RunConfig, cache_dir: Path) -> Path | None:
        target = Path(cache_dir) / f"{config.model}-seed{config.seed}.numpyref.npz"
        if not common.is_prepared(target):
            write_weights(config.seed, target)
        return target

    # -- the measured phases ---------------------------------------------------------------------

    def import_framework(self) -> dict[str, str]:
        import numpy

        self.np = numpy
        return {"numpy": numpy.__version__}

    def load_model(self) -> ModelInfo:
        path = common.artifact_file(self)
        with self.np.load(path) as arrays:
            weights = {key: arrays[key] for key in arrays.files}
        self.convs = [(weights[f"conv{i}_w"], weights[f"conv{i}_b"]) for i in range(len(WIDTHS) - 1)]
        self.dense = (weights["dense_w"], weights["dense_b"])
        shape = zoo_model(self.config.model).input_shape_nhwc(1)[1:]
        return ModelInfo(
            params=sum(int(w.size) for w in weights.values()),
            flops=cnn9_flops(shape[0]),
            input_shape=shape,
            file=str(path),
            file_bytes=common.file_bytes(path),
        )

    def load_input(self) -> Any:
        shape = zoo_model(self.config.model).input_shape_nhwc(self.config.batch_size)
        return self.np.random.default_rng(self.config.seed).random(shape, dtype=self.np.float32)

    def infer(self, batch: Any) -> Any:
        np, x = self.np, batch
        for weight, bias in self.convs:
            windows = np.lib.stride_tricks.sliding_window_view(x, (KERNEL, KERNEL), axis=(1, 2))
            x = np.maximum(np.tensordot(windows, weight, axes=([3, 4, 5], [2, 0, 1])) + bias, 0)
        weight, bias = self.dense
        return x.reshape(len(x), -1) @ weight + bias

    def environment(self) -> dict[str, Any]:
        environment: dict[str, Any] = {"runtime": self.runtime, "layout": "NHWC"}
        if self.config.threads:  # NumPy has no thread setting: its BLAS keeps what the process started with
            environment["threads_not_set"] = "NumPy has no thread setting"
        return environment


def cnn9_flops(side: int) -> int:
    """Multiply-adds x 2 of one sample: each valid 3x3 convolution shrinks the side by 2."""
    flops = 0
    for cin, cout in zip(WIDTHS, WIDTHS[1:]):
        side -= KERNEL - 1
        flops += 2 * side * side * KERNEL * KERNEL * cin * cout
    return flops + 2 * side * side * WIDTHS[-1] * 10


def write_weights(seed: int, target: Path) -> None:
    """cnn9's weights as Keras initialises them (Glorot uniform, zero biases), kernels (3, 3, in, out)."""
    import numpy as np

    rng = np.random.default_rng(seed)

    def glorot(shape: tuple[int, ...], fan_in: int, fan_out: int) -> Any:
        limit = (6 / (fan_in + fan_out)) ** 0.5
        return rng.uniform(-limit, limit, shape).astype(np.float32)

    arrays = {}
    for i, (cin, cout) in enumerate(zip(WIDTHS, WIDTHS[1:])):
        arrays[f"conv{i}_w"] = glorot((KERNEL, KERNEL, cin, cout), 9 * cin, 9 * cout)
        arrays[f"conv{i}_b"] = np.zeros(cout, np.float32)
    side = zoo_model("cnn9").input_hw[0] - (len(WIDTHS) - 1) * (KERNEL - 1)
    features = side * side * WIDTHS[-1]
    arrays["dense_w"], arrays["dense_b"] = glorot((features, 10), features, 10), np.zeros(10, np.float32)
    with common.atomic_target(target) as tmp:
        np.savez(tmp, **arrays)
    common.write_sidecar(target, model="cnn9", seed=seed)
