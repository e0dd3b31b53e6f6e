"""Messages that say what is wrong (issue 39): a path's kind instead of "no such file", long names
cut short, a damaged device file in words, half a tool's output refused, a DuckDB file edgestats did
not make named as such, and a generation batch past memory refused before any run."""

from __future__ import annotations

import json
import os
from pathlib import Path

import duckdb
import pytest
from cli_asserts import one_line_error
from import_builders import write
from typer.testing import CliRunner

from edgestats.cli import app
from edgestats.collectors.host.device_name import remembered
from edgestats.collectors.sweep import SweepError, build_sweep

runner = CliRunner()
NATIVE = Path(__file__).parents[1] / "data" / "native"
LONG = "x" * 10_000


def test_an_input_that_is_a_directory_fifo_or_device_says_what_it_is(tmp_path):
    os.mkfifo(tmp_path / "fifo")
    for path, kind in (
        (tmp_path, "a directory"),
        (tmp_path / "fifo", "a FIFO"),
        ("/dev/zero", "a character device"),
    ):
        line = one_line_error(
            runner.invoke(app, ["import", str(tmp_path / "r.duckdb"), str(path), "--kind", "inference"])
        )
        assert line == f"error: {path} is {kind}, not a file; give the path of a results file"


def test_a_10_kb_device_name_is_cut_short_and_refused_alike_by_collect_and_import(tmp_path):
    src = write(tmp_path / "t.csv", "framework,latency_ms\npytorch,3\n")
    by_collect = one_line_error(
        runner.invoke(
            app,
            [
                "collect",
                "--db",
                str(tmp_path / "c.duckdb"),
                "-f",
                "onnxruntime",
                "-m",
                "cnn9",
                "--device-name",
                LONG,
            ],
        )
    )
    by_import = one_line_error(
        runner.invoke(
            app, ["import", str(tmp_path / "i.duckdb"), str(src), "--kind", "inference", "--device", LONG]
        )
    )
    for line in (by_collect, by_import):
        assert "is too long (10,000 characters)" in line and len(line) < 300, line[:400]
    assert not list(tmp_path.glob("*.duckdb"))


@pytest.mark.parametrize(
    ("content", "said"),
    [
        ({"name": "pi"}, "it has no 'machine' text, which edgestats writes"),
        ([1, 2], "it holds a JSON list, not the object edgestats writes"),
        ({"name": LONG, "machine": "m"}, "is too long (10,000 characters)"),
    ],
)
def test_a_damaged_device_file_is_said_in_words(tmp_path, content, said):
    path = tmp_path / "device.json"
    path.write_text(json.dumps(content))
    note = remembered("m", path)[1]
    assert said in note and "Error" not in note and len(note) < 300, note


@pytest.mark.parametrize(
    "name", ["perf_test_resnet50v2_sme2.txt", "mlperf_orin_resnet50_singlestream_summary.txt"]
)
def test_half_of_a_tools_output_is_refused_as_cut_short(tmp_path, name):
    text = (NATIVE / name).read_text()
    half = write(tmp_path / name, text[: len(text) // 2])
    fmt = name.split("_")[0] + ("_test" if name.startswith("perf") else "")
    line = one_line_error(
        runner.invoke(
            app, ["import", str(tmp_path / "r.duckdb"), str(half), "--format", fmt, "--device", "pi"]
        )
    )
    assert "output cut short" in line and "nothing was imported" in line, line
    assert not (tmp_path / "r.duckdb").exists()


def test_verify_names_a_duckdb_file_edgestats_did_not_make(tmp_path):
    plain, empty = tmp_path / "plain.duckdb", tmp_path / "empty.duckdb"
    with duckdb.connect(str(plain)) as con:
        con.execute("CREATE TABLE t (a INTEGER)")
    duckdb.connect(str(empty)).close()
    for path in (plain, empty):
        line = one_line_error(runner.invoke(app, ["verify", str(path)]))
        assert "not an edgestats results DB" in line, line


def test_a_generation_batch_whose_kv_cache_exceeds_memory_is_refused_before_any_run():
    """Was: `--batch-size 2147483647` accepted, its KV cache tens of TB."""
    with pytest.raises(
        SweepError, match=r"need a KV cache of [\d,.]+ GiB, more than the .* GiB of memory available"
    ):
        build_sweep(
            {"kind": "generation", "framework": "onnxruntime", "model": "llama15m", "batch_size": 2147483647}
        )
