"""`edgestats analyze`'s answers: printed first, one sentence per group, wrapped at word boundaries
to 80 and 120 columns; --answer-by / --answer-across choose the groups and the candidates (and a
bad key is one line); the Python API gives what the CLI gives."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from answers_builders import make_answers_db
from typer.testing import CliRunner

import edgestats
from edgestats.cli import app

runner = CliRunner()


@pytest.fixture(scope="module")
def answers_db(tmp_path_factory) -> Path:
    return make_answers_db(tmp_path_factory.mktemp("answers-cli") / "a.duckdb", runs=3)


def answers_json(db: Path, *args: str) -> list[dict]:
    result = runner.invoke(app, ["analyze", str(db), "--only", "answers", "--json", *args])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)["answers"]


@pytest.mark.slow
@pytest.mark.parametrize("columns", [80, 120])
def test_answers_come_first_one_sentence_per_group(answers_db, columns):
    sentences = [e["sentence"] for e in answers_json(answers_db)]
    assert len(sentences) == 8  # 2 devices × 2 models, then 2 models × 2 frameworks across devices
    result = runner.invoke(app, ["analyze", str(answers_db)], env={"COLUMNS": str(columns)})
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0] == "answers (level 0.95)" and lines.index("answers (level 0.95)") == 0
    block = lines[1 : 1 + next(i for i, line in enumerate(lines[1:]) if not line.startswith(" "))]
    assert all(len(line) <= columns for line in block), block
    # each sentence starts one item " - ..." and continues on indented lines: joined back at the
    # wrapping spaces, the items are the sentences, word for word (no word was cut)
    items = [[]]
    for line in block:
        if line.startswith(" - ") and items[-1]:
            items.append([])
        items[-1].append(line[3:])
    assert [" ".join(item) for item in items] == sentences
    assert sum(line.startswith(" - ") for line in block) == len(sentences)
    assert lines.index(next(line for line in lines if line.startswith("summary:"))) > len(block)


@pytest.mark.slow
def test_answer_by_and_across_choose_groups_and_candidates(answers_db):
    by_device = answers_json(answers_db, "--answer-by", "device", "--answer-by", "model")
    assert [e["group"] for e in by_device if e.get("kind") != "across_devices"] == [
        {"device": d, "model": m} for d in ("pi5", "vm") for m in ("cnn9", "squeezenet")
    ]
    across_models = answers_json(answers_db, "--answer-across", "model")
    within = [e for e in across_models if e.get("kind") != "across_devices"]
    assert {e["fastest"] for e in within} == {"cnn9"} and all(
        e["candidate_keys"] == ["model"] for e in within
    )
    assert {tuple(sorted(e["group"])) for e in within} == {
        ("batch_size", "device", "framework", "precision", "runtime", "threads")
    }
    api = edgestats.open(answers_db).analyze("answers", answer_across="model")
    assert api.json() == across_models


@pytest.mark.parametrize(
    "args, message",
    [
        (["--answer-by", "colour"], "--answer-by colour: not a run column; use one of"),
        (["--answer-across", "colour"], "--answer-across colour: not a run column; use one of"),
        (["--answer-by", "model", "--answer-across", "model"], "both --answer-by and --answer-across"),
    ],
)
def test_bad_answer_keys_are_one_line_errors(results_db, args, message):
    result = runner.invoke(app, ["analyze", str(results_db), "--only", "summary", *args])
    assert result.exit_code == 1 and message in result.output, result.output
    assert "Traceback" not in result.output and len(result.output.strip().splitlines()) == 1
