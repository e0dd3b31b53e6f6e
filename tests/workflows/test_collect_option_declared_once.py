"""A collect option is one edit: in a temporary copy of the repository, one new entry in the
declarations (collectors/options.py) and nothing else, and the copy's `collect --help` shows the
flag, the flag reaches the sweep, a sweep file's key of that name is accepted and typed, the
Python entry (edgestats.workflows.collect.collect) takes it as a keyword, and the copy's tests of
the sweep, the declarations and --help pass unchanged. The runs themselves are left out: the
copy's orchestrator is replaced by one that records the sweep it was given and stops, so no
framework and no DB is needed (what a setting does once it is in the sweep is collect's own test).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from repo_copy import copy_env, copy_repository, package_tree, snapshot

DECLARATIONS = "collectors/options.py"
ANCHOR = "    # -- how many runs: --until-precise"
HELP = "A note on the lab's conditions, stored with the sweep."
NEW_OPTION = f'    SweepKey("lab_note", str, "{HELP}", metavar="TEXT"),\n'

# Run in the copy: three collects through its CLI and one through its Python entry, each stopped
# where the orchestrator would open, with the sweep it would have run recorded.
CHILD = r"""
import json, sys
from pathlib import Path
from typer.testing import CliRunner
import edgestats.workflows.collect as workflow
from edgestats.cli import app
from edgestats.errors import EdgestatsError

tmp, planned = Path(sys.argv[1]), []

def open_orchestrator(db, sweep, *, cache_dir=None):
    planned.append(sweep.settings)
    raise EdgestatsError("stopped where the orchestrator opens (a test)")

workflow.open_orchestrator = open_orchestrator
db = tmp / "r.duckdb"
table = '[sweep]\nframework = "onnxruntime"\nmodel = "cnn9"\nlab_note = '
(tmp / "good.toml").write_text(table + '"door shut"\n')
(tmp / "bad.toml").write_text(table + "3\n")
runs = [
    ["collect", "--db", str(db), "-f", "onnxruntime", "-m", "cnn9", "--lab-note", "window open"],
    ["collect", str(tmp / "good.toml"), "--db", str(db)],
    ["collect", str(tmp / "bad.toml"), "--db", str(db)],
]
results = [CliRunner().invoke(app, args) for args in runs]
try:
    workflow.collect(db, framework="onnxruntime", model="cnn9", lab_note="from Python")
except EdgestatsError as exc:
    python = str(exc)
print(json.dumps({
    "planned": planned,
    "codes": [r.exit_code for r in results],
    "outputs": [r.output for r in results],
    "python": python,
    "db_exists": db.exists(),
}))
"""


def add_option(copy: Path) -> None:
    path = copy / DECLARATIONS
    text = path.read_text()
    assert text.count(ANCHOR) == 1, f"{DECLARATIONS} no longer has the line this test adds the option before"
    path.write_text(text.replace(ANCHOR, NEW_OPTION + ANCHOR))


def run(copy: Path, env: dict, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, *args], cwd=copy, env=env, capture_output=True, text=True, timeout=300
    )


@pytest.mark.slow  # three processes on a copy of the repository: about 10 s
def test_a_new_collect_option_is_one_edit_of_the_declarations(tmp_path):
    copy = copy_repository(tmp_path / "repo")
    before = snapshot(copy)
    add_option(copy)
    env = {**copy_env(package_tree(copy, tmp_path / "packages")), "COLUMNS": "200"}

    shown = run(copy, env, "-m", "edgestats", "collect", "--help")
    assert shown.returncode == 0, shown.stderr
    assert "--lab-note" in shown.stdout and HELP in shown.stdout

    child = run(copy, env, "-c", CHILD, str(tmp_path))
    assert child.returncode == 0, child.stderr
    seen = json.loads(child.stdout.splitlines()[-1])
    flag, file, bad = seen["outputs"]
    assert seen["codes"] == [1, 1, 1] and "stopped where the orchestrator opens" in flag, seen
    assert "lab_note: expected a string, got int 3" in bad  # typed as declared: str, a setting
    assert [s.get("lab_note") for s in seen["planned"]] == ["window open", "door shut", "from Python"]
    assert "stopped where the orchestrator opens" in seen["python"] and not seen["db_exists"]

    tests = ["tests/collectors/test_sweep.py", "tests/cli/test_declared.py", "tests/cli/test_help.py"]
    options = ["-q", "-p", "no:cacheprovider", "-n", "0", f"--basetemp={tmp_path / 'basetemp'}"]
    passed = run(copy, env, "-m", "pytest", *options, "-m", "not frameworks", *tests)
    assert passed.returncode == 0, f"the copy's tests fail:\n{passed.stdout[-6000:]}{passed.stderr[-2000:]}"

    after = snapshot(copy)
    changed = sorted(path for path in before.keys() | after.keys() if before.get(path) != after.get(path))
    assert changed == [DECLARATIONS]
    ruff = shutil.which("ruff", path=str(Path(sys.executable).parent)) or shutil.which("ruff")
    if ruff is not None:  # the one edit is formatted as make lint wants it
        for command in (["check"], ["format", "--check"]):
            linted = subprocess.run(
                [ruff, *command, "--no-cache", DECLARATIONS], cwd=copy, capture_output=True, text=True
            )
            assert linted.returncode == 0, f"ruff {' '.join(command)}:\n{linted.stdout}{linted.stderr}"
