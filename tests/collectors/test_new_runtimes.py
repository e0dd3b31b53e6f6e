"""The runtimes added after the first four (OpenVINO, torch.compile, ncnn, MNN, ExecuTorch), held
to the same bar: the acceptance command through the CLI (squeezenet, 30 iterations: an ok run
with every phase and latency), and outputs that agree with PyTorch's on the same seeded weights.
Cost: about 140 s of test time in make test's parallel lane (measured from a fresh clone on 2 cores)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from edgestats.cli import app
from edgestats.collectors.core.runconfig import RunConfig
from edgestats.registry.runtimes import runtime
from edgestats.store.results import Store

pytestmark = [pytest.mark.frameworks, pytest.mark.xdist_group("new-runtimes")]

PCAMP_PHASES = [
    "process_start",
    "import",
    "load_model",
    "load_first_input",
    "first_inference",
    "load_second_input",
    "second_inference",
    "warmup",
    "steady",
    "total",
]
# OpenVINO compiles inside load_model; torch.compile compiles on the first call, in its own phase
COMPILE_PHASES = PCAMP_PHASES[:3] + ["compile"] + PCAMP_PHASES[3:]


@pytest.fixture(scope="module")
def cache(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("model-cache")


def outputs(framework: str, model: str, cache: Path, precision: str = "fp32") -> np.ndarray:
    """One batch of 16 seeded synthetic inputs through prepare and the worker's phases."""
    config = RunConfig(framework=framework, model=model, batch_size=16, threads=2, precision=precision)
    cls = runtime(framework).adapter_class()
    adapter = cls(config, cls.prepare(config, cache))
    adapter.import_framework()
    adapter.load_model()
    return np.asarray(adapter.infer(adapter.load_input()))


# (collect arguments, (framework, runtime) stored, what its environment must say it ran)
COLLECTED = [
    (
        ["--framework", "executorch"],
        ("executorch", "executorch"),
        lambda detail: detail["xnnpack_available"] and detail["planned_batch"] == 1,
    ),
    (["--framework", "mnn"], ("mnn", "mnn"), lambda detail: detail["precision_mode"] == "high"),
    (
        ["--framework", "ncnn"],
        ("ncnn", "ncnn"),
        lambda detail: detail["options"]["use_fp16_storage"] is False,
    ),
    (
        ["--framework", "openvino"],
        ("openvino", "openvino"),
        lambda detail: detail["performance_hint"] == "LATENCY",
    ),
    (
        ["--framework", "pytorch", "--runtime", "torch-compile"],
        ("pytorch", "torch-compile"),
        lambda detail: detail["compile"]["backend"] == "inductor",
    ),
]
# fp32 runtimes held to PyTorch's outputs on the same seeded weights (OpenVINO has its own test, with int8)
FP32_RUNTIMES = ["ncnn", "mnn", "executorch"]
MODELS = ["cnn9", "squeezenet", "mobilenet_v2", "resnet18"]


def test_collect_squeezenet_with_each_new_runtime(tmp_path: Path, cache: Path) -> None:
    db = tmp_path / "r.duckdb"
    for args, _, _ in COLLECTED:
        result = CliRunner().invoke(
            app,
            [
                "collect",
                "--db",
                str(db),
                *args,
                "--model",
                "squeezenet",
                "--iterations",
                "30",
                "--cache-dir",
                str(cache),
            ],
        )
        assert result.exit_code == 0, result.output
    with Store.open(db, read_only=True) as store:
        runs = store.frame(
            "SELECT run_id, framework, runtime, status, error_text, model_params, environment "
            "FROM runs ORDER BY framework"
        ).to_dicts()
        assert [(r["framework"], r["runtime"]) for r in runs] == [stored for _, stored, _ in COLLECTED]
        for run, (_, _, ran_as_asked) in zip(runs, COLLECTED):
            assert run["status"] == "ok", run["error_text"]
            assert run["model_params"] == 1_248_424
            detail = json.loads(run["environment"])["runtime_detail"]
            assert ran_as_asked(detail), detail
            phases = store.frame(f"SELECT phase FROM phases WHERE run_id = '{run['run_id']}' ORDER BY seq")[
                "phase"
            ]
            assert phases.to_list() == (COMPILE_PHASES if run["runtime"] == "torch-compile" else PCAMP_PHASES)
            steady = store.frame(
                f"SELECT count(*) AS n FROM latencies WHERE NOT warmup AND run_id = '{run['run_id']}'"
            )
            assert steady["n"][0] == 30


@pytest.mark.parametrize("framework", FP32_RUNTIMES)
@pytest.mark.parametrize("model", MODELS)
def test_fp32_runtime_agrees_with_pytorch_on_the_same_weights(
    framework: str, model: str, cache: Path
) -> None:
    """max abs diff <= 1e-3 over a batch of 16. Seen (cnn9, squeezenet, resnet18): ncnn 6e-7,
    5e-7, 3e-6; MNN 2e-5, 8e-6, 1e-4; ExecuTorch 9e-8, 4e-7, 5e-6. mobilenet_v2's seeded logits
    are about 1e-9 (see the OpenVINO test below), so for it this checks little more than that it
    runs."""
    reference = outputs("pytorch", model, cache)
    out = outputs(framework, model, cache)
    assert out.shape == reference.shape and np.abs(out - reference).max() <= 1e-3


@pytest.mark.parametrize("model", MODELS)
def test_openvino_agrees_with_pytorch_on_the_same_weights(model: str, cache: Path) -> None:
    """fp32: max abs diff <= 1e-3 (seen: 1e-7 to 6e-6). int8 (NNCF): top-1 agreement with
    PyTorch's fp32 on 16 inputs, >= 75 % (seen: 81 % for cnn9, whose ten logits lie close
    together, 100 % for squeezenet and resnet18). The zoo's seeded mobilenet_v2 gives logits of
    about 1e-9 (its random weights shrink activations layer by layer), which no top-1 comparison
    can rank: for it int8 is checked only to run and stay at that scale."""
    reference = outputs("pytorch", model, cache)
    fp32 = outputs("openvino", model, cache)
    assert fp32.shape == reference.shape and np.abs(fp32 - reference).max() <= 1e-3
    int8 = outputs("openvino", model, cache, precision="int8")
    assert int8.shape == reference.shape and np.isfinite(int8).all()
    if np.abs(reference).max() < 1e-6:
        assert np.abs(int8).max() < 1e-3
    else:
        agreement = float((int8.argmax(axis=1) == reference.argmax(axis=1)).mean())
        assert agreement >= 0.75, agreement
