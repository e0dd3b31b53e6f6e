"""The device side on Python 3.10 (JetPack 6, Ubuntu 22.04), where duckdb 2.0 does not install: the
built wheel with `[onnx,torch]` goes into a clean Python 3.10 venv from the package index (duckdb 1.x
at the lowest version pyproject allows on 3.10, tomli, onnxruntime, torch and their cp310 wheels), and
there `doctor`, `collect` (ONNX Runtime: a sweep file from a model pack, and a model file; PyTorch:
eager and TorchScript inference, and generation), `import`, `merge` and `sql` run for real. The DB
written there is then read unchanged by DuckDB 2 (`analyze` in this test's own environment) and by
the DuckDB 1.x CLI; its header says storage version 64 (v1.0.0). `analyze` on 3.10 refuses in one
line: the analysis side is tested on 3.11-3.13 only.

`analyze` runs here on this environment's Python (3.11 under make test): make test runs before make
test-highest, which makes the 3.13 venv. A DB this test wrote on 3.10 is kept in tests/data/py310/
and analysed by tests/test_py310_db.py in every lane, 3.13 included; this test checks that what 3.10
writes today still matches it (storage and schema version), and `EDGESTATS_RECORD_PY310_DB=1` records
it again. The model pack is built here. torch is installed at the lowest version pyproject declares
(the lowest Python with the lowest torch): from the index that is its CUDA build (about 3 GB of
wheels, 5 GB installed; it runs on the CPU here).
Cost: about 90-160 s on 2 busy cores with pip's cache warm (a wheel build, a pip install from the index, 11
collect runs); a cold cache adds the downloads (68 s for the whole install here, cold).
"""

from __future__ import annotations

import glob
import importlib.util
import json
import os
import shutil
import struct
import subprocess
import sys
import tomllib
from pathlib import Path

import duckdb
import pytest
from packaging.requirements import Requirement
from packaging.version import Version
from typer.testing import CliRunner

from edgestats.cli import app
from edgestats.collectors.power.meter_csv import parse_timestamp_s
from edgestats.store.migrations import current_version

REPO = Path(__file__).parents[1]
RECORDED = REPO / "tests" / "data" / "py310" / "m.duckdb"  # analysed in every lane: tests/test_py310_db.py
pytestmark = [pytest.mark.packaging, pytest.mark.frameworks]
SWEEP = """[sweep]
framework = ["onnxruntime"]
model = ["cnn9"]
iterations = 20
warmup = 2
repeat = 3
"""


def run(cmd: list[str], ok: bool = True, **kw) -> subprocess.CompletedProcess:
    result = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, timeout=600, **kw)
    if ok:
        assert result.returncode == 0, f"{cmd} failed:\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
    return result


def python310() -> str:
    found = sorted(glob.glob(str(Path.home() / ".pyenv/versions/3.10*/bin/python3.10")))
    found += [p for p in [shutil.which("python3.10")] if p]
    if not found:
        pytest.fail(
            "no Python 3.10 (looked under ~/.pyenv/versions and on PATH): install one "
            "(pyenv install 3.10) to test the device side on the lowest supported Python"
        )
    return found[0]


def duckdb1_cli() -> Path:
    spec = importlib.util.find_spec("duckdb_cli")
    if spec is None or not spec.submodule_search_locations:
        pytest.fail("the DuckDB 1.x CLI is missing: pip install -c constraints.txt -e '.[dev]' (duckdb-cli)")
    return Path(next(iter(spec.submodule_search_locations))) / "duckdb"


def storage_version(db: Path) -> int:
    """DuckDB's main header: 8 bytes of checksum, b"DUCK", then the storage version (uint64)."""
    head = db.read_bytes()[:20]
    assert head[8:12] == b"DUCK", f"{db} is not a DuckDB file"
    return struct.unpack("<Q", head[12:20])[0]


def versions(db: Path) -> tuple[int, int]:
    """The file's DuckDB storage version and edgestats schema version."""
    with duckdb.connect(str(db), read_only=True) as con:
        return storage_version(db), current_version(con)[0]


