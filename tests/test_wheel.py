"""The built wheel works on its own: package-dir mapping, schema .sql files as package data.

docs/architecture.md §3 lists the traps: a mapped folder missing from the wheel, .sql files left out, or
generic names (schema, reports, collectors) landing at the top of site-packages. This builds the
wheel, installs it into a clean venv (no editable install, no repo on sys.path) and uses it.
"""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).parents[1]


def run(cmd: list[str], **kw) -> subprocess.CompletedProcess:
    result = subprocess.run(cmd, capture_output=True, text=True, **kw)
    assert result.returncode == 0, f"{cmd} failed:\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
    return result


@pytest.mark.packaging  # a wheel build and a pip install: ~20 s
def test_wheel_installs_into_a_clean_venv_and_runs(tmp_path):
    dist = tmp_path / "dist"
    run([sys.executable, "-m", "build", "--wheel", "--outdir", str(dist), str(REPO)])
    wheel = next(dist.glob("edgestats-*.whl"))
    names = zipfile.ZipFile(wheel).namelist()
    top_level = {n.split("/")[0] for n in names if not n.split("/")[0].endswith(".dist-info")}
    assert top_level == {"edgestats"}, f"the wheel puts {top_level} at the top of site-packages"
    for expected in (
        "edgestats/schema/0001_initial.sql",
        "edgestats/schema/views.sql",
        "edgestats/collectors/__init__.py",
        "edgestats/reports/__init__.py",
        "edgestats/cli/__init__.py",
    ):
        assert expected in names, f"{expected} missing from the wheel"

    venv = tmp_path / "venv"
    # A venv without pip, filled by this interpreter's pip (--python): the same clean install,
    # without the ~6 s of bootstrapping a pip the test never uses.
    run([sys.executable, "-m", "venv", "--without-pip", str(venv)])
    run([sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"), "install", "-q", str(wheel)])
    exe = str(venv / "bin" / "edgestats")
    help_text = run([exe, "--help"], cwd=tmp_path).stdout
    assert "merge" in help_text and "import" in help_text
    db = tmp_path / "w.duckdb"
    run(
        [exe, "import", str(db), str(REPO / "sample_data" / "pcamp_inference.csv"), "--kind", "inference"],
        cwd=tmp_path,
    )
    out = run(
        [exe, "sql", str(db), "SELECT count(*) AS n FROM run_summary", "--format", "csv"], cwd=tmp_path
    ).stdout
    assert out.split() == ["n", "9"]
