"""edgestats import --format llama-bench: llama.cpp's llama-bench output, in each of its formats, as
generation runs (tests/data/llama_bench/README.md says how each file was made). Each test reads
the expected figures from the file with a reader of its own (json, csv, sqlite3, a regex on the
markdown table), never with the importer's parser."""

from __future__ import annotations

import csv
import json
import re
import sqlite3
from pathlib import Path

import pytest
from cli_asserts import one_line_error
from typer.testing import CliRunner

from edgestats.cli import app
from edgestats.errors import ImportFileError
from edgestats.imports.importer import import_results
from edgestats.store.results import Store

runner = CliRunner()
DATA = Path(__file__).parents[1] / "data" / "llama_bench"
FORMAT = "llama-bench"


def stored(tmp_path: Path, path: Path) -> list[dict]:
    """The runs `path` imports as, in the file's order: runs and run_results columns, extras by key."""
    db = tmp_path / "r.duckdb"
    report = import_results(db, path, kind=None, fmt=FORMAT, device="vm")
    with Store.open(db, read_only=True) as store:
        runs = store.frame(
            "SELECT r.run_id, r.kind, r.status, r.framework, r.model, r.precision, r.accelerator, r.threads, "
            "r.batch_size, r.model_params, r.prompt_tokens, r.new_tokens, r.context_depth, r.source, "
            "res.prefill_tokens_per_s, res.decode_tokens_per_s, "
            "CAST(json_extract(r.config, '$.row') AS INTEGER) AS row FROM runs r "
            "JOIN run_results res USING (run_id) ORDER BY row"
        ).to_dicts()
        extras = store.frame("SELECT run_id, key, value, value_num FROM run_extra_values").to_dicts()
    assert report.rows == report.runs_added == len(runs)
    for run in runs:
        run["extra"] = {
            e["key"]: e["value_num"] if e["value_num"] is not None else e["value"]
            for e in extras
            if e["run_id"] == run["run_id"]
        }
    return runs


def llama_test_name(prompt: int, gen: int, depth: int) -> str:
    name = f"pp{prompt}" if gen == 0 else f"tg{gen}" if prompt == 0 else f"pp{prompt}+tg{gen}"
    return f"{name} @ d{depth}" if depth else name


def phase_rate(run: dict) -> float | None:
    """The rate a run stores for its phase: prefill for pp tests, decode for tg, none for pp+tg."""
    if run["new_tokens"] == 0:
        assert run["decode_tokens_per_s"] is None
        return run["prefill_tokens_per_s"]
    if run["prompt_tokens"] == 0:
        assert run["prefill_tokens_per_s"] is None
        return run["decode_tokens_per_s"]
    assert run["prefill_tokens_per_s"] is None and run["decode_tokens_per_s"] is None
    return None


def check_configuration(run: dict, test: dict) -> None:
    """The run's configuration columns against the test's record as llama-bench wrote it."""
    assert (run["kind"], run["status"], run["framework"], run["batch_size"]) == (
        "generation",
        "ok",
        "llamacpp",
        1,
    )
    assert (run["prompt_tokens"], run["new_tokens"], run["context_depth"]) == (
        int(test["n_prompt"]),
        int(test["n_gen"]),
        int(test["n_depth"]),
    )
    assert run["threads"] == int(test["n_threads"])
    # an edgestats GGUF (llama15m-seed0.fp32.gguf) is its zoo model's, as collect names it
    assert Path(test["model_filename"]).name.startswith("llama15m-seed0.")
    assert run["model"] == "llama15m" and run["extra"]["model_file"] == test["model_filename"]
    assert run["precision"] == {"F32": "fp32", "Q8_0": "q8_0"}[test["model_type"].split()[-1]]
    assert run["accelerator"] == "cpu" and run["extra"]["backend"] == test["backends"] == "CPU"
    x = run["extra"]
    assert x["test"] == llama_test_name(int(test["n_prompt"]), int(test["n_gen"]), int(test["n_depth"]))
    assert x["model_type"] == test["model_type"] and x["model_size_bytes"] == int(test["model_size"])
    assert run["model_params"] == int(test["model_n_params"]) and x["build_commit"] == test["build_commit"]


def per_test_runs(runs: list[dict], tests: list[dict]) -> None:
    """md, csv, sql: one run per test, with llama-bench's mean and standard deviation."""
    assert len(runs) == len(tests)
    for run, test in zip(runs, tests):
        check_configuration(run, test)
        assert run["extra"]["tokens_per_s"] == pytest.approx(float(test["avg_ts"]), rel=1e-9)
        assert run["extra"]["tokens_per_s_std"] == pytest.approx(float(test["stddev_ts"]), rel=1e-9)
        rate = phase_rate(run)
        assert rate is None or rate == pytest.approx(float(test["avg_ts"]), rel=1e-9)
        assert run["extra"]["duration_ms"] == pytest.approx(float(test["avg_ns"]) / 1e6, rel=1e-9)


