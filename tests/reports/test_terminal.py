"""`edgestats analyze` text at 80 and 120 columns: every line within the width, no word cut in the
middle (rich folds a word its column cannot hold: "FogNo│de"), the collected device's rows
before imported ones, --limit and --all, memory in MiB, and one number format.
"""

from __future__ import annotations

import re
import shutil

import pytest
from analysis_builders import import_sample
from typer.testing import CliRunner

from edgestats.cli import app
from edgestats.formatting import format_interval

runner = CliRunner()
# The imported pCAMP table's devices and frameworks, written with spaces and long words.
WORDS = [
    "FogNode",
    "MacBook",
    "Raspberry",
    "Jetson",
    "TensorFlow",
    "jetson-nano",
    "latency_median_ms",
    "energy_per_inference_j",
    "rss_peak_mib",
]


@pytest.fixture
def mixed_db(tmp_path, results_db):
    """make_results_db's collected device (jetson-nano) and pCAMP's published table, in one DB."""
    db = shutil.copyfile(results_db, tmp_path / "mixed.duckdb")
    return import_sample(db, "pcamp_inference.csv", "inference")


def text(db, columns: int, *args: str) -> str:
    result = runner.invoke(
        app,
        ["analyze", str(db), "--only", "summary", "--resamples", "200", *args],
        env={"COLUMNS": str(columns)},
    )
    assert result.exit_code == 0, result.output
    return result.output


@pytest.mark.parametrize("columns", [80, 120])
def test_text_fits_the_width_and_cuts_no_word(mixed_db, columns):
    output = text(mixed_db, columns, "--all")
    lines = output.splitlines()
    assert max(len(line) for line in lines) <= columns, max(lines, key=len)
    words = set(re.findall(r"[\w.-]+", output))
    for word in WORDS:
        assert word in words, f"{word!r} is cut or missing at {columns} columns"
    assert "…" not in output.replace("… ", "")  # rich's ellipsis marks a cut cell
    assert "e+0" not in output  # 9.395e+04 beside 1114: one format, thousands separated


def test_collected_rows_come_first_and_limit_cuts_the_imported_ones(mixed_db):
    output = text(mixed_db, 120, "--limit", "4")
    distribution = output.split("summary: distribution")[1].split("summary: variance")[0]
    rows = [line for line in distribution.splitlines() if line.startswith("│")]
    assert [("jetson-nano" in row, "FogNode" in row) for row in rows] == [(True, False)] * 2 + [
        (False, True)
    ] * 2
    metrics = output.split("summary: distribution")[0]
    assert "FogNode" not in metrics, "imported rows came before collected ones"
    marks = set(re.findall(r"│ \[(\d+)\]\s*│", metrics))  # the note marks of the rows shown
    listed = set(re.findall(r"^\s+\[(\d+)\] ", metrics, re.MULTILINE))
    assert listed == marks, "a footnote for a row --limit left out"
    assert re.search(r"… \d+ more rows: --all shows them", output)
    assert "more rows" not in text(mixed_db, 120, "--all")


def test_memory_in_mib_and_intervals_in_one_notation(results_db):
    output = text(results_db, 200)
    assert "rss_peak_mib" in output and "rss_peak_bytes" not in output
    assert format_interval(9.39e-4, 8.37e-4, 1.054e-3) == "9.39e-04 [8.37e-04, 1.05e-03]"
    assert format_interval(12.04, 11.0, 13.1) == "12.0 [11.0, 13.1]"


def test_hyperparams_text_shows_best_ties_and_means_without_a_fit(tmp_path):
    """Too few runs for a fit: the text said "skipped" although the JSON had the per-level means
    and the best; and --best's result was not printed at all."""
    csv = tmp_path / "ties.csv"
    csv.write_text("device,framework,Batch Size,Accuracy (%)\nS1,TF,50,99.28\nS1,TF,500,99.28\n")
    db = tmp_path / "t.duckdb"
    assert runner.invoke(app, ["import", str(db), str(csv), "--kind", "training"]).exit_code == 0
    output = text(
        db,
        120,
        "--only",
        "hyperparams",
        "--response",
        "accuracy_pct",
        "--factor",
        "batch_size",
        "--best",
        "max",
    )
    assert "skipped" not in output
    assert "hyperparams: main_effects" in output and "hyperparams: best" in output
    assert "tied: 2 configurations have this mean (batch_size=50; batch_size=500)" in output
    assert "│ accuracy_pct │ max  │ batch_size=50 " in output
    assert (
        "note: hyperparams: (accuracy_pct) not enough data: all 2 runs have the same accuracy_pct" in output
    )


def test_a_numeric_axis_that_tells_rows_apart_stays_at_80_columns(tmp_path):
    """prompt_tokens (an integer) says what a generation row is: at 80 columns it was left out as if
    it were a figure, and the rows of two prompt lengths read as duplicates."""
    from generation_builders import GenConfig, make_generation_db

    db = tmp_path / "gen.duckdb"
    configs = [
        GenConfig(framework=framework, runtime=runtime, prompt_tokens=n)
        for framework, runtime in (("pytorch", "torch-eager"), ("llamacpp", "llama.cpp"))
        for n in (16, 64)
    ]
    make_generation_db(db, configs, runs_per_config=3, seed=5)
    result = runner.invoke(app, ["analyze", str(db), "--only", "generation"], env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.output
    header = " ".join(line for line in result.output.splitlines() if line.startswith("┃"))
    assert "framework" in header and "prompt_tokens" in header, result.output
    assert max(len(line) for line in result.output.splitlines()) <= 80
