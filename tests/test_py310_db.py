"""A results DB written on Python 3.10 by the device side (duckdb 1.x at the lowest version pyproject
allows there; tests/test_py310.py wrote it, and checks that what 3.10 writes still matches it) is read
by `analyze` here, in every lane: on Python 3.13 with the newest duckdb (make test-highest), on 3.11
with the lowest declared versions (make test-lowest) and under make test. The file is never changed by
reading it. It holds ONNX Runtime and PyTorch inference runs and PyTorch generation runs."""

from __future__ import annotations

import hashlib
import json
import shutil
import struct
from pathlib import Path

from typer.testing import CliRunner

from edgestats.cli import app

RECORDED = Path(__file__).parent / "data" / "py310" / "m.duckdb"


def test_a_db_written_on_python310_is_analysed_here(tmp_path: Path):
    db = tmp_path / "m.duckdb"
    shutil.copyfile(RECORDED, db)
    head = db.read_bytes()[:20]
    assert head[8:12] == b"DUCK" and struct.unpack("<Q", head[12:20])[0] == 64, "not v1.0.0 storage"
    before = hashlib.sha256(db.read_bytes()).hexdigest()
    result = CliRunner().invoke(app, ["analyze", str(db), "--out", str(tmp_path / "report")])
    assert result.exit_code == 0, result.output
    summary = json.loads((tmp_path / "report" / "analysis.json").read_text())["summary"]
    runs = {
        (e["group"]["framework"], e["group"]["runtime"], e["group"]["model"]): e["n_runs"] for e in summary
    }
    assert runs[("onnxruntime", "onnxruntime", "cnn9")] == 3, runs  # collected on 3.10 from a model pack
    # PyTorch (the [torch] extra on 3.10): eager and TorchScript inference, and generation
    assert runs[("pytorch", "torch-eager", "cnn9")] == runs[("pytorch", "torchscript", "cnn9")] == 2, runs
    generation = json.loads((tmp_path / "report" / "analysis.json").read_text())["generation"]
    assert [(g["group"]["model"], g["n"]) for g in generation] == [("llama15m", 2)], generation
    assert runs[("PyTorch", None, "alexnet")] >= 1, runs  # the published table imported there
    assert (tmp_path / "report" / "index.html").is_file()
    assert hashlib.sha256(db.read_bytes()).hexdigest() == before, "analyze changed the DB it read"
