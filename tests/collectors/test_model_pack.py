"""Model packs: `edgestats prepare` builds a sweep's model files on a machine with the frameworks;
`edgestats collect --cache-dir PACK` runs them on a device that has only its runtime.

The device is simulated for real: `collect` runs in a process whose imports of torch, TensorFlow
and Keras fail (a sitecustomize on PYTHONPATH puts a blocking finder first on sys.meta_path; the
worker inherits it), as on a board with only ONNX Runtime installed.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from builders import write_inference_run
from edgestats.cli import app
from edgestats.store import Store

pytestmark = pytest.mark.frameworks

BLOCKER = '''
import importlib.abc, sys

class _NotInstalled(importlib.abc.MetaPathFinder):
    """This device has only its runtime: torch, TensorFlow and Keras are not installed."""
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in {"torch", "tensorflow", "keras"}:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None

sys.meta_path.insert(0, _NotInstalled())
'''


@pytest.fixture(scope="module")
def pack(tmp_path_factory) -> Path:
    """cnn9 for ONNX Runtime, fp32 and int8 (the int8 file needs torch and onnx to build)."""
    folder = tmp_path_factory.mktemp("built") / "pack"
    result = CliRunner().invoke(app, ["prepare", "-f", "onnxruntime", "-m", "cnn9", "--precision", "fp32",
                                      "--precision", "int8", "--cache-dir", str(folder)])
    assert result.exit_code == 0, result.output
    return folder


def runtime_only_collect(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    site = tmp_path / "runtime_only_site"
    site.mkdir(exist_ok=True)
    (site / "sitecustomize.py").write_text(BLOCKER)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")]),
           "COLUMNS": "200"}
    return subprocess.run([sys.executable, "-m", "edgestats", "collect", "-f", "onnxruntime", "-m", "cnn9",
                           "-n", "5", "--warmup", "1", "--sample-hz", "0", "--power", "none", *args],
                          capture_output=True, text=True, env=env, timeout=300)


def test_prepare_writes_a_manifest_of_intact_hashed_files(pack):
    manifest = json.loads((pack / "pack.json").read_text())
    models = manifest["models"]
    assert sorted(m["precision"] for m in models) == ["fp32", "int8"]
    for m in models:
        assert m["status"] == "built" and m["intact"] is True and len(m["sha256"]) == 64
        assert (pack / m["artifact"]).is_file() and m["artifact"].startswith(m["key"] + "/")
    again = CliRunner().invoke(app, ["prepare", "-f", "onnxruntime", "-m", "cnn9", "--cache-dir", str(pack)])
    assert again.exit_code == 0 and "hit onnxruntime" in again.output


def test_runtime_only_device_is_told_what_to_do_before_any_run(tmp_path):
    db = tmp_path / "pi.duckdb"
    proc = runtime_only_collect(tmp_path, "--db", str(db), "--cache-dir", str(tmp_path / "empty"))
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    assert "cannot run here" in out and "pip install 'edgestats[torch]'" in out and "edgestats prepare" in out
    assert "Traceback" not in out
    with Store.open(db, read_only=True) as store:
        assert store.con.execute("SELECT count(*) FROM runs").fetchone()[0] == 0


def test_pack_copied_to_a_runtime_only_device_runs_from_the_pack(tmp_path, pack):
    copied = shutil.copytree(pack, tmp_path / "elsewhere" / "pack")   # another place, as on the device
    db = tmp_path / "pi.duckdb"
    proc = runtime_only_collect(tmp_path, "--precision", "fp32", "--precision", "int8", "--db", str(db),
                                "--cache-dir", str(copied))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    with Store.open(db, read_only=True) as store:
        rows = store.con.execute(
            "SELECT s.precision, s.status, r.environment->>'$.model_cache', s.n_latencies FROM run_summary s "
            "JOIN runs r USING (run_id) ORDER BY s.precision").fetchall()
    assert rows == [("fp32", "ok", "hit", 5), ("int8", "ok", "hit", 5)]


def test_errors_for_a_missing_package_are_retried_and_others_only_when_asked(tmp_path):
    db = tmp_path / "r.duckdb"
    with Store.open(db) as store:
        device = store.register_device({"name": "dev", "hostname": "dev", "arch": "x86_64", "cores": 2})
        cases = {"ok": ("ok", None), "missing": ("error", "No module named 'torch': pip install 'edgestats[torch]'"),
                 "broken": ("error", "ModelFileError: broken.onnx is not a model"), "killed": ("killed", "interrupted")}
        for i, (name, (status, text)) in enumerate(cases.items()):
            run_id = write_inference_run(store, device, seed=i)
            store.con.execute("UPDATE runs SET status = ?, error_text = ?, config_hash = ?, source = 'collect' "
                              "WHERE run_id = ?", [status, text, name, str(run_id)])
        assert store.finished_config_hashes() == {"ok", "broken"}
        assert store.finished_config_hashes(retry_failed=True) == {"ok"}


def test_retry_failed_runs_a_failed_configuration_again(tmp_path):
    broken = tmp_path / "broken.onnx"
    broken.write_bytes(b"not a model")
    db = tmp_path / "r.duckdb"
    args = ["collect", "-f", "onnxruntime", "-m", str(broken), "-n", "3", "--sample-hz", "0", "--power", "none",
            "--db", str(db), "--cache-dir", str(tmp_path / "cache")]
    for extra in ([], [], ["--retry-failed"]):
        result = CliRunner().invoke(app, args + extra)
        assert result.exit_code == 0, result.output
    with Store.open(db, read_only=True) as store:
        statuses = [r[0] for r in store.con.execute("SELECT status FROM runs ORDER BY started_at").fetchall()]
    assert statuses == ["error", "error"]   # the second collect ran nothing; --retry-failed ran it again
