"""edgestats import (issue 30): the configuration columns within the ranges collect takes them in
(one table, edgestats/contracts.py CONFIG_RANGES), and no control character in a name (a cell of
a text column, or --device). Each refusal is one line through the real CLI, naming the row, the
column, the value and the range; no DB is created and an existing one keeps its bytes."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from cli_asserts import one_line_error
from import_builders import write
from typer.testing import CliRunner

from edgestats.cli import app
from edgestats.imports.importer import import_results

runner = CliRunner()


def refused(tmp_path: Path, src: Path, *args: str, kind: str = "inference") -> str:
    """The one error line of importing `src` into a new DB, which must not be left behind."""
    db = tmp_path / "new.duckdb"
    line = one_line_error(runner.invoke(app, ["import", str(db), str(src), "--kind", kind, *args]))
    assert not db.exists() and not Path(f"{db}.wal").exists(), "nothing is written on error"
    return line


@pytest.mark.parametrize(
    "column, value, kind, expected",
    [
        ("batch_size", "0", "inference", "range 1 to 2,147,483,647, as collect takes it"),
        ("threads", "0", "inference", "range 1 to 2,147,483,647, as collect takes it); for the framework's"),
        ("epochs", "0", "training", "range 1 to 2,147,483,647"),
        ("learning_rate", "0", "training", "range 1e-12 or more"),
        ("learning_rate", "-0.1", "training", "range 1e-12 or more"),
    ],
)
def test_a_configuration_outside_collects_range_is_one_line(tmp_path, column, value, kind, expected):
    measure = "latency_ms" if kind == "inference" else "training_time_s"
    src = write(
        tmp_path / "t.csv", f"device,framework,{column},{measure}\npi,pytorch,2,3\npi,pytorch,{value},5\n"
    )
    line = refused(tmp_path, src, kind=kind)
    assert f"row 2 (line 3), column '{column}': '{value}' is out of range for {column} ({expected}" in line
    assert line.endswith("nothing was imported")


def test_batch_size_zero_leaves_an_existing_db_byte_for_byte(tmp_path):
    db = tmp_path / "r.duckdb"
    good = write(tmp_path / "good.csv", "device,framework,batch_size,latency_ms\npi,pytorch,1,3\n")
    assert import_results(db, good, kind="inference").runs_added == 1
    before = hashlib.sha256(db.read_bytes()).hexdigest()
    bad = write(tmp_path / "bad.csv", "device,framework,batch_size,latency_ms\npi,tflite,0,3\n")
    line = one_line_error(runner.invoke(app, ["import", str(db), str(bad), "--kind", "inference"]))
    assert "'batch_size': '0' is out of range for batch_size" in line
    assert hashlib.sha256(db.read_bytes()).hexdigest() == before


def test_the_lowest_values_of_each_range_import(tmp_path):
    """The bounds themselves are allowed: batch size and threads 1, iterations and workers 0."""
    src = write(
        tmp_path / "t.csv",
        "device,framework,batch_size,threads,iterations,num_workers,epochs,learning_rate,training_time_s\n"
        "pi,pytorch,1,1,0,0,1,1e-12,3\n",
    )
    assert import_results(tmp_path / "r.duckdb", src, kind="training").runs_added == 1


@pytest.mark.parametrize(
    "column, cell, shown",
    [
        ("device", "pi\x001", r"'pi\x001'"),
        ("model", "mobilenet\x1b[31m", r"'mobilenet\x1b[31m'"),
        ("framework", '"py\ntorch"', r"'py\ntorch'"),
        ("runtime", "ort\x7f", r"'ort\x7f'"),
        ("dataset", "mnist\x85", r"'mnist\x85'"),
    ],
)
def test_a_control_character_in_a_name_is_one_line(tmp_path, column, cell, shown):
    others = {"device": "pi", "framework": "pytorch"}
    header = [column] + [c for c in others if c != column] + ["latency_ms"]
    row = [cell] + [v for c, v in others.items() if c != column] + ["3"]
    src = tmp_path / "t.csv"
    src.write_bytes((",".join(header) + "\n" + ",".join(row) + "\n").encode())
    line = refused(tmp_path, src)
    assert f"row 1 (line 2), column '{column}': {shown} contains a control character" in line
    assert f"{column} must be printable text" in line


def test_a_nul_in_a_parquet_name_is_refused(tmp_path):
    src = tmp_path / "t.parquet"
    pq.write_table(pa.table({"device": ["pi\x00x"], "framework": ["pytorch"], "latency_ms": [3.0]}), src)
    line = refused(tmp_path, src)
    assert r"column 'device': 'pi\x00x' contains a control character" in line


def test_a_control_character_in_device_option_is_one_line(tmp_path):
    src = write(tmp_path / "t.csv", "framework,latency_ms\npytorch,3\n")
    line = refused(tmp_path, src, "--device", "pi\tone")
    assert line == (
        r"error: --device 'pi\tone': contains a control character (U+0009); give printable text; "
        "nothing was imported"
    )
    assert import_results(tmp_path / "ok.duckdb", src, kind="inference", device="pi one").runs_added == 1
