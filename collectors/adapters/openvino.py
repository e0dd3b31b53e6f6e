"""OpenVINO: an IR model (.xml + .bin) compiled for the CPU plugin and run by an infer request.

prepare() exports the PyTorch zoo model to ONNX exactly as the onnxruntime adapter does (the same
seeded weights, the same file: one export serves both runtimes), converts it with
openvino.convert_model and writes the IR with openvino.save_model, weights kept in fp32
(compress_to_fp16=False: the default would halve the weights and measure another model). A
user's .xml (its .bin beside it) or .onnx file is used as it is.

int8 is NNCF post-training static quantization (nncf.quantize, the default MIXED preset:
symmetric int8 weights, activations quantized with ranges calibrated on data) of the fp32 IR,
calibrated on CALIBRATION_SAMPLES seeded synthetic inputs drawn like the runs' own inputs
(standard-normal, the scale of a normalised image; seeds apart from the measured input's), so
nothing is downloaded. The quantized IR is cached beside the fp32 one.

load_model reads the IR, fixes its batch to --batch-size (a static shape: the CPU plugin then
picks its kernels once, as a deployed model would), and compiles it for the CPU with the
LATENCY performance hint, INFERENCE_NUM_THREADS = --threads and INFERENCE_PRECISION_HINT f32
(without it, a CPU with bf16 or AMX units silently computes in bf16). infer is a synchronous
InferRequest.infer, which returns when the outputs are on the host.
"""

from __future__ import annotations

import contextlib
import io
import logging
import os
from pathlib import Path
from typing import Any, ClassVar

from edgestats.collectors.adapters import common
from edgestats.collectors.adapters.converting import ConvertingAdapter, needs
from edgestats.collectors.adapters.inputs import ModelFileError, batch_for
from edgestats.collectors.core.runconfig import RunConfig
from edgestats.collectors.zoo.catalog import is_zoo_model

CALIBRATION_SAMPLES = 32  # NNCF's statistics need a few dozen; more only lengthens prepare()
CALIBRATION_SEED = 1_000_003  # far from the run seeds: the calibration set is not the measured input
INT8_NOTE = (
    f"NNCF post-training static quantization (nncf.quantize, preset MIXED): int8 weights and activations, "
    f"ranges calibrated on {CALIBRATION_SAMPLES} seeded synthetic inputs"
)
HINT = "LATENCY"  # one request at a time, as edgestats measures: the plugin sizes its streams for it
USER_SUFFIXES = (".xml", ".onnx")


class OpenVINOAdapter(ConvertingAdapter):
    framework = "openvino"
    runtimes = ("openvino",)
    user_suffixes = USER_SUFFIXES  # the worker reads a user's .xml or .onnx where it is
    precisions = ("fp32", "int8")
    precision_why_not: ClassVar[dict[str, str]] = {
        "fp16": "the CPU plugin computes fp16 IR in fp32 or bf16; no fp16 kernels to measure"
    }
    converter_needs = ("torch", "openvino")
    artifact_template = "{model}-seed{seed}.fp32.openvino.xml"

    @classmethod
    def check_config(cls, config: RunConfig) -> str | None:
        return super().check_config(config) or (
            None
            if is_zoo_model(config.model) or config.precision != "int8"
            else "openvino int8 quantizes zoo models; quantize your model with NNCF and pass that IR as fp32"
        )

    @classmethod
    def prepare_needs(cls, config: RunConfig) -> tuple[str, ...]:
        needed = super().prepare_needs(config)  # () for a user's file: nothing to build
        return needed + (("nncf",) if needed and config.precision == "int8" else ())

    @classmethod
    def prepare(cls, config: RunConfig, cache_dir: Path) -> Path | None:
        xml = super().prepare(config, cache_dir)
        if xml is None or config.precision != "int8":
            return xml
        int8 = xml.with_name(xml.name.replace(".fp32.", ".int8."))
        if not common.is_prepared(int8):
            _quantize(xml, int8)
        return int8

    @classmethod
    def convert(cls, config: RunConfig, cache_dir: Path, target: Path) -> None:
        _convert_zoo(config, cache_dir, target)

    # -- the measured phases ---------------------------------------------------------------------

    def import_framework(self) -> dict[str, str]:
        import numpy
        import openvino as ov

        self.ov = ov
        return {"openvino": ov.__version__, "numpy": numpy.__version__}

    def open_model(self, path: Path) -> Any:
        self.core = self.ov.Core()
        try:
            model = self.core.read_model(str(path))
        except Exception as exc:  # OpenVINO raises RuntimeError subclasses with multi-line text
            raise ModelFileError(
                f"openvino cannot read {path.name}: {str(exc).splitlines()[0][:300]}"
            ) from None
        if len(model.inputs) != 1:
            raise ModelFileError(
                f"{path.name} has {len(model.inputs)} inputs; edgestats feeds one image batch"
            )
        return model

    def file_sample_shape(self, path: Path, loaded: Any) -> tuple[int | None, ...]:
        partial = loaded.inputs[0].get_partial_shape()
        return tuple(d.get_length() if d.is_static else None for d in list(partial)[1:])

    def fix_batch(self, loaded: Any) -> None:
        loaded.reshape([self.config.batch_size, *self.input_shape])
        self.compile_config = {"PERFORMANCE_HINT": HINT, "INFERENCE_PRECISION_HINT": "f32"}
        if self.config.threads:
            self.compile_config["INFERENCE_NUM_THREADS"] = int(self.config.threads)
        self.compiled = self.core.compile_model(loaded, "CPU", self.compile_config)
        self.request = self.compiled.create_infer_request()

    def companion_bytes(self, path: Path) -> int:
        return _weights_bytes(path)

    def load_input(self) -> Any:
        return batch_for(self.config, self.input_shape, "NCHW")

    def infer(self, batch: Any) -> Any:
        return self.request.infer({0: batch})[0]

    def environment(self) -> dict[str, Any]:
        ov = self.ov
        env: dict[str, Any] = {
            "runtime": self.runtime,
            "version": ov.__version__,
            "device": "CPU",
            "precision": self.config.precision,
            "threads_requested": self.config.threads,
            "os_threads": common.os_threads(),
            "requested": getattr(self, "compile_config", None),
        }
        compiled = getattr(self, "compiled", None)
        if compiled is not None:  # what the plugin chose, which may differ from what was asked
            for key in (
                "PERFORMANCE_HINT",
                "INFERENCE_NUM_THREADS",
                "NUM_STREAMS",
                "INFERENCE_PRECISION_HINT",
                "ENABLE_HYPER_THREADING",
                "SCHEDULING_CORE_TYPE",
            ):
                try:
                    value = compiled.get_property(key)  # an enum, an int, or an element Type
                    env[key.lower()] = (
                        value.get_type_name() if hasattr(value, "get_type_name") else str(value)
                    )
                except RuntimeError:  # a property this OpenVINO version does not have
                    env[key.lower()] = None
        meta = common.read_sidecar(getattr(self, "model_path", None))
        env["converter"] = meta.get("converter")
        if self.config.precision == "int8":
            env["int8"] = meta.get("quantization", INT8_NOTE)
        return env


