"""answers on a DB collected for the test: onnxruntime and tflite × cnn9 and mnist_cnn, 3 runs
each, on a device named pi5, merged with 3 onnxruntime cnn9 runs collected under the device name
vm. `analyze --out`'s analysis.json has `answers` as documented, and every figure equals the
independent computation from the runs' medians read out of the DB.
Cost: about 180 s measured alone on two busy cores with a cold model cache (15 worker processes,
plus the TFLite and ONNX files of two models); less once the shared model cache holds them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from answers_builders import check_against_runs, db_run_medians
from typer.testing import CliRunner

from edgestats.cli import app

pytestmark = pytest.mark.frameworks

runner = CliRunner()
COMMON = ["-n", "30", "--warmup", "3", "--repeat", "3", "--sample-hz", "0", "--power", "none"]


def collect(db: Path, device: str, cache: Path, *args: str) -> None:
    result = runner.invoke(
        app, ["collect", "--db", str(db), "--device-name", device, "--cache-dir", str(cache), *args, *COMMON]
    )
    assert result.exit_code == 0, result.output


@pytest.fixture(scope="module")
def merged(tmp_path_factory, model_cache) -> Path:
    folder = tmp_path_factory.mktemp("answers-collected")
    collect(
        folder / "pi5.duckdb",
        "pi5",
        model_cache,
        "-f",
        "onnxruntime",
        "-f",
        "tflite",
        "-m",
        "cnn9",
        "-m",
        "mnist_cnn",
    )
    collect(folder / "vm.duckdb", "vm", model_cache, "-f", "onnxruntime", "-m", "cnn9")
    result = runner.invoke(
        app, ["merge", str(folder / "all.duckdb"), str(folder / "pi5.duckdb"), str(folder / "vm.duckdb")]
    )
    assert result.exit_code == 0, result.output
    return folder / "all.duckdb"


def test_analysis_json_answers_equal_the_run_medians_computation(merged, tmp_path):
    result = runner.invoke(app, ["analyze", str(merged), "--out", str(tmp_path / "report")])
    assert result.exit_code == 0, result.output
    document = json.loads((tmp_path / "report" / "analysis.json").read_text())
    assert list(document)[0] == "answers"
    answers = document["answers"]
    within = {
        (e["group"]["device"], e["group"]["model"]): e for e in answers if e.get("kind") != "across_devices"
    }
    across = [e for e in answers if e.get("kind") == "across_devices"]
    assert set(within) == {("pi5", "cnn9"), ("pi5", "mnist_cnn"), ("vm", "cnn9")}
    for entry in answers:
        assert {"group", "fastest", "candidates", "ratios", "sentence", "n", "n_unit", "level"} <= set(entry)
        for ratio in entry["ratios"]:
            assert {"estimate", "ci_low", "ci_high", "p_holm", "verdict", "verdict_text", "n_runs"} <= set(
                ratio
            )
            assert ratio["verdict"] in ("slower", "no detectable difference", "inconclusive")
    assert {c["candidate"] for c in within[("pi5", "cnn9")]["candidates"]} == {"onnxruntime", "tflite"}
    assert (
        within[("vm", "cnn9")]["ratios"] == []
        and "only onnxruntime was measured" in within[("vm", "cnn9")]["sentence"]
    )
    [cross] = across
    assert cross["group"] == {
        "model": "cnn9",
        "batch_size": 1,
        "precision": "fp32",
        "candidate": "onnxruntime",
    }
    assert {c["candidate"] for c in cross["candidates"]} == {"pi5", "vm"}
    assert check_against_runs(answers, db_run_medians(merged), runs=3) == 3  # two on pi5, one across
