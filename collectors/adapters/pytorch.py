"""PyTorch: eager nn.Module (weights from a state_dict), TorchScript, or torch.compile.

prepare() builds the zoo model with its seed and saves, into the cache directory,
  torch-eager:  the state_dict (torch.save); load_model rebuilds the architecture from zoo.torch_models
                and loads the weights with torch.load(weights_only=True), as an application
                shipping its model class plus a weights file does;
  torchscript:  a traced module (torch.jit.trace on a batch of 2, so no size-1 specialisation);
                load_model is torch.jit.load.
  torch-compile: the eager model (same state_dict file) wrapped by torch.compile (inductor,
                dynamic=False: one batch size per run). torch compiles on the first call, so
                compile() makes that call on a zero batch of the run's shape, in a `compile`
                phase of its own (worker.py); first_inference then runs compiled code. On the
                CPU inductor writes and builds C++, so it needs a C++ compiler (checked in
                load_model).
int8 is dynamic quantization (torch.ao.quantization.quantize_dynamic): only nn.Linear layers are
quantized, convolutions stay fp32, so for CNNs it mostly changes the classifier. For eager it is
applied in load_model (its cost is part of loading); a ScriptModule cannot be quantized, so for
torchscript the zoo model is quantized in prepare() and then traced.

A user's file: a TorchScript archive (torch.jit.load), or a state_dict (torch.load with
weights_only=True, never an arbitrary pickle) for a zoo architecture named by extra architecture.
"""

from __future__ import annotations

import contextlib
import sys
import warnings
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from edgestats.collectors.adapters import common
from edgestats.collectors.adapters.base import Adapter, ModelInfo
from edgestats.collectors.adapters.inputs import AcceleratorError, ModelFileError, batch_for
from edgestats.collectors.core.runconfig import RunConfig
from edgestats.collectors.zoo.catalog import is_zoo_model, zoo_model