def per_repetition_runs(runs: list[dict], tests: list[dict]) -> None:
    """json, jsonl: one run per repetition, its own time and tokens/s; their mean is the test's."""
    reps = [(test, index) for test in tests for index in range(len(test["samples_ts"]))]
    assert len(runs) == len(reps) and len(tests) >= 8
    for test in tests:
        assert len(test["samples_ts"]) == len(test["samples_ns"]) == 3
    for run, (test, index) in zip(runs, reps):
        check_configuration(run, test)
        x = run["extra"]
        assert (x["repetition"], x["repetitions"]) == (index + 1, 3)
        assert x["tokens_per_s"] == pytest.approx(test["samples_ts"][index], rel=1e-9)
        assert x["duration_ms"] == pytest.approx(test["samples_ns"][index] / 1e6, rel=1e-12)
        rate = phase_rate(run)
        assert rate is None or rate == x["tokens_per_s"]
    for number, test in enumerate(tests):
        mine = [r["extra"]["tokens_per_s"] for r, (t, _) in zip(runs, reps) if t is test]
        # llama-bench's avg_ts is the mean of its repetitions' rates (samples_ts: 6 significant digits)
        assert sum(mine) / len(mine) == pytest.approx(test["avg_ts"], rel=1e-5), number


def markdown_tests(path: Path) -> list[dict]:
    """The -o md table read by its header: model type, threads, test and 'mean ± sd' per row."""
    lines = [line for line in path.read_text().splitlines() if line.startswith("|")]
    header = [c.strip() for c in lines[0].strip().strip("|").split("|")]
    rows = []
    for line in lines[2:]:
        cells = dict(zip(header, (c.strip() for c in line.strip().strip("|").split("|"))))
        test = re.fullmatch(r"(?:pp(\d+))?\+?(?:tg(\d+))?(?: @ d(\d+))?", cells["test"])
        prompt, gen, depth = (int(g or 0) for g in test.groups())
        mean, sd = cells["t/s"].split(" ± ")
        rows.append(
            {
                "model": cells["model"],
                "threads": int(cells["threads"]),
                "test": (prompt, gen, depth),
                "t/s": (mean, sd),
            }
        )
    return rows


def test_json_each_repetition_is_a_run(tmp_path):
    path = DATA / "llama15m_fp32.json"
    tests = json.loads(path.read_text())
    per_repetition_runs(stored(tmp_path, path), tests)


def test_jsonl_each_repetition_is_a_run(tmp_path):
    path = DATA / "llama15m_fp32.jsonl"
    tests = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    per_repetition_runs(stored(tmp_path, path), tests)


def test_csv_one_run_per_test(tmp_path):
    path = DATA / "llama15m_fp32.csv"
    with path.open(newline="") as f:
        tests = list(csv.DictReader(f))
    per_test_runs(stored(tmp_path, path), tests)


def test_sql_one_run_per_test_two_models(tmp_path):
    path = DATA / "two_models.sql"
    con = sqlite3.connect(":memory:")  # the way llama-bench's SQL is meant to be read
    con.executescript(path.read_text())
    con.row_factory = sqlite3.Row
    tests = [dict(row) for row in con.execute("SELECT * FROM llama_bench ORDER BY rowid")]
    runs = stored(tmp_path, path)
    per_test_runs(runs, tests)
    assert {r["precision"] for r in runs} == {"fp32", "q8_0"}


@pytest.mark.parametrize(
    ("markdown", "twin"), [("llama15m_fp32.md", "llama15m_fp32.json"), ("two_models.md", None)]
)
def test_markdown_one_run_per_test(tmp_path, markdown, twin):
    """The table's mean ± sd per test; where the same llama-bench run also wrote JSON (-o json
    -oe md), the table's figures are the JSON's avg_ts and stddev_ts to the 2 decimals it prints."""
    rows = markdown_tests(DATA / markdown)
    runs = stored(tmp_path, DATA / markdown)
    assert len(runs) == len(rows) >= 4
    for run, row in zip(runs, rows):
        assert (run["prompt_tokens"], run["new_tokens"], run["context_depth"]) == row["test"]
        assert (run["kind"], run["framework"], run["threads"]) == ("generation", "llamacpp", row["threads"])
        assert run["model"] == run["extra"]["model_type"] == row["model"]  # the table names no file
        mean, sd = (float(v) for v in row["t/s"])
        assert run["extra"]["tokens_per_s"] == mean and run["extra"]["tokens_per_s_std"] == sd
        assert phase_rate(run) in (None, mean)
    if twin:
        tests = json.loads((DATA / twin).read_text())
        assert [f"{t['avg_ts']:.2f} ± {t['stddev_ts']:.2f}" for t in tests] == [
            " ± ".join(r["t/s"]) for r in rows
        ]
        assert {r["extra"]["build_commit"] for r in runs} == {tests[0]["build_commit"]}


