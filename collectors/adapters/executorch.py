"""ExecuTorch: a .pte program, XNNPACK-delegated, run by ExecuTorch's Python runtime bindings.

prepare() exports the seeded PyTorch zoo model with torch.export at the run's batch size (a
static shape), lowers it with to_edge_transform_and_lower and the XnnpackPartitioner (every op of
the zoo models runs in the XNNPACK delegate, fp32) and writes the program's buffer. The batch is
part of the file, so it is part of the cache key (`artifact_fields`): one .pte per batch size, as
an application ships its model. Not a dynamic batch axis: with one, XNNPACK re-plans its graph
on every call (squeezenet, one thread, here: 89 ms per inference against 16 ms static), and
while lowering, torch 2.13's fake convolution guards `batch < 16` on the example input, which
narrows the dynamic range to one side of 16. A user's .pte is read as it is (its `forward`
method); its planned input fixes the batch it takes.

load_model sets the runtime's thread pool to --threads (XNNPACK runs its kernels on it), loads
the program and its `forward` method. infer is Method.execute on a torch tensor, which returns
when the outputs are written.
"""

from __future__ import annotations

import contextlib
import io
import logging
import warnings
from pathlib import Path
from typing import Any, ClassVar

from edgestats.collectors.adapters import common
from edgestats.collectors.adapters.converting import ConvertingAdapter, needs
from edgestats.collectors.adapters.inputs import ModelFileError, batch_for
from edgestats.collectors.core.runconfig import RunConfig
from edgestats.collectors.zoo.catalog import zoo_model

USER_SUFFIXES = (".pte",)


class ExecuTorchAdapter(ConvertingAdapter):
    framework = "executorch"
    runtimes = ("executorch",)
    artifact_fields = ("batch_size",)  # the program's input shape is static
    user_suffixes = USER_SUFFIXES  # the worker reads a user's .pte where it is
    precision_why_not: ClassVar[dict[str, str]] = {
        "int8": "XNNPACK int8 needs PT2E static quantization with calibration data; not offered",
        "fp16": "the XNNPACK delegate runs fp16 only from an fp16-exported model; not offered",
    }
    converter_needs = ("torch", "executorch")
    artifact_template = "{model}-seed{seed}-b{batch_size}.fp32.xnnpack.pte"

    @classmethod
    def convert(cls, config: RunConfig, cache_dir: Path, target: Path) -> None:
        _export_zoo(config, target)

    # -- the measured phases ---------------------------------------------------------------------

    def import_framework(self) -> dict[str, str]:
        import numpy
        import torch

        with warnings.catch_warnings():  # the bindings warn, on import, that their API is experimental
            warnings.filterwarnings("ignore", message="This API is experimental")
            import executorch
            from executorch.extension.pybindings import portable_lib
            from executorch.runtime import Runtime

        self.torch, self.np, self.portable_lib = torch, numpy, portable_lib
        if self.config.threads:  # XNNPACK's kernels run on this pool; its default is one thread per core
            portable_lib._unsafe_reset_threadpool(int(self.config.threads))
        self.et_runtime = Runtime.get()
        return {"executorch": _version(executorch), "torch": torch.__version__, "numpy": numpy.__version__}

    def open_model(self, path: Path) -> tuple[int, ...]:
        try:
            program = self.et_runtime.load_program(path)
            self.method = program.load_method("forward")
        except Exception as exc:  # the bindings raise RuntimeError with the runtime's error code
            raise ModelFileError(
                f"executorch cannot load {path.name}: "
                f"{str(exc).splitlines()[0][:300] if str(exc) else type(exc).__name__}"
            ) from None
        if self.method is None:
            raise ModelFileError(f"{path.name} has no method 'forward'")
        info = self.method.metadata
        if info.num_inputs() != 1:
            raise ModelFileError(
                f"{path.name} takes {info.num_inputs()} inputs; edgestats feeds one image batch"
            )
        planned = tuple(info.input_tensor_meta(0).sizes())
        self.planned_batch = planned[0] if planned else None
        if self.planned_batch is not None and self.config.batch_size > self.planned_batch:
            raise ModelFileError(
                f"{path.name} takes batches of at most {self.planned_batch} (its planned input); "
                f"run it with --batch-size {self.planned_batch} or export it for {self.config.batch_size}"
            )
        self.program = program
        return planned

    def file_sample_shape(self, path: Path, loaded: tuple[int, ...]) -> tuple[int, ...]:
        return loaded[1:]  # the planned input's

    def load_input(self) -> Any:
        return self.torch.from_numpy(
            self.np.ascontiguousarray(batch_for(self.config, self.input_shape, "NCHW"))
        )

    def infer(self, batch: Any) -> Any:
        return self.method.execute([batch])[0]

    def environment(self) -> dict[str, Any]:
        import executorch

        meta = common.read_sidecar(getattr(self, "model_path", None))
        registry = self.et_runtime.backend_registry
        return {
            "runtime": self.runtime,
            "version": _version(executorch),
            "torch": self.torch.__version__,
            "device": "CPU",
            "backend": "XnnpackBackend (delegate)",
            "precision": self.config.precision,
            "threads_requested": self.config.threads,
            "threadpool_threads": self.portable_lib._threadpool_get_thread_count(),
            "os_threads": common.os_threads(),
            "planned_batch": getattr(self, "planned_batch", None),
            "xnnpack_available": registry.is_available("XnnpackBackend"),
            "exporter": meta.get("exporter"),
        }