SUFFIXES = (".pt", ".pth", ".ts")
INT8_NOTE = (
    "dynamic quantization (torch.ao.quantization.quantize_dynamic, qint8): nn.Linear only; Conv2d stays fp32"
)


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    """torch 2.13 deprecates torch.jit and torch.ao.quantization; both still work. Keep the
    worker's log for real problems."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", category=DeprecationWarning)
        warnings.filterwarnings("ignore", message=".*quantize_per_tensor.*")
        yield


def _quantize(torch: Any, model: Any) -> Any:
    with _quiet():
        return torch.ao.quantization.quantize_dynamic(model, {torch.nn.Linear}, dtype=torch.qint8)


def _is_torchscript(path: Path) -> bool:
    """TorchScript archives carry code/ and constants.pkl; torch.save zips do not."""
    try:
        with zipfile.ZipFile(path) as archive:
            return any(n.endswith("/constants.pkl") or "/code/" in n for n in archive.namelist())
    except (zipfile.BadZipFile, OSError):
        return False


class PyTorchAdapter(Adapter):
    framework = "pytorch"
    runtimes = ("torch-eager", "torchscript", "torch-compile")

    def __init__(self, config: RunConfig, artifact: Path | None = None):
        super().__init__(config, artifact)
        user_file = Path(config.model)
        if config.runtime is None and not is_zoo_model(config.model) and user_file.is_file():
            self.runtime = "torchscript" if _is_torchscript(user_file) else "torch-eager"  # the file decides

    @classmethod
    def check_config(cls, config: RunConfig) -> str | None:
        problem = super().check_config(config) or common.accelerator_problem(
            cls.framework, config, ("cpu", "cuda")
        )
        if problem:
            return problem
        if config.accelerator == "cuda":
            supported, why = ("fp32", "fp16"), {"int8": "torch dynamic quantization has CPU kernels only"}
        else:
            supported, why = (
                ("fp32", "int8"),
                {
                    "fp16": "fp16 is a fast path on cuda only; on the CPU torch "
                    "lacks or emulates half kernels (use --accelerator cuda)"
                },
            )
        if config.runtime == "torch-compile":
            supported, why = (
                ("fp32",),
                {
                    **why,
                    "int8": "inductor does not compile torch's dynamically quantized "
                    "modules; run int8 under torch-eager or torchscript",
                    "fp16": "measured under torch-eager and torchscript only",
                },
            )
        return common.precision_problem(cls.framework, config, supported, why) or common.model_problem(
            cls.framework, config, SUFFIXES
        )

    @classmethod
    def prepare_needs(cls, config: RunConfig) -> tuple[str, ...]:
        return ("torch",) if is_zoo_model(config.model) else ()

    @classmethod
    def prepare(cls, config: RunConfig, cache_dir: Path) -> Path | None:
        if not is_zoo_model(config.model):
            return None  # a user's file is loaded as it is
        import torch

        from edgestats.collectors.zoo.torch_models import build_torch, count_flops, count_params

        runtime = config.runtime or cls.runtimes[0]
        spec = zoo_model(config.model)
        script = runtime == "torchscript"
        quantized = script and config.precision == "int8"
        suffix = (".int8" if quantized else "") + (".torchscript.pt" if script else ".state_dict.pt")
        target = Path(cache_dir) / f"{config.model}-seed{config.seed}{suffix}"
        if common.is_prepared(target):
            return target
        model = build_torch(config.model, seed=config.seed)
        info = {
            "model": config.model,
            "seed": config.seed,
            "params": count_params(model),
            "flops": count_flops(model, spec.input_shape_nchw(1)),
            "input_shape": list(spec.input_shape_nchw(1)[1:]),
            "format": "torchscript" if script else "state_dict",
            "int8_in_file": quantized,
        }
        with common.atomic_target(target) as tmp:
            if script:
                traced_model = _quantize(torch, model) if quantized else model
                with torch.no_grad(), _quiet():
                    traced = torch.jit.trace(traced_model, torch.zeros(spec.input_shape_nchw(2)))
                    traced.save(str(tmp))
            else:
                torch.save(model.state_dict(), tmp)
        common.write_sidecar(target, **info)
        return target

    # -- the measured phases ---------------------------------------------------------------------

    def import_framework(self) -> dict[str, str]:
        import torch

        self.torch = torch
        self._thread_notes: dict[str, Any] = {}
        if self.config.threads:
            torch.set_num_threads(int(self.config.threads))
            interop = int(self.config.extra.get("interop_threads", self.config.threads))
            try:
                torch.set_num_interop_threads(interop)
            except RuntimeError as exc:  # only settable once per process, before parallel work
                self._thread_notes["interop_threads_not_set"] = str(exc).splitlines()[0]
        if self.config.accelerator == "cuda" and not torch.cuda.is_available():
            raise AcceleratorError(
                f"--accelerator cuda, but torch {torch.__version__} sees no CUDA device "
                f"(built for CUDA {torch.version.cuda or 'none: a CPU-only wheel'})"
            )
        self.device = torch.device("cuda" if self.config.accelerator == "cuda" else "cpu")
        versions = {"torch": torch.__version__}
        if "numpy" in sys.modules:
            versions["numpy"] = sys.modules["numpy"].__version__
        if self.device.type == "cuda":
            versions["cuda"] = str(torch.version.cuda)
            versions["cudnn"] = str(torch.backends.cudnn.version())
        return versions

    def load_model(self) -> ModelInfo:
        torch = self.torch
        path = common.artifact_file(self)
        meta = common.read_sidecar(path)
        int8 = self.config.precision == "int8"
        if _is_torchscript(path):
            model, arch = self._load_torchscript(path, meta, int8)
        else:
            model, arch = self._load_state_dict(path, meta)
        if (self.format == "torchscript") != (self.runtime == "torchscript"):
            raise ModelFileError(
                f"{path.name} is a {self.format} file, which runtime {self.runtime} does not run; "
                f"use --runtime {'torchscript' if self.format == 'torchscript' else 'torch-eager'}"
            )
        model.eval()
        params = meta.get("params")
        if params is None:  # before quantization turns Linear weights into packed params
            params = sum(p.numel() for p in model.parameters())
        if int8 and self.format == "state_dict":
            model = _quantize(torch, model)
        model = model.to(self.device)
        if self.config.precision == "fp16":
            model = model.half()
        if self.runtime == "torch-compile":
            model = _compiled(torch, model, self.device.type)
        self.model = model
        known = meta.get("input_shape") or (
            zoo_model(arch).input_shape_nchw(1)[1:] if arch and is_zoo_model(arch) else None
        )
        self.input_shape = common.resolve_input_shape(self.config, tuple(known) if known else None, path.name)
        return ModelInfo(
            params=params,
            flops=meta.get("flops"),
            input_shape=self.input_shape,
            file=str(path),
            file_bytes=common.file_bytes(path),
        )

    def _load_torchscript(self, path: Path, meta: dict[str, Any], int8: bool) -> tuple[Any, str | None]:
        """A TorchScript archive, and the zoo architecture its sidecar names (None for a user's)."""
        if int8 and not meta.get("int8_in_file"):
            raise ModelFileError(
                f"{path.name} is TorchScript, which torch cannot quantize after the fact; "
                "quantize before scripting, or run fp32"
            )
        with _quiet():
            model = self.torch.jit.load(str(path), map_location="cpu")
        self.format = "torchscript"
        return model, meta.get("model")

    def _load_state_dict(self, path: Path, meta: dict[str, Any]) -> tuple[Any, str]:
        """The zoo architecture rebuilt and its weights loaded (weights_only=True), and its name."""
        torch = self.torch
        arch = meta.get("model") or self.config.extra.get("architecture")
        if not arch:
            raise ModelFileError(
                f"{path.name} is not TorchScript, so it holds weights without an architecture: "
                "pass extra architecture=<zoo model> for a state_dict, or save the model "
                "with torch.jit.save"
            )
        from edgestats.collectors.zoo.torch_models import build_torch

        model = build_torch(arch, seed=meta.get("seed", self.config.seed))
        try:
            state = torch.load(str(path), map_location="cpu", weights_only=True)
            model.load_state_dict(state)
        except Exception as exc:  # an unsafe pickle, or weights of another architecture
            raise ModelFileError(
                f"cannot load {path.name} as a {arch} state_dict with weights_only=True: "
                f"{str(exc).splitlines()[0][:300]}"
            ) from None
        self.format = "state_dict"
        return model, arch

    @property
    def compiles(self) -> bool:  # the worker's `compile` phase (base.Adapter)
        return self.runtime == "torch-compile"

    def compile(self) -> None:
        torch = self.torch
        dtype = torch.float16 if self.config.precision == "fp16" else torch.float32
        self.infer(torch.zeros((self.config.batch_size, *self.input_shape), dtype=dtype, device=self.device))

    def load_input(self) -> Any:
        batch = self.torch.from_numpy(batch_for(self.config, self.input_shape, "NCHW")).to(self.device)
        return batch.half() if self.config.precision == "fp16" else batch

    def infer(self, batch: Any) -> Any:
        with self.torch.inference_mode():
            out = self.model(batch)
        if self.device.type == "cuda":
            self.torch.cuda.synchronize()
            out = out.cpu()  # the result on the host, like the other frameworks' outputs
        return out

    def environment(self) -> dict[str, Any]:
        torch = self.torch
        env: dict[str, Any] = {
            "runtime": self.runtime,
            "model_format": getattr(self, "format", None),
            "device": str(getattr(self, "device", "cpu")),
            "precision": self.config.precision,
            "threads_requested": self.config.threads,
            "num_threads": torch.get_num_threads(),
            "num_interop_threads": torch.get_num_interop_threads(),
            "os_threads": common.os_threads(),
            "mkl_available": torch.backends.mkl.is_available(),
            "mkldnn_available": torch.backends.mkldnn.is_available(),
            "openmp_available": torch.backends.openmp.is_available(),
            "quantized_engine": torch.backends.quantized.engine,
            "parallel_info": torch.__config__.parallel_info(),
            "config": torch.__config__.show(),
            **getattr(self, "_thread_notes", {}),
        }
        if self.config.precision == "int8":
            env["int8"] = INT8_NOTE
        if self.runtime == "torch-compile":
            env["compile"] = {**COMPILE_OPTIONS, "cxx": cxx_compiler()}
        if getattr(self, "device", None) is not None and self.device.type == "cuda":
            env.update(
                cuda_device=torch.cuda.get_device_name(0),
                cudnn_enabled=torch.backends.cudnn.enabled,
                cudnn_benchmark=torch.backends.cudnn.benchmark,
                output="copied to host after synchronize",
            )
        return env


# -- torch.compile ---------------------------------------------------------------------------------

COMPILE_OPTIONS = {"backend": "inductor", "mode": "default", "dynamic": False, "fullgraph": False}


def cxx_compiler() -> str | None:
    """The C++ compiler inductor would use on the CPU ($CXX, else g++, clang++, c++), or None."""
    import os
    import shutil

    for name in (os.environ.get("CXX"), "g++", "clang++", "c++"):
        if name and shutil.which(name):
            return shutil.which(name)
    return None


def _compiled(torch: Any, model: Any, device_type: str) -> Any:
    if device_type == "cpu" and cxx_compiler() is None:
        raise ModelFileError(
            "--runtime torch-compile on the CPU needs a C++ compiler (inductor builds the "
            "kernels it generates): apt install g++ (or set CXX), or use --runtime torch-eager"
        )
    return torch.compile(model, **COMPILE_OPTIONS)


# -- doctor ----------------------------------------------------------------------------------------


def _scriptable(x):  # TorchScript compiles from source, so this must live in a real file
    return x * 2 + 1


def probe_detail(torch: Any) -> dict[str, Any]:
    """doctor's facts about an imported torch: CUDA, threads, whether TorchScript still compiles."""
    from edgestats.collectors.host.probes import first_line

    detail: dict[str, Any] = {
        "cuda_available": bool(torch.cuda.is_available()),
        "cuda_version": torch.version.cuda,
        "num_threads": torch.get_num_threads(),
    }
    if detail["cuda_available"]:
        detail["cuda_device"] = torch.cuda.get_device_name(0)
    detail["torch_compile_cxx"] = cxx_compiler()  # None: --runtime torch-compile cannot run on the CPU
    try:
        torch.jit.script(_scriptable)
        detail["torchscript"] = True
    except Exception as exc:  # TorchScript is deprecated and may be missing from a build
        detail.update(torchscript=False, torchscript_error=first_line(exc))
    return detail
