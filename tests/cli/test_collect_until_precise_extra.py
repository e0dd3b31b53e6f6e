"""`collect --until-precise` without the analysis stack: one line naming the extra (exit 1), said
before the DB is opened, so nothing is created or half done. The stack is blocked in a child
process (its modules set to None in sys.modules, which makes importing them fail as on a device)."""

from __future__ import annotations

import subprocess
import sys

from edgestats.cli.analysis_extra import INSTALL

CHILD = """
import sys
for name in ("polars", "scipy", "statsmodels", "altair"):
    sys.modules[name] = None
from edgestats.cli import app
app(sys.argv[1:], prog_name="edgestats")
"""


def test_until_precise_without_the_analysis_extra_is_one_line_and_opens_no_db(tmp_path):
    db = tmp_path / "r.duckdb"
    args = ["collect", "--db", str(db), "-f", "onnxruntime", "-m", "cnn9", "--until-precise", "2%"]
    result = subprocess.run([sys.executable, "-c", CHILD, *args], capture_output=True, text=True, timeout=120)
    assert result.returncode == 1, result.stdout + result.stderr
    # the stopping rule's module imports scipy first (the analysis package itself imports nothing)
    assert result.stderr == f"error: --until-precise needs the analysis extra (scipy is missing): {INSTALL}\n"
    assert result.stdout == "" and not db.exists()
