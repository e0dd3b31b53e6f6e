"""Model packs: `edgestats prepare` builds a sweep's model files on a machine with the frameworks;
`edgestats collect --cache-dir PACK` runs them on a device that has only its runtime.

The device is simulated for real: `collect` runs in a process whose imports of torch, TensorFlow,
Keras and the other runtime fail (a sitecustomize on PYTHONPATH puts a blocking finder first on
sys.meta_path; the worker inherits it), as in a venv with only `edgestats[onnx]` or only
`edgestats[tflite]`: any import of a missing package anywhere on the path fails the run. The
last test does it for real too: a clean venv with only one runtime's extra installed.
Cost: about 215 s of test time in make test's parallel lane (measured from a fresh clone on 2 cores).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from builders import write_inference_run
from typer.testing import CliRunner

from edgestats.cli import app
from edgestats.collectors.zoo.catalog import ZOO
from edgestats.store.results import Store

REPO = Path(__file__).resolve().parents[2]

# One xdist worker builds the module's pack (about 1.2 GB, minutes) once.
pytestmark = [pytest.mark.frameworks, pytest.mark.xdist_group("model_pack")]

BLOCKER = '''
import importlib.abc, os, sys

_MISSING = set(os.environ["EDGESTATS_TEST_NOT_INSTALLED"].split(","))

class _NotInstalled(importlib.abc.MetaPathFinder):
    """This device has only its runtime: the packages named in the variable are not installed."""
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in _MISSING:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None

sys.meta_path.insert(0, _NotInstalled())
'''


# What a venv with only one runtime's extra lacks: the frameworks and the other runtimes.
NOT_INSTALLED = {
    "onnxruntime": "torch,tensorflow,keras,ai_edge_litert,tflite_runtime,openvino",
    "tflite": "torch,tensorflow,keras,onnxruntime,openvino",
    "ncnn": "torch,pnnx,tensorflow,keras,onnxruntime,onnx,openvino,MNN,executorch",
    "mnn": "torch,pnnx,tensorflow,keras,onnxruntime,onnx,openvino,ncnn,executorch",
}


@pytest.fixture(scope="module")
def pack(tmp_path_factory) -> Path:
    """Every zoo model for ONNX Runtime and TFLite (fp32), and cnn9 int8 for ONNX Runtime (its
    quantization needs torch and onnx): about 1.2 GB, built once for the module."""
    folder = tmp_path_factory.mktemp("built") / "pack"
    every = [arg for name in sorted(ZOO) for arg in ("-m", name)]
    for args in (
        ["-f", "onnxruntime", "-f", "tflite", *every],
        ["-f", "onnxruntime", "-m", "cnn9", "--precision", "int8"],
    ):
        result = CliRunner().invoke(app, ["prepare", *args, "--cache-dir", str(folder)])
        assert result.exit_code == 0, result.output
    return folder


def runtime_only_collect(tmp_path: Path, runtime: str, *args: str) -> subprocess.CompletedProcess:
    site = tmp_path / "runtime_only_site"
    site.mkdir(exist_ok=True)
    (site / "sitecustomize.py").write_text(BLOCKER)
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")]),
        "EDGESTATS_TEST_NOT_INSTALLED": NOT_INSTALLED[runtime],
        "COLUMNS": "200",
    }
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "edgestats",
            "collect",
            "-f",
            runtime,
            "--warmup",
            "0",
            "--sample-hz",
            "0",
            "--power",
            "none",
            *args,
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )


@pytest.fixture(scope="module")
def moved_pack(pack, tmp_path_factory) -> Path:
    """The pack moved elsewhere, as a copy to the device would put it (its paths are relative)."""
    return Path(shutil.move(pack, tmp_path_factory.mktemp("device") / "pack"))


def test_prepare_writes_a_manifest_of_intact_hashed_files(moved_pack):
    pack = moved_pack  # read where it was moved: nothing in it points at where it was built
    models = json.loads((pack / "pack.json").read_text())["models"]
    assert len(models) == 2 * len(ZOO) + 1, "the second prepare (int8) kept the first one's entries"
    assert sorted((m["framework"], m["model"]) for m in models if m["precision"] == "fp32") == sorted(
        (f, name) for f in ("onnxruntime", "tflite") for name in ZOO
    )
    for m in models:
        assert m["status"] == "built" and m["intact"] is True and len(m["sha256"]) == 64
        assert (pack / m["artifact"]).is_file() and m["artifact"].startswith(m["key"] + "/")
    again = CliRunner().invoke(app, ["prepare", "-f", "onnxruntime", "-m", "cnn9", "--cache-dir", str(pack)])
    assert again.exit_code == 0 and "hit onnxruntime" in again.output


@pytest.mark.parametrize("runtime,extra", [("onnxruntime", "torch"), ("tflite", "tensorflow")])
def test_runtime_only_device_is_told_what_to_do_before_any_run(tmp_path, runtime, extra):
    db = tmp_path / "pi.duckdb"
    proc = runtime_only_collect(
        tmp_path, runtime, "-m", "cnn9", "-n", "2", "--db", str(db), "--cache-dir", str(tmp_path / "empty")
    )
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1, out  # no run of the sweep could run: said, and not a success
    assert (
        "cannot run here" in out and f"pip install 'edgestats[{extra}]'" in out and "edgestats prepare" in out
    )
    assert (
        proc.stderr.rstrip()
        .splitlines()[-1]
        .endswith(
            "no run of the sweep can run here (1 cannot run "
            "here: what to install or prepare is said above); "
            "nothing was stored"
        )
    )
    assert "Traceback" not in out
    with Store.open(db, read_only=True) as store:
        assert store.con.execute("SELECT count(*) FROM runs").fetchone()[0] == 0


@pytest.mark.parametrize("runtime", ["onnxruntime", "tflite"])
def test_every_zoo_model_runs_from_the_pack_on_a_runtime_only_device(tmp_path, moved_pack, runtime):
    db = tmp_path / "pi.duckdb"
    int8 = ["--precision", "fp32", "--precision", "int8"] if runtime == "onnxruntime" else []
    models = [arg for name in sorted(ZOO) for arg in ("-m", name)]
    proc = runtime_only_collect(
        tmp_path, runtime, *models, *int8, "-n", "2", "--db", str(db), "--cache-dir", str(moved_pack)
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    with Store.open(db, read_only=True) as store:
        rows = store.con.execute(
            "SELECT s.model, s.precision, s.status, r.environment->>'$.model_cache', s.n_latencies "
            "FROM run_summary s JOIN runs r USING (run_id) ORDER BY s.model, s.precision"
        ).fetchall()
    expected = [(name, "fp32", "ok", "hit", 2) for name in sorted(ZOO)]
    if runtime == "onnxruntime":  # int8 of cnn9 only is in the pack: the others cannot run here, said before
        expected.insert(sorted(ZOO).index("cnn9") + 1, ("cnn9", "int8", "ok", "hit", 2))
        assert proc.stderr.count("cannot run here: onnxruntime") == len(ZOO) - 1
    assert rows == expected


@pytest.mark.parametrize("runtime", ["ncnn", "mnn"])
def test_ncnn_and_mnn_run_from_a_pack_without_torch_or_their_converters(tmp_path, runtime):
    """Their converters (pnnx, MNN's from the torch ONNX export) run where the pack is built; the
    device needs only the runtime. Without the pack, the plan says what to install first."""
    pack = tmp_path / "pack"
    built = CliRunner().invoke(app, ["prepare", "-f", runtime, "-m", "cnn9", "--cache-dir", str(pack)])
    assert built.exit_code == 0, built.output
    db = tmp_path / "board.duckdb"
    proc = runtime_only_collect(
        tmp_path,
        runtime,
        "-m",
        "cnn9",
        "-m",
        "squeezenet",
        "-n",
        "2",
        "--db",
        str(db),
        "--cache-dir",
        str(pack),
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (
        f"cannot run here: {runtime} squeezenet" in proc.stderr
        and "pip install 'edgestats[torch" in proc.stderr
    )
    with Store.open(db, read_only=True) as store:
        rows = store.con.execute("SELECT s.model, s.status, s.n_latencies FROM run_summary s").fetchall()
    assert rows == [("cnn9", "ok", 2)]


def test_errors_for_a_missing_package_are_retried_and_others_only_when_asked(tmp_path):
    db = tmp_path / "r.duckdb"
    with Store.open(db) as store:
        device = store.register_device({"name": "dev", "hostname": "dev", "arch": "x86_64", "cores": 2})
        cases = {
            "ok": ("ok", None),
            "missing": ("error", "No module named 'torch': pip install 'edgestats[torch]'"),
            "broken": ("error", "ModelFileError: broken.onnx is not a model"),
            "killed": ("killed", "interrupted"),
        }
        for i, (name, (status, text)) in enumerate(cases.items()):
            run_id = write_inference_run(store, device, seed=i)
            store.con.execute(
                "UPDATE runs SET status = ?, error_text = ?, config_hash = ?, source = 'collect' "
                "WHERE run_id = ?",
                [status, text, name, str(run_id)],
            )
        assert store.finished_config_hashes() == {"ok", "broken"}
        assert store.finished_config_hashes(retry_failed=True) == {"ok"}


def test_retry_failed_runs_a_failed_configuration_again(tmp_path):
    broken = tmp_path / "broken.onnx"
    broken.write_bytes(b"not a model")
    db = tmp_path / "r.duckdb"
    args = [
        "collect",
        "-f",
        "onnxruntime",
        "-m",
        str(broken),
        "-n",
        "3",
        "--sample-hz",
        "0",
        "--power",
        "none",
        "--db",
        str(db),
        "--cache-dir",
        str(tmp_path / "cache"),
    ]
    for extra in ([], [], ["--retry-failed"]):
        result = CliRunner().invoke(app, args + extra)
        assert result.exit_code == 0, result.output
    with Store.open(db, read_only=True) as store:
        statuses = [r[0] for r in store.con.execute("SELECT status FROM runs ORDER BY started_at").fetchall()]
    assert statuses == ["error", "error"]  # the second collect ran nothing; --retry-failed ran it again


def venv_with_only(venv: Path, runtime: str, extra: str) -> Path:
    """A clean venv with `edgestats[EXTRA]` installed from this checkout, checked to hold neither
    torch, TensorFlow nor the other runtime; returns its python."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    install = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            str(python),
            "install",
            "-q",
            "-c",
            str(REPO / "constraints.txt"),
            f"{REPO}[{extra}]",
        ],
        capture_output=True,
        text=True,
    )
    assert install.returncode == 0, install.stderr[-3000:]
    for absent in ("torch", "tensorflow", "onnxruntime" if runtime == "tflite" else "ai_edge_litert"):
        probe = subprocess.run([str(python), "-c", f"import {absent}"], capture_output=True, text=True)
        assert probe.returncode != 0, f"{absent} is installed in the {extra}-only venv"
    return python


