"""A model missing from the model pack a device collects with (`collect --cache-dir PACK`): said
once per model, not once per run, naming the model and the `edgestats prepare` command that adds
it to that pack; and a collect of which no run can run exits 1.

The pack is real (`edgestats prepare` of cnn9 for ONNX Runtime); the device has only ONNX Runtime:
collect runs in a process whose imports of torch, TensorFlow and the other runtimes fail (a
sitecustomize puts a blocking finder first on sys.meta_path; the worker inherits it), as in a
venv with only `edgestats[onnx]` (tests/collectors/test_model_pack.py does the same for every model).
Cost: about 30 s of test time (one prepare, two collects of which one runs two runs).
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from edgestats.cli import app
from edgestats.collectors.core.runconfig import RunConfig
from edgestats.collectors.pack import missing_from_pack, prepare_command
from edgestats.store.results import Store

BLOCKER = """
import importlib.abc, sys

_MISSING = {"torch", "tensorflow", "keras", "ai_edge_litert", "tflite_runtime", "openvino", "onnx"}

class _NotInstalled(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in _MISSING:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None

sys.meta_path.insert(0, _NotInstalled())
"""


def test_the_prepare_command_names_every_field_the_model_file_depends_on(tmp_path):
    config = RunConfig(
        "onnxruntime", "mobilenet_v2", precision="int8", seed=3, extra={"input_shape": [3, 96, 96]}
    )
    assert prepare_command(config, tmp_path / "my pack") == (
        "edgestats prepare -f onnxruntime -m mobilenet_v2 --precision int8 --seed 3 "
        f"--option 'input_shape=[3, 96, 96]' --cache-dir '{tmp_path / 'my pack'}'"
    )
    assert prepare_command(RunConfig("tflite", "cnn9"), Path("pack")) == (
        "edgestats prepare -f tflite -m cnn9 --cache-dir pack"
    )
    words = missing_from_pack(RunConfig("onnxruntime", "squeezenet"), Path("pack"), ["torch"], "torch")
    assert words.startswith("model squeezenet (onnxruntime, fp32) is not in the model pack pack")


@pytest.mark.frameworks  # the ONNX export needs torch
def test_the_prepare_command_for_a_generation_model_builds_it_into_the_pack(tmp_path):
    """The hint for a generation model names --kind generation (without it prepare refuses the model),
    and the command it prints, run as printed, builds the model's ONNX graph into the pack."""
    config = RunConfig(
        "onnxruntime", "llama15m", kind="generation", prompt_tokens=8, new_tokens=4, context_depth=0
    )
    command = prepare_command(config, tmp_path / "pack")
    assert (
        command
        == f"edgestats prepare -f onnxruntime -m llama15m --kind generation --cache-dir {tmp_path / 'pack'}"
    )
    result = CliRunner().invoke(app, shlex.split(command)[1:])
    assert result.exit_code == 0, result.output
    (entry,) = json.loads((tmp_path / "pack" / "pack.json").read_text())["models"]
    assert (entry["model"], entry["status"], entry["artifact"].endswith(".onnx")) == (
        "llama15m",
        "built",
        True,
    )


def onnx_only_collect(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    site = tmp_path / "onnx_only_site"
    site.mkdir(exist_ok=True)
    (site / "sitecustomize.py").write_text(BLOCKER)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")])}
    command = [
        "collect",
        "-f",
        "onnxruntime",
        "--warmup",
        "0",
        "-n",
        "2",
        "--sample-hz",
        "0",
        "--power",
        "none",
    ]
    return subprocess.run(
        [sys.executable, "-m", "edgestats", *command, *args],
        capture_output=True,
        text=True,
        env={**env, "COLUMNS": "300"},
        timeout=600,
    )


@pytest.mark.frameworks
def test_a_model_missing_from_the_pack_is_said_once_per_model_and_nothing_runnable_exits_1(tmp_path):
    pack = tmp_path / "pack"
    built = CliRunner().invoke(app, ["prepare", "-f", "onnxruntime", "-m", "cnn9", "--cache-dir", str(pack)])
    assert built.exit_code == 0, built.output
    db = tmp_path / "pi.duckdb"
    sweep = [
        "-m",
        "squeezenet",
        "-b",
        "1",
        "-b",
        "2",
        "--repeat",
        "3",
        "--db",
        str(db),
        "--cache-dir",
        str(pack),
    ]
    nothing = onnx_only_collect(tmp_path, *sweep)
    lines = [line for line in nothing.stderr.splitlines() if line.startswith("cannot run here")]
    command = f"edgestats prepare -f onnxruntime -m squeezenet --cache-dir {pack}"
    assert lines == [
        "cannot run here: onnxruntime squeezenet b1 fp32 #0 and 5 more runs of this model: model squeezenet "
        f"(onnxruntime, fp32) is not in the model pack {pack}, and building it here needs torch (pip install "
        f"'edgestats[torch]'): add it to the pack where that is installed with `{command}` and copy the "
        "pack here again"
    ], nothing.stderr
    assert nothing.returncode == 1 and "Traceback" not in nothing.stderr
    assert nothing.stderr.rstrip().splitlines()[-1] == (
        f"error: {db}: no run of the sweep can run here (6 cannot run here: what to install or prepare is "
        "said above); nothing was stored"
    )
    # the model that is in the pack runs; the missing one is said once again, and collect succeeds
    some = onnx_only_collect(tmp_path, "-m", "cnn9", "-m", "squeezenet", "--repeat", "2", *sweep[8:])
    assert some.returncode == 0, some.stdout + some.stderr
    assert [line.split(": ")[1] for line in some.stderr.splitlines() if line.startswith("cannot run")] == [
        "onnxruntime squeezenet b1 fp32 #0 and 1 more run of this model"
    ]
    with Store.open(db, read_only=True) as store:
        stored = store.con.execute("SELECT model, status, count(*) FROM runs GROUP BY ALL").fetchall()
    assert stored == [("cnn9", "ok", 2)]
