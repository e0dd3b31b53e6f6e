"""edgestats import: canonical columns, --map, units, extras as JSON, and bad files writing nothing."""

from __future__ import annotations

import hashlib
import json

import polars as pl
import pytest
from cli_asserts import one_line_error
from import_builders import SAMPLE, rows, write
from typer.testing import CliRunner

from edgestats.cli import app
from edgestats.contracts import normalise
from edgestats.errors import ImportFileError
from edgestats.imports.columns import resolve
from edgestats.imports.importer import import_results

runner = CliRunner()


def test_published_table_imports_with_its_own_headers(tmp_path):
    db = tmp_path / "r.duckdb"
    report = import_results(db, SAMPLE, kind="training")
    assert report.runs_added == 5 and report.devices == ["Server-1"]
    assert report.columns["Training Time (s)"] == "training_time_s"
    got = rows(
        db,
        "SELECT batch_size, iterations, training_time_s, accuracy_pct, status, source "
        "FROM training_summary ORDER BY training_time_s",
    )
    assert got[0] == {
        "batch_size": 5000,
        "iterations": 200,
        "training_time_s": 937.37,
        "accuracy_pct": 95.89,
        "status": "ok",
        "source": "import:dlaas_tf_mnist_cpu.csv",
    }
    assert got[-1]["training_time_s"] == 93946.05  # "93,946.05" in the file


def test_importing_the_same_file_twice_adds_nothing(tmp_path):
    db = tmp_path / "r.duckdb"
    import_results(db, SAMPLE, kind="training")
    again = import_results(db, SAMPLE, kind="training")
    assert again.runs_added == 0 and again.runs_already_present == 5
    assert rows(db, "SELECT count(*) AS n FROM runs")[0]["n"] == 5


def test_map_units_and_extras(tmp_path):
    src = write(
        tmp_path / "lat.csv",
        """
board,framework,model,batch_size,mean latency,mem_max_gib,energy_mwh,accuracy_frac,firmware
Pi 4,pytorch,squeezenet,1,12500,0.5,0.25,0.71,v1.2
Pi 4,tflite,squeezenet,1,8000,0.25,,0.70,v1.2
""",
    )
    db = tmp_path / "r.duckdb"
    report = import_results(db, src, kind="inference", mappings=["board=device", "mean latency=latency_us"])
    assert report.extra_columns == ["firmware"]
    got = rows(
        db,
        "SELECT d.name, r.framework, res.latency_ms, res.mem_max_mb, res.energy_j, res.accuracy_pct, r.extra "
        "FROM runs r JOIN run_results res USING (run_id) JOIN devices d USING (device_id) "
        "ORDER BY r.framework",
    )
    assert got[0]["name"] == "Pi 4"
    assert got[0]["latency_ms"] == pytest.approx(12.5)
    assert got[0]["mem_max_mb"] == pytest.approx(512.0)
    assert got[0]["energy_j"] == pytest.approx(0.9)  # 0.25 mWh = 0.9 J
    assert got[0]["accuracy_pct"] == pytest.approx(71.0)
    assert got[1]["energy_j"] is None, "an empty cell is NULL, never 0"
    assert json.loads(got[0]["extra"]) == {"firmware": "v1.2"}


def test_nan_rows_are_stored_as_diverged(tmp_path):
    src = write(
        tmp_path / "lr.csv",
        """
framework,batch_size,learning_rate,accuracy_pct
Caffe,64,0.1,NaN
Caffe,64,0.01,99.00
""",
    )
    db = tmp_path / "r.duckdb"
    report = import_results(db, src, kind="training", device="Server-2")
    assert report.diverged_rows == [1]
    got = rows(
        db,
        "SELECT learning_rate, status, accuracy_pct, error_text FROM training_summary "
        "ORDER BY learning_rate DESC",
    )
    assert (
        got[0]["status"] == "diverged"
        and got[0]["accuracy_pct"] is None
        and "accuracy_pct" in got[0]["error_text"]
    )
    assert got[1]["status"] == "ok"


def test_parquet_import(tmp_path):
    src = tmp_path / "r.parquet"
    pl.DataFrame(
        {
            "device": ["tx2", "tx2"],
            "framework": ["tensorflow", "mxnet"],
            "latency_ms": [40.5, 33.1],
            "threads": [4, 4],
        }
    ).write_parquet(src)
    db = tmp_path / "r.duckdb"
    assert import_results(db, src, kind="inference").runs_added == 2
    assert rows(db, "SELECT sum(latency_median_ms) AS s FROM run_summary")[0]["s"] == pytest.approx(73.6)


