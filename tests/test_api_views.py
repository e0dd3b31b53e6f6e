"""What a notebook user sees (edgestats/api/views.py, docs/python-api.md): the `answers` analysis,
reached as every other analysis is, shows its one sentence per group (the sentences of the CLI's
JSON, word for word) in Jupyter and in print(), with the page's one-row-per-group table; a
comparison shows its warnings first and its overall geometric mean of B/A (the figures of the
CLI's JSON) in Jupyter, print() and repr(), and says nothing of warnings where there are none.
Real DBs written through the Store (tests/answers_builders.py, tests/compare_builders.py)."""

from __future__ import annotations

import html
import json
from pathlib import Path

import pytest
from answers_builders import make_answers_db
from compare_builders import make_db
from typer.testing import CliRunner

import edgestats
from edgestats.cli import app
from edgestats.formatting import format_interval

runner = CliRunner()
pytestmark = pytest.mark.slow  # each test analyses or compares real DBs: 2-10 s
BEFORE = {("pytorch", "cnn9"): 10.0, ("pytorch", "squeezenet"): 40.0}
AFTER = {("pytorch", "cnn9"): 10.0, ("pytorch", "squeezenet"): 48.0}
BUSY = "other processes used 85 % of 4 CPUs (> 10 %); load average 5.2 before the run (> 1 per CPU)"


def cli_json(*args: str) -> dict:
    result = runner.invoke(app, list(args))
    assert result.exit_code in (0, 1), result.output
    return json.loads(result.stdout)


@pytest.fixture(scope="module")
def answers_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_answers_db(tmp_path_factory.mktemp("api-answers") / "answers.duckdb", runs=3)


@pytest.fixture(scope="module")
def pairs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, Path]]:
    """A noisy before/after (every run flagged, 3 runs a side) and a quiet one."""
    folder = tmp_path_factory.mktemp("api-compare")
    noise = {"cnn9": BUSY, "squeezenet": BUSY}
    return {
        "noisy": (
            make_db(folder / "noisy-a.duckdb", BEFORE, n_runs=3, noise=noise),
            make_db(folder / "noisy-b.duckdb", AFTER, n_runs=3, seed=10, noise=noise),
        ),
        "quiet": (
            make_db(folder / "quiet-a.duckdb", BEFORE, n_runs=3),
            make_db(folder / "quiet-b.duckdb", AFTER, n_runs=3, seed=10),
        ),
    }


def test_answers_show_one_sentence_per_group_as_the_cli_gives_them(answers_db):
    results = edgestats.open(answers_db)
    answers = results.analyze("answers")
    expected = [
        e["sentence"] for e in cli_json("analyze", str(answers_db), "--only", "answers", "--json")["answers"]
    ]
    assert len(expected) == 8  # 2 devices x 2 models, then 2 models x 2 runtimes across devices
    assert answers.sentences == expected
    assert results.analyze()["answers"].sentences == expected  # every analysis at once: the same
    shown = answers._repr_html_()
    items = [shown.index(f"<li>{html.escape(s)}</li>") for s in expected]
    assert items == sorted(items) and shown.index(html.escape(answers.sentence)) < items[0]
    # then the page's table: one row per group, its fastest named
    assert 'id="table-answers-answers"' in shown and shown.count('<tr data-f-device="') == 4
    assert items[-1] < shown.index('id="table-answers-answers"')
    printed = str(answers).splitlines()
    assert printed[0] == f"answers: {answers.sentence}" and printed[1:9] == [f"- {s}" for s in expected]


def test_analyses_without_groups_have_no_sentences_and_print_their_sentence(answers_db):
    summary = edgestats.open(answers_db).analyze("summary", resamples=200)
    assert summary.sentences == [] and str(summary).startswith(f"summary: {summary.sentence}")
    assert "<ul>" not in summary._repr_html_().split("<div", 1)[0]  # no list of sentences above its tables


def test_a_noisy_comparison_shows_its_warnings_first_and_its_overall_ratio(pairs):
    before, after = pairs["noisy"]
    view = edgestats.open(before).compare(other=after)
    document = cli_json("compare", str(before), str(after), "--format", "json")
    assert view.warnings == document["warnings"] and [w["kind"] for w in view.warnings] == ["noisy"]
    [overall] = document["overall"]
    assert view.overall.to_dicts() == document["overall"]
    figure = format_interval(overall["estimate"], overall["ci_low"], overall["ci_high"])
    said = f"median latency {figure} over 2 configurations"

    shown = view._repr_html_()
    banner = shown.index("<strong>WARNING: the result may be unstable</strong>")
    cause = shown.index(html.escape(document["warnings"][0]["message"], quote=True))
    next_step = shown.index(html.escape(document["warnings"][0]["next_step"], quote=True))
    assert banner < cause < next_step < shown.index(html.escape(view.sentence, quote=True))
    assert "Overall: the geometric mean of B/A across the matched configurations" in shown

    printed = str(view).splitlines()
    assert printed[0] == "WARNING: the result may be unstable"
    assert printed[1].startswith(f"- {document['warnings'][0]['message']}. Next: ")
    assert printed[-1] == f"overall B/A: {said}"
    assert f"overall {said}" in repr(view) and "1 warning: the result may be unstable" in repr(view)


def test_a_quiet_comparison_shows_no_warning_but_its_overall_ratio(pairs):
    before, after = pairs["quiet"]
    view = edgestats.open(before).compare(other=after)
    assert view.warnings == [] and "WARNING" not in view._repr_html_() + str(view) + repr(view)
    [overall] = view.json()["overall"]
    figure = format_interval(overall["estimate"], overall["ci_low"], overall["ci_high"])
    assert f"overall median latency {figure} over 2 configurations" in repr(view)
    assert str(view).splitlines()[0] == view.sentence
