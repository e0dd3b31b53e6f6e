"""Adding an analyze option is one edit: in a copy of the repository, a new option written into its
declaration (edgestats/analysis/core/flags.py) and nowhere else is in `analyze --help`, is taken by
`analyze DB --FLAG X --json` and by the Python API's `analyze(name=X)`, and reaches AnalysisOptions
as a field of its own (the CLI's and the API's alike). Nothing but the declaration changes."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from repo_copy import copy_env, copy_repository, package_tree, snapshot

DECLARATION = "edgestats/analysis/core/flags.py"
NEW_OPTION = """    Opt(
        "probe_note",
        str,
        "A probe option: declared here, and nowhere else.",
        metavar="TEXT",
    ),
"""
# Runs the CLI and the API in the copy, with a spy on the one function every analysis run goes
# through (core/run.py's analyse_data), and prints what each AnalysisOptions held.
SPY = """
import json, sys
import edgestats
import edgestats.analysis.core.run as run
from edgestats.cli import app

seen, analyse = [], run.analyse_data
run.analyse_data = lambda data, options: seen.append(options) or analyse(data, options)
db = sys.argv[1]
try:
    app(["analyze", db, "--only", "summary", "--resamples", "100", "--probe-note", "cli", "--json"])
except SystemExit as exc:
    assert exc.code == 0, exc.code
edgestats.open(db).analyze("summary", resamples=100, probe_note="api")
print("SEEN " + json.dumps([options.probe_note for options in seen]))
"""


def declare(copy: Path) -> None:
    """The one edit: the new option at the end of ANALYSIS_OPTIONS."""
    path = copy / DECLARATION
    text = path.read_text()
    start = text.index("ANALYSIS_OPTIONS = (")
    end = text.index("\n)\n", start) + 1
    path.write_text(text[:end] + NEW_OPTION + text[end:])


def run(copy: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    result = subprocess.run(
        [sys.executable, *args], cwd=copy, env=env, capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, f"{args[:2]}:\n{result.stdout[-4000:]}{result.stderr[-4000:]}"
    return result


def lint(copy: Path) -> None:
    """The edited declaration stays as ruff (make lint) wants it, where ruff is installed."""
    ruff = shutil.which("ruff", path=str(Path(sys.executable).parent)) or shutil.which("ruff")
    for command in [] if ruff is None else (["check"], ["format", "--check"]):
        result = subprocess.run(
            [ruff, *command, "--no-cache", DECLARATION], cwd=copy, capture_output=True, text=True
        )
        assert result.returncode == 0, f"ruff {' '.join(command)}:\n{result.stdout}{result.stderr}"


@pytest.mark.slow  # two processes that import the analysis stack: a few seconds
def test_a_new_option_is_one_edit_of_the_declaration(tmp_path, results_db):
    copy = copy_repository(tmp_path / "repo")
    before = snapshot(copy)
    declare(copy)
    env = copy_env(package_tree(copy, tmp_path / "packages"))

    shown = run(copy, env, "-m", "edgestats", "analyze", "--help").stdout
    assert "--probe-note" in shown and "A probe option: declared here" in " ".join(shown.split())

    out = run(copy, env, "-c", SPY, str(results_db)).stdout
    document, seen = out.rsplit("SEEN ", 1)
    assert "summary" in json.loads(document)  # the CLI's --json, with the new flag given
    assert json.loads(seen) == ["cli", "api"]  # each reached AnalysisOptions.probe_note

    after = snapshot(copy)
    changed = sorted(path for path in before.keys() | after.keys() if before.get(path) != after.get(path))
    assert changed == [DECLARATION]
    lint(copy)