@pytest.mark.parametrize(
    "text, match",
    [
        (
            "framework,latency_ms\npytorch,12\ntflite,abc\n",
            r"row 2 \(line 3\), column 'latency_ms': 'abc' is not a number",
        ),
        ("framework,batch_size\npytorch,1.5\n", r"row 1 .*'batch_size': '1.5' is not a whole number"),
        ("framework,accuracy_pct\npytorch,140\n", r"row 1 .*above 100"),
        ("framework,training_time_s\npytorch,-3\n", r"row 1 .*is negative"),
        ("framework,status\npytorch,finished\n", r"row 1 .*'finished' is not a run status"),
        ("colour,size\nred,3\n", r"none of its columns .* Rename them with --map"),
        ("framework,latency_mb\npytorch,3\n", r"'mb' is a memory unit but latency is a time"),
        ("framework,kind\npytorch,inference\n", r"disagrees with --kind training"),
    ],
)
@pytest.mark.slow
def test_bad_files_name_row_and_column_and_write_nothing(tmp_path, text, match):
    db = tmp_path / "r.duckdb"
    import_results(db, SAMPLE, kind="training")  # an existing DB with content
    before = hashlib.sha256(db.read_bytes()).hexdigest()
    bad = tmp_path / "bad.csv"
    bad.write_text(text)
    with pytest.raises(ImportFileError, match=match):
        import_results(db, bad, kind="training", device="x")
    assert hashlib.sha256(db.read_bytes()).hexdigest() == before


def test_missing_file_missing_device_and_bad_map(tmp_path):
    db = tmp_path / "r.duckdb"
    with pytest.raises(ImportFileError, match="no such file"):
        import_results(db, tmp_path / "absent.csv", kind="inference")
    src = write(tmp_path / "a.csv", "framework,latency_ms\npytorch,3\n")
    with pytest.raises(ImportFileError, match="--device NAME"):
        import_results(db, src, kind="inference")
    with pytest.raises(ImportFileError, match="does not have"):
        import_results(db, src, kind="inference", device="d", mappings=["nope=latency_ms"])
    with pytest.raises(ImportFileError, match="SRC=DST"):
        import_results(db, src, kind="inference", device="d", mappings=["latency_ms"])
    assert not db.exists(), "a failed import must not even create the DB"


def test_column_names_normalise_and_resolve():
    assert normalise("Training Time (s)") == "training_time_s"
    assert normalise("Accuracy (%)") == "accuracy_pct"
    assert normalise("#Iterations") == "iterations"
    spec, factor = resolve("training_time_min")
    assert spec.name == "training_time_s" and factor == 60.0
    assert resolve("firmware") is None


def test_import_cli_success_and_error(tmp_path):
    db = tmp_path / "r.duckdb"
    ok = runner.invoke(app, ["import", str(db), str(SAMPLE), "--kind", "training"])
    assert ok.exit_code == 0, ok.output
    assert "5 runs added" in ok.output
    bad = runner.invoke(app, ["import", str(db), str(tmp_path / "nope.csv"), "--kind", "training"])
    assert bad.exit_code == 1 and "error:" in bad.output and "Traceback" not in bad.output


@pytest.mark.parametrize(
    "column, value", [("batch_size", "1e23"), ("threads", "3000000000"), ("iterations", "2147483648")]
)
def test_a_count_too_large_for_its_column_is_one_line_and_creates_no_db(tmp_path, column, value):
    db = tmp_path / "new.duckdb"
    src = write(
        tmp_path / "big.csv", f"device,framework,{column},latency_ms\npi,pytorch,4,3\npi,pytorch,{value},5\n"
    )
    line = one_line_error(runner.invoke(app, ["import", str(db), str(src), "--kind", "inference"]))
    assert f"row 2 (line 3), column '{column}': '{value}' is too large" in line and "2147483647" in line
    assert sorted(p.name for p in tmp_path.iterdir()) == ["big.csv"], "nothing is written on error"
    largest = write(
        tmp_path / "largest.csv", f"device,framework,{column},latency_ms\npi,pytorch,2147483647,5\n"
    )
    assert import_results(db, largest, kind="inference").runs_added == 1


