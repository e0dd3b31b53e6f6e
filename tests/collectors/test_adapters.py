"""The four framework adapters, driven in-process through the worker's phases with cnn9 (small,
fast), plus squeezenet once through the two conversions (ONNX export, TFLite conversion).

Every framework is installed in the dev environment, so a missing one FAILS here (no skips): the
adapters are the product, and a silently skipped adapter is an untested one. The tests that load
a framework carry the `frameworks` marker; config checks and registry facts run in the fast lane.
Cost: about 45 s of test time in make test's parallel lane (measured from a fresh clone on 2 cores).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
from adapter_builders import CNN9_PARAMS, adapter_class, config, run_phases

from edgestats.collectors.adapters.base import Adapter, ModelInfo
from edgestats.errors import EdgestatsError
from edgestats.registry import runtimes as runtime_registry
from edgestats.registry.runtimes import inference_runtime_names, runtime_names

# One xdist worker runs this whole module: its module-scoped fixtures (framework imports, built
# models, converted files) are built once instead of once per worker that gets one of its tests.
pytestmark = pytest.mark.xdist_group("adapters")

# Every variant of every registered runtime (torch-compile has its own test below): a runtime added
# to the registry runs here with no edit to this file (docs/architecture.md §8).
VARIANTS = [
    (framework, variant)
    for framework in inference_runtime_names()
    for variant in adapter_class(framework).runtimes
    if variant != "torch-compile"
]
INT8 = [
    ("pytorch", "torch-eager"),
    ("pytorch", "torchscript"),
    ("tflite", "tflite"),
    ("onnxruntime", "onnxruntime"),
    ("openvino", "openvino"),
]


@pytest.fixture(scope="module")
def cache(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("artifacts")


@pytest.fixture
def restore_torch_threads():
    import torch

    before = torch.get_num_threads()
    yield
    torch.set_num_threads(before)


@pytest.mark.frameworks
@pytest.mark.parametrize("framework", sorted(runtime_names()))
def test_every_adapter_is_available_here(framework):
    available, why = adapter_class(framework).is_available()
    assert available, f"{framework}: {why}"  # must fail, not skip: the dev env installs all four


@pytest.mark.frameworks
@pytest.mark.parametrize("framework,runtime", VARIANTS, ids=[f"{f}-{r}" for f, r in VARIANTS])
def test_cnn9_runs_through_every_phase(framework, runtime, cache):
    adapter, versions, info, out1, out2 = run_phases(config(framework, runtime), cache)
    assert adapter.runtime == runtime
    assert versions and all(isinstance(v, str) and v for v in versions.values())
    assert isinstance(info, ModelInfo)
    assert info.params == CNN9_PARAMS
    assert info.flops and info.flops > 0
    nchw = framework in ("pytorch", "onnxruntime", "openvino", "ncnn", "mnn", "executorch")
    assert info.input_shape == ((3, 32, 32) if nchw else (32, 32, 3))
    assert info.file and Path(info.file).exists() and info.file_bytes > 0
    assert out1.shape == out2.shape == (2, 10)
    assert np.isfinite(out1).all()
    np.testing.assert_allclose(out1, out2, rtol=1e-5, atol=1e-6)  # same synthetic input both times
    env = adapter.environment()
    assert env and env["runtime"] == runtime
    json.dumps(env)  # goes into the spool as JSON


@pytest.mark.frameworks
def test_torch_compile_compiles_in_its_own_phase_and_agrees_with_eager(cache):
    """torch.compile (inductor) runs the same weights as eager: the same outputs; compile() pays
    the compile (the worker's `compile` phase), so the first inference already runs compiled code."""
    import time

    cfg = config("pytorch", "torch-compile", threads=1)
    cls = adapter_class("pytorch")
    adapter = cls(cfg, cls.prepare(cfg, cache))
    adapter.import_framework()
    adapter.load_model()
    assert adapter.compiles and not cls(config("pytorch", "torch-eager")).compiles
    started = time.perf_counter()
    adapter.compile()
    compile_s, started = time.perf_counter() - started, time.perf_counter()
    batch = adapter.load_input()
    first = adapter.infer(batch).numpy()
    first_s = time.perf_counter() - started
    second = adapter.infer(batch).numpy()
    assert compile_s > 10 * first_s, (compile_s, first_s)
    eager = run_phases(config("pytorch", "torch-eager", threads=1), cache)[3]
    np.testing.assert_allclose(second, eager, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(first, second, rtol=1e-6, atol=1e-7)
    env = adapter.environment()
    assert (
        env["runtime"] == "torch-compile"
        and env["compile"]["backend"] == "inductor"
        and env["compile"]["cxx"]
    )
    assert "int8" in cls.check_config(config("pytorch", "torch-compile", precision="int8"))


@pytest.mark.frameworks
def test_openvino_compiles_what_was_asked_and_agrees_with_onnxruntime(cache):
    """The IR is the ONNX export converted with fp32 weights: the same outputs as ONNX Runtime on
    the same input; the CPU plugin runs the requested threads in f32 under the LATENCY hint."""
    adapter, _, info, out, _ = run_phases(config("openvino", threads=1), cache)
    env = adapter.environment()
    assert (env["inference_num_threads"], env["inference_precision_hint"], env["performance_hint"]) == (
        "1",
        "f32",
        "LATENCY",
    )
    assert "compress_to_fp16=False" in env["converter"] and info.file.endswith(".xml")
    assert info.file_bytes > 4 * CNN9_PARAMS, "the .bin holds fp32 weights"
    reference = run_phases(config("onnxruntime", threads=1), cache)[3]
    np.testing.assert_allclose(out, reference, rtol=1e-4, atol=1e-5)
    int8 = run_phases(config("openvino", threads=1, precision="int8"), cache)[0]
    ops = {op.get_type_name() for op in int8.core.read_model(str(int8.model_path)).get_ops()}
    assert "FakeQuantize" in ops, "NNCF inserted quantize/dequantize pairs: the CPU plugin runs them in int8"
    runtime_precisions = {
        op.get_rt_info()["runtimePrecision"].astype(str) for op in int8.compiled.get_runtime_model().get_ops()
    }
    assert {"u8", "i8"} & runtime_precisions, runtime_precisions


@pytest.mark.frameworks
def test_ncnn_runs_fp32_on_the_threads_asked_and_reads_a_users_param_file(cache, tmp_path):
    """fp16/bf16 paths off, --threads honoured; a user's .param with its .bin beside it runs the
    same (its Input layer records no shape, so input_shape is asked for); without a .bin it fails."""
    adapter, _, info, out, _ = run_phases(config("ncnn", threads=1), cache)
    options = adapter.environment()["options"]
    assert options["num_threads"] == 1 and not any(
        v for k, v in options.items() if "fp16" in k or "bf16" in k
    )
    assert "fp16=0" in adapter.environment()["converter"]
    assert info.file_bytes > 4 * CNN9_PARAMS, "the .bin holds fp32 weights"
    for suffix in (".param", ".bin"):
        shutil.copy(Path(info.file).with_suffix(suffix), tmp_path / f"mine{suffix}")
    user = config("ncnn", threads=1, model=str(tmp_path / "mine.param"), extra={"input_shape": [3, 32, 32]})
    np.testing.assert_allclose(run_phases(user, tmp_path / "cache")[3], out, rtol=1e-6, atol=1e-7)
    (tmp_path / "mine.bin").unlink()
    with pytest.raises(EdgestatsError, match="mine.bin"):
        run_phases(user, tmp_path / "cache")


@pytest.mark.frameworks
def test_mnn_runs_fp32_on_the_threads_asked_and_reads_a_users_mnn_file(cache, tmp_path):
    """Precision mode high (fp32), numThread = --threads; a user's .mnn (no sidecar: the input
    shape is read from the file) gives the same outputs."""
    adapter, _, info, out, _ = run_phases(config("mnn", threads=1), cache)
    env = adapter.environment()
    assert (
        env["requested"] == {"backend": "CPU", "precision": "high", "numThread": 1}
        and env["precision_mode"] == "high"
    )
    assert "ONNX" in env["converter"] and info.file_bytes > 4 * CNN9_PARAMS, "fp32 weights"
    shutil.copy(info.file, tmp_path / "mine.mnn")
    user_adapter, _, user_info, user_out, _ = run_phases(
        config("mnn", threads=1, model=str(tmp_path / "mine.mnn")), tmp_path / "cache"
    )
    assert user_info.input_shape == (3, 32, 32)
    np.testing.assert_allclose(user_out, out, rtol=1e-6, atol=1e-7)


@pytest.mark.frameworks
def test_executorch_exports_one_static_program_per_batch_and_honours_threads(cache, tmp_path):
    """The batch is part of the program (and of the cache key): batches 2 and 16 are two files, the
    same weights (the first samples of 16 give what a batch of 2 gives); the thread pool is
    --threads; a user's .pte runs its `forward` up to its planned batch."""
    from edgestats.collectors.prepare import cache_key

    small, _, info, out2, _ = run_phases(config("executorch", threads=1), cache)
    env = small.environment()
    assert (env["planned_batch"], env["threadpool_threads"], env["xnnpack_available"]) == (2, 1, True)
    large, _, info16, out16, _ = run_phases(config("executorch", threads=1, batch_size=16), cache)
    assert large.environment()["planned_batch"] == 16 and info16.file != info.file and out16.shape == (16, 10)
    np.testing.assert_allclose(out16[:2], out2, rtol=1e-5, atol=1e-6)
    assert cache_key(config("executorch", batch_size=16)) != cache_key(config("executorch"))
    assert cache_key(config("onnxruntime", batch_size=16)) == cache_key(config("onnxruntime"))
    shutil.copy(info.file, tmp_path / "mine.pte")
    user = run_phases(config("executorch", threads=1, model=str(tmp_path / "mine.pte")), tmp_path / "cache")
    assert user[2].input_shape == (3, 32, 32)
    np.testing.assert_allclose(user[3], out2, rtol=1e-6, atol=1e-7)
    with pytest.raises(EdgestatsError, match="at most 2"):
        run_phases(
            config("executorch", threads=1, batch_size=3, model=str(tmp_path / "mine.pte")),
            tmp_path / "cache",
        )


@pytest.mark.frameworks
def test_flops_are_the_same_model_in_every_framework(cache):
    flops = {
        f: run_phases(config(f, batch_size=1), cache)[2].flops for f in sorted(inference_runtime_names())
    }
    assert len(set(flops.values())) == 1, flops


@pytest.mark.frameworks
@pytest.mark.parametrize("framework,runtime", INT8, ids=[f"{f}-{r}" for f, r in INT8])
def test_int8_runs_and_stays_near_fp32(framework, runtime, cache):
    fp32 = run_phases(config(framework, runtime), cache)
    int8 = run_phases(config(framework, runtime, precision="int8"), cache)
    assert int8[2].params == CNN9_PARAMS
    y32, y8 = fp32[3], int8[3]
    assert y8.shape == y32.shape == (2, 10) and np.isfinite(y8).all()
    assert np.linalg.norm(y8 - y32) <= 0.25 * np.linalg.norm(y32) + 1e-4
    assert "int8" in json.dumps(int8[0].environment())


@pytest.mark.frameworks
def test_torch_threads_are_honoured(cache, restore_torch_threads):
    import torch

    adapter, *_ = run_phases(config("pytorch", threads=1), cache)
    assert torch.get_num_threads() == 1
    assert adapter.environment()["num_threads"] == 1


@pytest.mark.frameworks
def test_onnxruntime_threads_are_honoured(cache):
    adapter, *_ = run_phases(config("onnxruntime", threads=1), cache)
    assert adapter.environment()["intra_op_num_threads"] == 1


@pytest.mark.frameworks
def test_tensorflow_threads_are_honoured_in_a_fresh_process(cache):
    """TF fixes its thread pools when its runtime starts, so only a fresh process can show this."""
    cfg = config("tensorflow", threads=1)
    artifact = adapter_class("tensorflow").prepare(cfg, cache)
    code = (
        "import json, sys\nfrom edgestats.collectors.adapters.tensorflow import TensorFlowAdapter\n"
        "from edgestats.collectors.core.runconfig import RunConfig\n"
        "a = TensorFlowAdapter(RunConfig.from_dict(json.loads(sys.argv[1])), sys.argv[2])\n"
        "a.import_framework(); a.load_model(); a.infer(a.load_input())\n"
        "print(json.dumps(a.environment()))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, cfg.to_json(), str(artifact)], capture_output=True, text=True, check=True
    )
    env = json.loads(out.stdout.strip().splitlines()[-1])
    assert env["intra_op_parallelism_threads"] == 1 and env["inter_op_parallelism_threads"] == 1
    assert "threads_not_set" not in env


# -- check_config ------------------------------------------------------------------------------------


@pytest.mark.parametrize("framework", sorted(inference_runtime_names()))
def test_check_config_rejects_unknown_runtime_and_precision(framework):
    cls = adapter_class(framework)
    assert cls.check_config(config(framework)) is None
    message = cls.check_config(config(framework, "warp-drive"))
    assert "warp-drive" in message and all(r in message for r in cls.runtimes)
    message = cls.check_config(config(framework, precision="int3"))
    assert "int3" in message and "fp32" in message
    assert "no-such-model" in cls.check_config(config(framework, model="no-such-model"))
    assert "tpu" in cls.check_config(config(framework, accelerator="tpu"))


def test_precisions_are_only_offered_where_real():
    assert "cuda" in adapter_class("pytorch").check_config(config("pytorch", precision="fp16"))
    assert (
        adapter_class("pytorch").check_config(config("pytorch", precision="fp16", accelerator="cuda")) is None
    )
    assert adapter_class("pytorch").check_config(config("pytorch", precision="int8", accelerator="cuda"))
    assert "tflite" in adapter_class("tensorflow").check_config(config("tensorflow", precision="int8"))
    for framework in ("tflite", "onnxruntime"):
        assert adapter_class(framework).check_config(config(framework, precision="int8")) is None
        assert "fp32" in adapter_class(framework).check_config(config(framework, precision="fp16"))


# -- a bigger net through the two conversions --------------------------------------------------------


@pytest.mark.frameworks
@pytest.mark.parametrize("framework", ["onnxruntime", "tflite"])
def test_squeezenet_converts_and_runs(framework, tmp_path):
    adapter, _, info, out, _ = run_phases(config(framework, model="squeezenet", batch_size=1), tmp_path)
    assert info.params == 1_248_424
    assert out.shape == (1, 1000) and np.isfinite(out).all()


def test_adapter_modules_import_no_framework():
    # every registered runtime's adapter module, so a new one is held to this too
    modules = [runtime_registry.runtime(name).adapter.partition(":")[0] for name in runtime_names()]
    code = (
        f"import sys, json\nimport {', '.join([*modules, 'edgestats.collectors.adapters.inputs'])}\n"
        "print(json.dumps(sorted({m.split('.')[0] for m in sys.modules})))"
    )
    frameworks = {m.split(".")[0] for name in runtime_names() for m in runtime_registry.runtime(name).imports}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    loaded = set(json.loads(out.splitlines()[-1]))
    assert not loaded & {
        "torch",
        "tensorflow",
        "keras",
        "onnxruntime",
        "ai_edge_litert",
        "numpy",
        "PIL",
        "onnx",
        "openvino",
        "ncnn",
        "pnnx",
        "MNN",
        "_tools",
        "executorch",
        *frameworks,
    }


@pytest.mark.frameworks
def test_tflite_falls_back_to_tf_lite_without_litert(monkeypatch, cache):
    """Where ai_edge_litert (and tflite_runtime) are missing, full TensorFlow's tf.lite runs it."""
    for name in (
        "ai_edge_litert",
        "ai_edge_litert.interpreter",
        "tflite_runtime",
        "tflite_runtime.interpreter",
    ):
        monkeypatch.setitem(sys.modules, name, None)  # makes `import name` raise ImportError
    with warnings.catch_warnings():  # tf.lite.Interpreter is deprecated in favour of LiteRT
        warnings.simplefilter("ignore")
        adapter, versions, info, out, _ = run_phases(config("tflite"), cache)
    assert "tensorflow" in versions and adapter.environment()["interpreter"] == "tensorflow.lite"
    assert info.params == CNN9_PARAMS and out.shape == (2, 10)


# -- what the registry entry decides ------------------------------------------------------------------


class FakeAdapter(Adapter):
    framework = "fakert"
    runtimes = ("fakert",)


def register_fake_runtime(monkeypatch, imports: tuple[str, ...]) -> None:
    entry = runtime_registry.RuntimeEntry(
        "fakert",
        "Fake RT",
        f"{__name__}:FakeAdapter",
        imports,
        "fake",
        "a fake runtime",
        "docs/runtimes.md#pytorch",
    )
    monkeypatch.setattr(runtime_registry, "RUNTIMES", (*runtime_registry.RUNTIMES, entry))
    monkeypatch.setattr(runtime_registry, "_BY_NAME", {e.name: e for e in runtime_registry.RUNTIMES})


def test_availability_and_install_hint_come_from_the_registry_entry(monkeypatch):
    register_fake_runtime(monkeypatch, ("es_missing_xyz",))
    assert FakeAdapter.is_available() == (
        False,
        "Python module 'es_missing_xyz' is not installed: pip install 'edgestats[fake]'",
    )
    register_fake_runtime(monkeypatch, ("es_missing_a.interpreter", "es_missing_b"))
    assert FakeAdapter.is_available() == (
        False,
        "Fake RT: none of the Python modules es_missing_a or es_missing_b is installed: "
        "pip install 'edgestats[fake]'",
    )
    register_fake_runtime(monkeypatch, ("es_missing_a.interpreter", "json"))  # alternatives: one is enough
    assert FakeAdapter.is_available() == (True, None)