def test_reimport_adds_nothing(tmp_path):
    db, path = tmp_path / "r.duckdb", DATA / "llama15m_fp32.csv"
    first = import_results(db, path, kind=None, fmt=FORMAT, device="vm")
    again = import_results(db, path, kind=None, fmt=FORMAT, device="vm")
    assert first.runs_added == again.runs_already_present > 0 and again.runs_added == 0
    # the pp16+tg8 tests (rows 4, 8, 12, 16) store no phase rate, and the note says why
    assert any("rows 4, 8, 12, 16" in n and "pp+tg tests" in n and "tokens_per_s" in n for n in first.notes)


def bad(tmp_path: Path, name: str, text: str) -> str:
    """The one-line error importing `text` as llama-bench output gives; nothing is written."""
    path, db = tmp_path / name, tmp_path / "r.duckdb"
    path.write_text(text)
    with pytest.raises(ImportFileError) as error:
        import_results(db, path, kind=None, fmt=FORMAT, device="vm")
    message = str(error.value)
    assert "\n" not in message and message.endswith("nothing was imported") and not db.exists()
    return message


def test_odd_input_is_a_one_line_error(tmp_path):
    jsonl = (DATA / "llama15m_fp32.jsonl").read_text()
    json_text, sql = (DATA / "llama15m_fp32.json").read_text(), (DATA / "two_models.sql").read_text()
    md = (DATA / "llama15m_fp32.md").read_text()
    assert "not llama-bench output" in bad(tmp_path, "empty.txt", "")
    assert "does not parse" in bad(tmp_path, "cut.json", json_text[: len(json_text) // 2])
    assert "line 2 is not a JSON object" in bad(
        tmp_path, "cut.jsonl", "\n".join(jsonl.splitlines()[:2])[:-40]
    )
    assert "is not an 'INSERT INTO llama_bench" in bad(tmp_path, "x.sql", sql + "DROP TABLE llama_bench;\n")
    row = next(line for line in md.splitlines() if re.search(r"\|\s+pp16 \|", line))
    assert "is not 'MEAN ± SD'" in bad(
        tmp_path, "x.md", md.replace(row, re.sub(r"[\d.]+ ± ", "fast ± ", row))
    )
    pg_only = "\n".join(
        line for line in md.splitlines() if not re.search(r"\| +(pp|tg)\d+( @ d\d+)? \|", line)
    )
    assert "only pp+tg tests" in bad(tmp_path, "pg.md", pg_only)
    assert "no test in it" in bad(tmp_path, "none.json", "[]")


def test_cli_errors_and_other_formats_name_llama_bench(tmp_path):
    db, name = tmp_path / "r.duckdb", str(DATA / "llama15m_fp32.csv")
    inference = one_line_error(
        runner.invoke(app, ["import", str(db), name, "--format", FORMAT, "--kind", "inference"])
    )
    assert "generation runs; drop --long and --kind" in inference
    wrong = one_line_error(
        runner.invoke(app, ["import", str(db), name, "--format", "perf_test", "--device", "x"])
    )
    assert "it looks like llama-bench output: use --format llama-bench" in wrong
    native = str(Path(__file__).parents[1] / "data" / "native" / "perf_test_resnet50v2_sme2.txt")
    other = one_line_error(
        runner.invoke(app, ["import", str(db), native, "--format", FORMAT, "--device", "x"])
    )
    assert "not llama-bench output" in other
    assert not db.exists()
    ok = runner.invoke(app, ["import", str(db), name, "--format", FORMAT, "--device", "x"])
    assert ok.exit_code == 0, ok.output


@pytest.mark.parametrize(
    ("model_type", "precision"),
    [  # llama_model_desc's 'ARCH SIZE FTYPE', FTYPE as llama.cpp's llama_ftype_name writes it
        ("llama ?B all F32", "fp32"),
        ("llama 1B F16", "fp16"),
        ("gemma3 4B BF16", "bf16"),
        ("llama ?B Q8_0", "q8_0"),
        ("llama 8B Q4_K - Medium", "q4_k_m"),
        ("llama 8B (guessed) Q5_K - Small", "q5_k_s"),
        ("llama 8B Q3_K - Large", "q3_k_l"),
        ("llama 8B Q2_K - Medium", "q2_k"),
        ("qwen2 1B IQ2_XXS - 2.0625 bpw", "iq2_xxs"),
        ("qwen2 1B IQ3_S mix - 3.66 bpw", "iq3_m"),
        ("llama 8B unknown, may not work", None),
    ],
)
def test_precision_is_llama_quantize_type_name(model_type, precision):
    from edgestats.imports.llama_bench import _precision

    assert _precision(model_type) == precision


@pytest.mark.parametrize(
    ("backends", "gpu_layers", "accelerator"),
    [
        ("CPU", -1, "cpu"),
        ("BLAS", 99, "cpu"),
        ("CUDA", 99, "cuda"),
        ("CUDA", 0, "cpu"),
        ("Metal,BLAS", 99, "metal"),
    ],
)
def test_accelerator_from_backends_and_offloaded_layers(backends, gpu_layers, accelerator):
    from edgestats.imports.llama_bench import _accelerator

    assert _accelerator(backends, gpu_layers) == accelerator
