"""A real `edgestats collect` with repeated -f and -m flags, run as a user runs it (the installed
CLI in a child process, whatever typer and click are installed): two runtimes (ONNX Runtime and
OpenVINO, both reading .onnx) times two model files built here with onnx.helper, no torch needed.
click, and typer before 0.29, hand a repeated option over as a tuple; `make test-lowest` runs this
module under the lowest typer pyproject allows.
Cost: about 30 s of test time (4 runs of a one-convolution network, each a fresh worker process),
measured on 2 cores busy with other work (load average 10); less on an idle machine."""

from __future__ import annotations

import importlib.metadata
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

pytestmark = pytest.mark.frameworks  # runs ONNX Runtime and OpenVINO workers


def tiny_onnx(path: Path, channels: int, seed: int) -> Path:
    """A small CNN as a user's .onnx file: Conv 3x3 -> Relu -> GlobalAveragePool -> Flatten, input
    N x 3 x 16 x 16 (batch dynamic). Opset 13, IR 8: what the lowest onnxruntime and openvino the
    pyproject allows read."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(seed)
    weight = numpy_helper.from_array(rng.normal(size=(channels, 3, 3, 3)).astype(np.float32), "w")
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c"], ["r"]),
        helper.make_node("GlobalAveragePool", ["r"], ["g"]),
        helper.make_node("Flatten", ["g"], ["y"]),
    ]
    graph = helper.make_graph(
        nodes,
        f"tiny{channels}",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, 16, 16])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", channels])],
        initializer=[weight],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)
    onnx.checker.check_model(model)
    onnx.save(model, str(path))
    return path


def test_collect_with_repeated_framework_and_model_flags(tmp_path):
    models = [tiny_onnx(tmp_path / f"tiny{c}.onnx", c, seed=c) for c in (4, 8)]
    db = tmp_path / "r.duckdb"
    args = ["-f", "onnxruntime", "-f", "openvino", "-m", str(models[0]), "-m", str(models[1])]
    args += ["-n", "5", "--warmup", "1", "--sample-hz", "0", "--power", "none", "--db", str(db)]
    args += ["--cache-dir", str(tmp_path / "cache")]
    versions = ", ".join(f"{p} {importlib.metadata.version(p)}" for p in ("typer", "click"))
    done = subprocess.run(
        [sys.executable, "-m", "edgestats", "collect", *args], capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, f"under {versions}:\n{done.stdout}\n{done.stderr}"
    assert "4 ok" in done.stdout, done.stdout
    with duckdb.connect(str(db), read_only=True) as con:
        runs = con.execute(
            "SELECT framework, model, status, n_latencies FROM run_summary ORDER BY ALL"
        ).fetchall()
    assert [(f, Path(m).name) for f, m, _, _ in runs] == [
        ("onnxruntime", "tiny4.onnx"),
        ("onnxruntime", "tiny8.onnx"),
        ("openvino", "tiny4.onnx"),
        ("openvino", "tiny8.onnx"),
    ], runs
    assert all(status == "ok" and n == 5 for _, _, status, n in runs), runs
