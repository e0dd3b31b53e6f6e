"""ncnn: a .param (graph) + .bin (weights) pair run by ncnn's Python bindings (ncnn.Net).

prepare() traces the seeded PyTorch zoo model on one sample (torch.jit.trace) and converts the
TorchScript with the pnnx executable (the `pnnx` wheel) into ncnn's .param and .bin, with fp16=0:
pnnx's default stores fp16 weights, which would measure another model. The executable is run
directly rather than through pnnx.export, which ignores the converter's exit status and then
imports the Python model pnnx writes beside it. A user's .param (its .bin beside it) is read
where it is.

load_model sets the Net's options before loading: num_threads = --threads; fp16 and bf16
storage, packing and arithmetic off (ncnn turns them on where the CPU has them, e.g. ARMv8.2:
the run would compute in half precision while recording fp32); Vulkan off (CPU only). ncnn has
no batch axis: a Mat is one sample (c, h, w), so infer runs one extractor per sample of the
batch, as an ncnn application does, and returns the outputs stacked, copied out of ncnn.
"""

from __future__ import annotations

import importlib.metadata
import os
import re
import tempfile
import warnings
from pathlib import Path
from typing import Any, ClassVar

from edgestats.collectors.adapters import common
from edgestats.collectors.adapters.converting import ConvertingAdapter, needs, run_converter
from edgestats.collectors.adapters.inputs import ModelFileError, batch_for
from edgestats.collectors.core.runconfig import RunConfig
from edgestats.collectors.zoo.catalog import zoo_model

USER_SUFFIXES = (".param",)
# ncnn's reduced-precision paths, all switched off so that fp32 is what runs
HALF_OPTIONS = (
    "use_fp16_packed",
    "use_fp16_storage",
    "use_fp16_arithmetic",
    "use_bf16_packed",
    "use_bf16_storage",
)
RECORDED_OPTIONS = (
    "num_threads",
    "lightmode",
    "use_packing_layout",
    "use_winograd_convolution",
    "use_sgemm_convolution",
    "use_vulkan_compute",
    *HALF_OPTIONS,
)


class NcnnAdapter(ConvertingAdapter):
    framework = "ncnn"
    runtimes = ("ncnn",)
    user_suffixes = USER_SUFFIXES  # the worker reads a user's .param and .bin where they are
    precision_why_not: ClassVar[dict[str, str]] = {
        "int8": "ncnn's int8 needs a calibration table from ncnn2table/ncnn2int8, which no pip wheel ships",
        "fp16": "ncnn's fp16 storage and arithmetic are CPU-dependent fast paths, not a model precision",
    }
    converter_needs = ("torch", "pnnx")
    artifact_template = "{model}-seed{seed}.fp32.ncnn.param"

    @classmethod
    def convert(cls, config: RunConfig, cache_dir: Path, target: Path) -> None:
        _convert_zoo(config, target)

    # -- the measured phases ---------------------------------------------------------------------

    def import_framework(self) -> dict[str, str]:
        import ncnn
        import numpy

        self.ncnn, self.np = ncnn, numpy
        return {"ncnn": ncnn.__version__, "numpy": numpy.__version__}

    def open_model(self, path: Path) -> None:
        weights = path.with_suffix(".bin")
        if not weights.is_file():
            raise ModelFileError(f"{path.name} needs its weights beside it as {weights.name}")
        net = self.ncnn.Net()
        if self.config.threads:
            net.opt.num_threads = int(self.config.threads)
        for option in HALF_OPTIONS:
            setattr(net.opt, option, False)
        net.opt.use_vulkan_compute = False
        if net.load_param(str(path)) != 0 or net.load_model(str(weights)) != 0:
            raise ModelFileError(
                f"ncnn cannot load {path.name} with {weights.name} (not an ncnn .param/.bin pair?)"
            )
        inputs, outputs = list(net.input_names()), list(net.output_names())
        if len(inputs) != 1 or not outputs:
            raise ModelFileError(
                f"{path.name} has {len(inputs)} inputs and {len(outputs)} outputs; "
                "edgestats feeds one image and reads one output"
            )
        self.net, self.input_name, self.output_name = net, inputs[0], outputs[0]

    def file_sample_shape(self, path: Path, loaded: None) -> tuple[int, ...] | None:
        return _param_input_shape(path)

    def companion_bytes(self, path: Path) -> int:
        return common.file_bytes(path.with_suffix(".bin"))  # the weights

    def load_input(self) -> Any:
        # A Mat made from an array shares its memory: keep the samples alive as long as the Mats
        self.samples = [
            self.np.ascontiguousarray(s) for s in batch_for(self.config, self.input_shape, "NCHW")
        ]
        return [self.ncnn.Mat(sample) for sample in self.samples]

    def infer(self, batch: Any) -> Any:
        outputs = []
        for mat in batch:
            extractor = self.net.create_extractor()
            extractor.input(self.input_name, mat)
            status, out = extractor.extract(self.output_name)
            if status != 0:
                raise RuntimeError(f"ncnn extract({self.output_name!r}) failed with status {status}")
            outputs.append(self.np.array(out))  # a copy: the Mat's memory is the extractor's
        return self.np.stack(outputs)

    def environment(self) -> dict[str, Any]:
        ncnn = self.ncnn
        net = getattr(self, "net", None)
        meta = common.read_sidecar(getattr(self, "model_path", None))
        return {
            "runtime": self.runtime,
            "version": ncnn.__version__,
            "device": "CPU",
            "backend": "ncnn CPU (Vulkan off)",
            "precision": self.config.precision,
            "threads_requested": self.config.threads,
            "os_threads": common.os_threads(),
            "options": {name: getattr(net.opt, name) for name in RECORDED_OPTIONS}
            if net is not None
            else None,
            "batch": "one extractor per sample (ncnn has no batch axis)",
            "cpu_count": ncnn.get_cpu_count(),
            "physical_cpu_count": ncnn.get_physical_cpu_count(),
            "converter": meta.get("converter"),
        }