@pytest.mark.parametrize(
    "text, line",
    [
        ('device,framework,latency_ms\npi,pytorch,3\n"pi,pytorch,5\n', 3),
        ('device,framework,latency_ms\n"pi,pytorch,5\nx,tflite,3\n', 2),
        ('device,framework,latency_ms\n"pi,pytorch,5\n"x,y",z,3\n', 2),
        ('device\tframework\tlatency_ms\npi\t"pytorch\t5\n', 2),
    ],
)
@pytest.mark.slow
def test_an_unbalanced_quote_is_refused_naming_its_row(tmp_path, text, line):
    db = tmp_path / "r.duckdb"
    import_results(db, SAMPLE, kind="training")
    before = hashlib.sha256(db.read_bytes()).hexdigest()
    src = tmp_path / ("bad.tsv" if "\t" in text else "bad.csv")
    src.write_text(text)
    error = one_line_error(runner.invoke(app, ["import", str(db), str(src), "--kind", "inference"]))
    assert f"row {line - 1} (line {line})" in error and "unbalanced quote" in error
    assert hashlib.sha256(db.read_bytes()).hexdigest() == before
    assert rows(db, "SELECT count(*) AS n FROM devices WHERE name LIKE '%\"%'")[0]["n"] == 0


def test_quoted_cells_still_import(tmp_path):
    """A line break inside a quoted cell parses; in a name it is a control character (refused,
    test_import_ranges.py), so it is in a column kept as extra here."""
    src = write(
        tmp_path / "q.csv",
        'device,framework,model,latency_ms,note\n"pi, 4B",pytorch,"say ""hi""",3,\n'
        'pi,tflite,m,5,"two\nlines"\n',
    )
    report = import_results(tmp_path / "r.duckdb", src, kind="inference")
    assert report.devices == ["pi", "pi, 4B"]
    assert sorted(r["model"] for r in rows(tmp_path / "r.duckdb", "SELECT model FROM runs")) == [
        "m",
        'say "hi"',
    ]
    notes = rows(tmp_path / "r.duckdb", "SELECT extra->>'note' AS note FROM runs WHERE model = 'm'")
    assert notes == [{"note": "two\nlines"}]


def test_a_file_that_is_not_utf8_is_one_line(tmp_path):
    db = tmp_path / "new.duckdb"
    src = tmp_path / "latin1.csv"
    src.write_bytes(b"device,framework,latency_ms\npi,pytorch,3\nk\xf6ln,tflite,5\n")
    error = one_line_error(runner.invoke(app, ["import", str(db), str(src), "--kind", "inference"]))
    assert "line 3" in error and "UTF-8" in error
    assert not db.exists()


def test_generation_table_imports_its_shape_and_rates(tmp_path):
    """--kind generation: a table of generation runs (schema 0009's columns), rates stored as
    written (a name ending in per_s is never read as seconds), time to first token converted."""
    src = write(
        tmp_path / "gen.csv",
        """
device,framework,model,model_params,prompt_tokens,new_tokens,context_depth,kv_cache_gib,ttft_s,prefill_tokens_per_s,decode_tokens_per_s
pi5,llamacpp,llama15m,15933312,128,64,512,0.5,0.25,410.5,38.25
""",
    )
    db = tmp_path / "r.duckdb"
    report = import_results(db, src, kind="generation")
    assert (
        report.columns["ttft_s"] == "ttft_ms (×1000)"
        and report.columns["kv_cache_gib"] == "kv_cache_bytes (×1.07374e+09)"
    )
    got = rows(
        db,
        "SELECT kind, model_params, prompt_tokens, new_tokens, context_depth, kv_cache_bytes, ttft_ms, "
        "prefill_tokens_per_s, decode_tokens_per_s FROM runs JOIN run_results USING (run_id)",
    )
    assert got == [
        {
            "kind": "generation",
            "model_params": 15933312,
            "prompt_tokens": 128,
            "new_tokens": 64,
            "context_depth": 512,
            "kv_cache_bytes": 2**29,
            "ttft_ms": 250.0,
            "prefill_tokens_per_s": 410.5,
            "decode_tokens_per_s": 38.25,
        }
    ]
    negative = write(tmp_path / "neg.csv", "device,framework,decode_tokens_per_s\npi5,llamacpp,-3\n")
    with pytest.raises(ImportFileError, match="is negative"):
        import_results(tmp_path / "n.duckdb", negative, kind="generation")