def lowest_duckdb_310() -> str:
    """pyproject's lower bound for duckdb on Python 3.10 (its `>=`)."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    for text in project["dependencies"]:
        requirement = Requirement(text)
        if requirement.name == "duckdb" and requirement.marker.evaluate({"python_version": "3.10"}):
            (lowest,) = [spec.version for spec in requirement.specifier if spec.operator == ">="]
            return lowest
    raise AssertionError("pyproject declares no duckdb for Python 3.10")


def lowest_torch() -> str:
    """pyproject's lower bound for torch (the `[torch]` extra's `>=`)."""
    extras = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    (requirement,) = [Requirement(text) for text in extras["torch"] if Requirement(text).name == "torch"]
    (lowest,) = [spec.version for spec in requirement.specifier if spec.operator == ">="]
    return lowest


def device_venv(tmp_path: Path) -> Path:
    """A clean Python 3.10 venv with the wheel's `[onnx,torch]` from the index, with duckdb at the
    lowest 1.x version pyproject allows there and torch at the lowest it declares (the newest, what
    pip picks by default, is the likelier to work); its bin folder."""
    dist = tmp_path / "dist"
    run([sys.executable, "-m", "build", "--wheel", "--outdir", dist, REPO])
    wheel = next(dist.glob("edgestats-*.whl"))
    venv = tmp_path / "venv310"
    run([python310(), "-m", "venv", "--without-pip", venv])
    pins = [f"{wheel}[onnx,torch]", f"duckdb=={lowest_duckdb_310()}", f"torch=={lowest_torch()}"]
    run([sys.executable, "-m", "pip", "--python", venv / "bin/python", "install", "-q", *pins])
    return venv / "bin"


def prepared_pack(tmp_path: Path) -> Path:
    pack = tmp_path / "pack"
    result = CliRunner().invoke(app, ["prepare", "-f", "onnxruntime", "-m", "cnn9", "--cache-dir", str(pack)])
    assert result.exit_code == 0, result.output
    return pack


# Meter timestamps that Python 3.10's datetime.fromisoformat refuses as they are (a 1-digit or 7-digit
# fraction, an offset without a colon, a comma): meter_csv rewrites them there.
STAMPS = [
    "2023-11-14T22:13:20Z",
    "2023-11-14T22:13:22.5",
    "2023-11-14T22:13:22.1234567",
    "2023-11-14 22:13:22.5+0100",
    "2023-11-14T22:13:22,25-0530",
]
STAMPS_310 = (
    "import json, sys; from edgestats.collectors.power.meter_csv import parse_timestamp_s as parse; "
    "print(json.dumps([parse(text) for text in json.loads(sys.argv[1])]))"
)
QUERY = "SELECT count(*) AS n FROM run_summary WHERE source = 'collect'"


def device_side(bin310: Path, pack: Path, work: Path) -> None:
    """What a device does on 3.10: doctor, collect (a sweep file from the pack: 3 runs; a model file:
    2 runs; PyTorch eager and TorchScript: 4 runs; PyTorch generation: 2 runs), import, merge, sql;
    every file in the v1.0.0 storage format; analyze refused in one line."""
    edgestats = bin310 / "edgestats"
    (work / "sweep.toml").write_text(SWEEP)  # read by tomli on 3.10
    model_file = work / "mine.onnx"
    shutil.copy(next(pack.glob("*/cnn9-*.onnx")), model_file)
    assert "edgestats" in run([edgestats, "doctor"], cwd=work).stdout
    collected = run([edgestats, "collect", "sweep.toml", "--db", "r.duckdb", "--cache-dir", pack], cwd=work)
    assert "3 ok" in collected.stdout + collected.stderr
    by_file = ["--db", "r.duckdb", "-f", "onnxruntime", "-m", model_file, "-n", "20", "--repeat", "2"]
    collected = run([edgestats, "collect", *by_file], cwd=work)
    assert "2 ok" in collected.stdout + collected.stderr
    torch_runs = ["--runtime", "torch-eager", "--runtime", "torchscript", "-n", "20", "--repeat", "2"]
    collected = run(
        [edgestats, "collect", "--db", "r.duckdb", "-f", "pytorch", "-m", "cnn9", *torch_runs], cwd=work
    )
    assert "4 ok" in collected.stdout + collected.stderr
    tokens = ["--prompt-tokens", "16", "--new-tokens", "8", "--repeat", "2"]
    generation = ["--kind", "generation", "-f", "pytorch", "-m", "llama15m", *tokens]
    collected = run([edgestats, "collect", "--db", "r.duckdb", *generation], cwd=work)
    assert "2 ok" in collected.stdout + collected.stderr
    csv = REPO / "sample_data" / "pcamp_inference.csv"
    run([edgestats, "import", "pub.duckdb", csv, "--kind", "inference"], cwd=work)
    run([edgestats, "merge", "m.duckdb", "r.duckdb", "pub.duckdb"], cwd=work)
    answer = run([edgestats, "sql", "m.duckdb", QUERY, "--format", "csv"], cwd=work).stdout
    assert answer.split() == ["n", "11"], answer
    for db in ("r.duckdb", "pub.duckdb", "m.duckdb"):
        assert storage_version(work / db) == 64, f"{db} is not in DuckDB's v1.0.0 storage format"
    refused = run([edgestats, "analyze", "m.duckdb"], ok=False, cwd=work)
    assert refused.returncode == 1 and "Traceback" not in refused.stderr, refused.stderr
    assert refused.stderr.strip().count("\n") == 0 and "needs Python >= 3.11" in refused.stderr
    on_310 = json.loads(run([bin310 / "python", "-c", STAMPS_310, json.dumps(STAMPS)], cwd=work).stdout)
    assert on_310 == [parse_timestamp_s(text) for text in STAMPS], "meter timestamps differ on 3.10"


def device_side_checked(bin310: Path, pack: Path, work: Path) -> None:
    """The venv holds Python 3.10 and the lowest duckdb and torch it should; then the device side."""
    probe = (
        "import sys, duckdb, torch; "
        "print(sys.version_info[:2] == (3, 10), duckdb.__version__, torch.__version__)"
    )
    is310, duckdb_version, torch_version = run([bin310 / "python", "-c", probe], cwd=work).stdout.split()
    assert is310 == "True" and Version(duckdb_version) == Version(lowest_duckdb_310()), duckdb_version
    assert Version(torch_version).release[:2] == Version(lowest_torch()).release[:2], torch_version
    device_side(bin310, pack, work)


def test_device_side_runs_on_python310_and_its_db_reads_in_duckdb1_and_2(tmp_path):
    pack = prepared_pack(tmp_path)
    work = tmp_path / "device"
    work.mkdir()
    try:
        device_side_checked(device_venv(tmp_path), pack, work)
    finally:  # gigabytes with torch, whole or half installed: not left in pytest's kept folders
        shutil.rmtree(tmp_path / "venv310", ignore_errors=True)

    ask = ["-readonly", "-init", "/dev/null", "-csv", "-noheader", work / "m.duckdb", "-c", QUERY]
    assert run([duckdb1_cli(), *ask]).stdout.split() == ["11"]
    run([sys.executable, "-m", "edgestats", "analyze", work / "m.duckdb", "--out", tmp_path / "report"])
    if os.environ.get("EDGESTATS_RECORD_PY310_DB") == "1":
        shutil.copyfile(work / "m.duckdb", RECORDED)
    assert versions(work / "m.duckdb") == versions(RECORDED), (
        f"what Python 3.10 writes no longer matches {RECORDED}: record it again with "
        "EDGESTATS_RECORD_PY310_DB=1 pytest tests/test_py310.py"
    )
    summary = json.loads((tmp_path / "report" / "analysis.json").read_text())["summary"]
    assert (tmp_path / "report" / "index.html").is_file()
    runs = {
        (e["group"]["framework"], e["group"].get("runtime"), e["group"]["model"]): e["n_runs"]
        for e in summary
    }
    assert runs[("onnxruntime", "onnxruntime", "cnn9")] == 3, runs
    assert runs[("pytorch", "torch-eager", "cnn9")] == runs[("pytorch", "torchscript", "cnn9")] == 2, runs