def _convert_zoo(config: RunConfig, cache_dir: Path, xml: Path) -> None:
    """The zoo model's ONNX export (shared with onnxruntime) converted to an fp32 IR."""
    from edgestats.collectors.adapters.onnxruntime import zoo_onnx_export

    onnx_file = zoo_onnx_export(config, cache_dir)
    with needs(
        f"converting {config.model!r} to OpenVINO IR needs openvino",
        "pip install 'edgestats[openvino]' on this machine",
    ):
        import openvino as ov
    save_ir(ov, ov.convert_model(str(onnx_file)), xml)
    common.write_sidecar(
        xml,
        **common.read_sidecar(onnx_file),
        converter=f"openvino.convert_model {ov.__version__} "
        "from the ONNX export, saved with compress_to_fp16=False",
    )


def _quantize(fp32_xml: Path, int8_xml: Path) -> None:
    """NNCF post-training quantization of the fp32 IR, calibrated on seeded synthetic inputs."""
    with needs(
        "int8 for OpenVINO is NNCF post-training quantization",
        "pip install 'edgestats[openvino]' on this machine",
    ):
        import nncf
        import openvino as ov
    from edgestats.collectors.adapters.inputs import synthetic_batch

    meta = common.read_sidecar(fp32_xml)
    sample = (1, *meta["input_shape"])
    calibration = [synthetic_batch(sample, CALIBRATION_SEED + i) for i in range(CALIBRATION_SAMPLES)]
    nncf.set_log_level(
        logging.ERROR
    )  # its INFO lines, and below its progress bars, would flood collect's output
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        quantized = nncf.quantize(
            ov.Core().read_model(str(fp32_xml)), nncf.Dataset(calibration), subset_size=CALIBRATION_SAMPLES
        )
    save_ir(ov, quantized, int8_xml)
    common.write_sidecar(int8_xml, **meta, quantization=f"{INT8_NOTE} (nncf {nncf.__version__})")


def save_ir(ov: Any, model: Any, xml: Path) -> None:
    """Write the IR under temporary names, then rename the .bin and last the .xml: read_model
    finds the .bin by the .xml's name, so a prepare() cut short never leaves a usable-looking pair."""
    xml.parent.mkdir(parents=True, exist_ok=True)
    tmp_xml = xml.with_name(f".tmp-{os.getpid()}-{xml.name}")
    tmp_bin, final_bin = tmp_xml.with_suffix(".bin"), xml.with_suffix(".bin")
    try:
        ov.save_model(model, str(tmp_xml), compress_to_fp16=False)
        os.replace(tmp_bin, final_bin)
        os.replace(tmp_xml, xml)
    finally:
        for leftover in (tmp_xml, tmp_bin):
            if leftover.exists():
                leftover.unlink()


def _weights_bytes(path: Path) -> int:
    weights = Path(path).with_suffix(".bin")
    return weights.stat().st_size if Path(path).suffix == ".xml" and weights.exists() else 0


def probe_detail(ov: Any) -> dict[str, Any]:
    """doctor's facts about an imported OpenVINO: the devices its plugins see."""
    core = ov.Core()
    return {
        "devices": list(core.available_devices),
        "cpu": core.get_property("CPU", "FULL_DEVICE_NAME") if "CPU" in core.available_devices else None,
    }