def _export_zoo(config: RunConfig, target: Path) -> None:
    """torch.export of the seeded zoo model at the run's batch size, lowered to XNNPACK."""
    with needs(
        f"exporting {config.model!r} to ExecuTorch needs PyTorch and executorch",
        "pip install 'edgestats[executorch]' on this machine",
    ):
        import torch
        from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner
        from executorch.exir import to_edge_transform_and_lower

        from edgestats.collectors.zoo.torch_models import build_torch, count_flops, count_params
    import executorch

    shape = zoo_model(config.model).input_shape_nchw(config.batch_size)
    model = build_torch(config.model, seed=config.seed).eval()
    # torchao (imported by the XNNPACK backend) logs missing CUDA kernels, and exir warns about
    # deprecated pytree classes: noise in the prepare log of a CPU export
    with warnings.catch_warnings(), contextlib.redirect_stderr(io.StringIO()), _quiet_logging():
        warnings.simplefilter("ignore")
        exported = torch.export.export(model, (torch.zeros(shape),))
        lowered = to_edge_transform_and_lower(exported, partitioner=[XnnpackPartitioner()]).to_executorch()
    with common.atomic_target(target) as tmp:
        tmp.write_bytes(lowered.buffer)
    common.write_sidecar(
        target,
        model=config.model,
        seed=config.seed,
        params=count_params(model),
        flops=count_flops(model, (1, *shape[1:])),
        input_shape=list(shape[1:]),
        batch_size=config.batch_size,
        exporter=f"torch.export (torch {torch.__version__}, static batch {config.batch_size}) + "
        "to_edge_transform_and_lower with "
        f"XnnpackPartitioner (executorch {_version(executorch)}), fp32",
    )


@contextlib.contextmanager
def _quiet_logging():
    root = logging.getLogger()
    level = root.level
    root.setLevel(logging.ERROR)
    try:
        yield
    finally:
        root.setLevel(level)


def _version(executorch: Any) -> str:
    import importlib.metadata

    return getattr(executorch, "__version__", None) or importlib.metadata.version("executorch")


def probe_detail(runtime_module: Any) -> dict[str, Any]:
    """doctor's facts about an imported executorch.runtime: the backends its bindings carry."""
    return {"backends": sorted(runtime_module.Runtime.get().backend_registry.registered_backend_names)}
