"""`edgestats analyze` through typer's CliRunner: the JSON contract, the text output, errors."""

from __future__ import annotations

import json

import pytest
from analysis_builders import import_sample
from typer.testing import CliRunner

from edgestats.cli import app
from edgestats.registry.analyses import analysis_names

runner = CliRunner()


def no_nan(text: str):
    return json.loads(text, parse_constant=lambda c: pytest.fail(f"{c} in the JSON"))


def test_hyperparams_json_has_the_documented_shape(tmp_path):
    db = import_sample(tmp_path / "d.duckdb", "dlaas_caffe_iterations_gpu.csv", "training")
    result = runner.invoke(
        app,
        [
            "analyze",
            str(db),
            "--only",
            "hyperparams",
            "--response",
            "training_time_s",
            "--factor",
            "iterations",
            "--by",
            "dataset",
            "--best",
            "min",
            "--json",
        ],
    )
    assert result.exit_code == 0, result.output
    document = no_nan(result.stdout)
    assert list(document) == ["hyperparams"]
    mnist = next(e for e in document["hyperparams"] if e["group"] == {"dataset": "mnist"})
    assert mnist["response"] == "training_time_s" and mnist["n"] == 4 and mnist["r_squared"] > 0.9999
    assert mnist["best"]["config"] == {"iterations": 10000} and mnist["best"]["value"] == 97.02
    assert {"term", "estimate", "ci_low", "ci_high", "p_value"} <= set(mnist["terms"][0])
    assert mnist["level"] == 0.95


def test_every_analysis_as_json_and_as_text(results_db):
    result = runner.invoke(app, ["analyze", str(results_db), "--json", "--resamples", "200"])
    assert result.exit_code == 0, result.output
    document = no_nan(result.stdout)
    assert list(document) == list(analysis_names())
    for entries in document.values():
        for entry in entries:
            assert {"group", "n", "level"} <= set(entry)
    text = runner.invoke(app, ["analyze", str(results_db), "--resamples", "200"])
    assert text.exit_code == 0, text.output
    assert "summary: metrics" in text.stdout and "energy: skipped" in text.stdout


@pytest.mark.parametrize(
    "args, message",
    [
        (["--where", "1; DROP TABLE runs"], "must be one expression"),
        (["--by", "colour"], "not a run column; use one of"),
        (
            [
                "--only",
                "hyperparams",
                "--response",
                "training_time_s",
                "--factor",
                "batch_size",
                "--best",
                "most",
            ],
            "--best 'most'",
        ),
        (["--level", "1.5"], "--level 1.5"),
    ],
)
def test_errors_are_one_line_and_exit_1(results_db, args, message):
    result = runner.invoke(app, ["analyze", str(results_db), *args])
    assert result.exit_code == 1
    assert message in result.output and "Traceback" not in result.output


def test_filters_and_missing_db(results_db, tmp_path):
    result = runner.invoke(
        app, ["analyze", str(results_db), "--only", "summary", "--framework", "onnxruntime", "--json"]
    )
    assert [e["group"]["framework"] for e in no_nan(result.stdout)["summary"]] == ["onnxruntime"]
    missing = runner.invoke(app, ["analyze", str(tmp_path / "nope.duckdb")])
    assert missing.exit_code == 1 and "no such file" in missing.output


def test_text_output_keeps_intervals_and_turns_notes_into_footnotes(results_db):
    """Piped output: wide tables (no 80-column folding), "est [low, high]" cells that rich must not
    read as markup, and each distinct note once, as a numbered footnote."""
    import re

    from typer.testing import CliRunner

    from edgestats.cli import app

    result = CliRunner().invoke(app, ["analyze", str(results_db), "--only", "summary"])
    assert result.exit_code == 0, result.output
    assert re.search(r"\d \[[\d.,]+, [\d.,]+\]", result.output), result.output
    assert "latency_median_ms " in result.output  # not folded over two lines
    footnotes = re.findall(r"^\s+\[(\d+)\] (.+)$", result.output, flags=re.M)
    assert footnotes and len({text for _, text in footnotes}) == len(footnotes)
