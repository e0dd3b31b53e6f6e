"""Without the analysis extra, `analyze` and `compare` end with one line naming
`pip install 'edgestats[analyze]'`, and no traceback.

The device-only install is real, not simulated by blocking imports: a fresh venv (`python -m venv
--without-pip`) whose site-packages holds exactly the distributions a plain `pip install
edgestats` brings, resolved from the installed edgestats' own requirements (no extra) and linked
from this test's environment (no network, no build). polars, scipy, statsmodels and Altair are
not blocked there but absent, so the import system answers as it does on a device, and the
command runs as the `edgestats` entry point would, in a child process.
"""

from __future__ import annotations

import importlib.metadata as md
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest
from builders import make_results_db
from packaging.requirements import Requirement

from edgestats.cli.analysis_extra import INSTALL

pytestmark = pytest.mark.slow  # a venv and four child processes: 4-10 s


def core_distributions(site: Path) -> list[md.Distribution]:
    """edgestats and the closure of its requirements without extras, as installed in `site`."""
    installed = {d.metadata["Name"].lower().replace("_", "-"): d for d in md.distributions(path=[str(site)])}
    found, todo = {}, ["edgestats"]
    while todo:
        name = todo.pop().lower().replace("_", "-")
        if name in found:
            continue
        found[name] = installed[name]
        for text in found[name].requires or ():
            requirement = Requirement(text)
            if requirement.marker is None or requirement.marker.evaluate({"extra": ""}):
                todo.append(requirement.name)
    return list(found.values())


def device_only_venv(tmp: Path) -> Path:
    """A venv holding edgestats and its core dependencies only; its python."""
    venv = tmp / "device-venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    target = Path(
        subprocess.run(
            [str(venv / "bin/python"), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            check=True,
            capture_output=True,
            text=True,
        ).stdout.strip()
    )
    site = Path(sysconfig.get_paths()["purelib"])
    for dist in core_distributions(site):
        tops = {Path(str(f)).parts[0] for f in dist.files or () if not str(f).startswith("..")}
        for top in tops:
            if (site / top).exists() and not (target / top).exists():
                (target / top).symlink_to(site / top)
    return venv / "bin/python"


def test_analyze_and_compare_without_the_analysis_extra_say_one_line(tmp_path):
    python = device_only_venv(tmp_path)
    absent = subprocess.run(
        [
            str(python),
            "-c",
            "import importlib.util as u; print([m for m in ('polars', 'scipy', "
            "'statsmodels', 'altair', 'duckdb', 'typer') if u.find_spec(m)])",
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert absent.stdout.strip() == "['duckdb', 'typer']", absent.stdout + absent.stderr
    a = make_results_db(tmp_path / "a.duckdb")
    b = make_results_db(tmp_path / "b.duckdb", device_name="pi5", seed0=7)
    cases = {
        "analyze": (["analyze", str(a)], 1),
        "analyze --out": (["analyze", str(a), "--out", str(tmp_path / "report")], 1),
        # compare's exit status 1 means "a regression" (docs/cli/compare.md): could not compare is 2
        "compare": (["compare", str(a), str(b)], 2),
    }
    for name, (args, status) in cases.items():
        proc = subprocess.run(
            [str(python), "-m", "edgestats", *args], capture_output=True, text=True, cwd=tmp_path
        )
        command = name.split()[0]
        assert proc.returncode == status, (name, proc.stdout, proc.stderr)
        assert proc.stderr == f"error: {command} needs the analysis extra (polars is missing): {INSTALL}\n", (
            name
        )
        assert proc.stdout == "" and "Traceback" not in proc.stderr
    assert not (tmp_path / "report").exists()  # nothing half written