@pytest.mark.packaging  # two pip installs into clean venvs: about 15 s each
@pytest.mark.parametrize("runtime,extra", [("onnxruntime", "onnx"), ("tflite", "tflite")])
def test_a_venv_with_only_one_runtime_runs_every_zoo_model_from_the_pack(
    tmp_path, moved_pack, runtime, extra
):
    """The same as above in a real venv holding only `edgestats[EXTRA]` (no torch, no TensorFlow,
    no other runtime), installed from this checkout: what a board's user installs."""
    venv = tmp_path / "venv"
    venv_with_only(venv, runtime, extra)
    db = tmp_path / "board.duckdb"
    models = [arg for name in sorted(ZOO) for arg in ("-m", name)]
    proc = subprocess.run(
        [
            str(venv / "bin" / "edgestats"),
            "collect",
            "-f",
            runtime,
            *models,
            "-n",
            "2",
            "--warmup",
            "0",
            "--sample-hz",
            "0",
            "--power",
            "none",
            "--db",
            str(db),
            "--cache-dir",
            str(moved_pack),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    with Store.open(db, read_only=True) as store:
        rows = store.con.execute(
            "SELECT s.model, s.status, r.environment->>'$.model_cache' FROM run_summary s "
            "JOIN runs r USING (run_id) ORDER BY s.model"
        ).fetchall()
    assert rows == [(name, "ok", "hit") for name in sorted(ZOO)]