def _convert_zoo(config: RunConfig, param: Path) -> None:
    """The seeded zoo model traced to TorchScript and converted by pnnx to an fp32 .param/.bin."""
    with needs(
        f"converting {config.model!r} to ncnn needs PyTorch and pnnx",
        "pip install 'edgestats[pnnx]' on this machine, or run from a model pack",
    ):
        import pnnx
        import torch

        from edgestats.collectors.zoo.torch_models import build_torch, count_flops, count_params
    shape = zoo_model(config.model).input_shape_nchw(1)
    model = build_torch(config.model, seed=config.seed).eval()
    param.parent.mkdir(parents=True, exist_ok=True)
    # pnnx writes several files (its own graph, an ONNX copy, Python code) next to its input:
    # all go in a scratch folder; only the ncnn pair is moved into the cache, .bin first, so a
    # .param in the cache always has its weights
    with tempfile.TemporaryDirectory(prefix=".pnnx-", dir=param.parent) as scratch:
        work = Path(scratch)
        with torch.no_grad(), warnings.catch_warnings():
            warnings.simplefilter("ignore")  # torch 2.13 deprecates torch.jit; the trace is what pnnx reads
            torch.jit.trace(model, torch.zeros(shape)).save(str(work / "model.pt"))
        out_param, out_bin = work / "model.ncnn.param", work / "model.ncnn.bin"
        run_converter(
            [
                pnnx.EXEC_PATH,
                str(work / "model.pt"),
                f"inputshape=[{','.join(map(str, shape))}]f32",
                "fp16=0",
                f"ncnnparam={out_param}",
                f"ncnnbin={out_bin}",
            ],
            f"pnnx could not convert {config.model!r}",
            lambda done: out_param.is_file() and out_bin.is_file(),
            cwd=work,
        )
        os.replace(out_bin, param.with_suffix(".bin"))
        os.replace(out_param, param)
    common.write_sidecar(
        param,
        model=config.model,
        seed=config.seed,
        params=count_params(model),
        flops=count_flops(model, shape),
        input_shape=list(shape[1:]),
        converter=f"pnnx {importlib.metadata.version('pnnx')} (fp16=0: fp32 weights) from a "
        f"TorchScript trace, torch {torch.__version__}",
    )


def _param_input_shape(path: Path) -> tuple[int, ...] | None:
    """(c, h, w) from the Input layer of a .param file, where it records one (0=w 1=h 2=c);
    pnnx writes none, so a user's file without it needs extra input_shape."""
    for line in Path(path).read_text(errors="replace").splitlines():
        fields = line.split()
        if fields and fields[0] == "Input":
            params = dict(re.findall(r"(\d+)=(-?\d+)", " ".join(fields[6:])))
            if {"0", "1", "2"} <= params.keys():
                return int(params["2"]), int(params["1"]), int(params["0"])
            return None
    return None


def probe_detail(ncnn: Any) -> dict[str, Any]:
    """doctor's facts about an imported ncnn: the CPU it sees and which kernels it can use."""
    return {
        "cpu_count": ncnn.get_cpu_count(),
        "physical_cpu_count": ncnn.get_physical_cpu_count(),
        "avx2": bool(ncnn.cpu_support_x86_avx2()),
        "neon": bool(ncnn.cpu_support_arm_neon()),
        "vulkan_gpus": ncnn.get_gpu_count() if hasattr(ncnn, "get_gpu_count") else 0,
    }
