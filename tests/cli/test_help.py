"""Every command documents itself."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from edgestats.cli import app

runner = CliRunner()
COMMANDS = ["collect", "import", "merge", "sql", "migrate", "export", "doctor", "verify"]


def test_top_level_help_lists_every_command():
    result = runner.invoke(app, ["--help"])
    assert result.exit_code == 0
    for command in COMMANDS:
        assert command in result.output


@pytest.mark.parametrize("command", COMMANDS)
def test_command_help(command):
    result = runner.invoke(app, [command, "--help"])
    assert result.exit_code == 0, result.output
    assert "Usage" in result.output and len(result.output.split()) > 30, "help text too thin"


def test_version():
    from edgestats.version import __version__

    result = runner.invoke(app, ["--version"])
    assert result.exit_code == 0 and __version__ in result.output


def test_debug_shows_the_traceback(tmp_path):
    plain = runner.invoke(app, ["sql", str(tmp_path / "x.duckdb"), "SELECT 1"])
    assert plain.exit_code == 1 and plain.exception is not None and isinstance(plain.exception, SystemExit)
    debug = runner.invoke(app, ["--debug", "sql", str(tmp_path / "x.duckdb"), "SELECT 1"])
    from edgestats.errors import DatabaseError

    assert isinstance(debug.exception, DatabaseError)


def test_migrate_command(results_db):
    result = runner.invoke(app, ["migrate", str(results_db)])
    assert result.exit_code == 0 and "already at schema" in result.output


@pytest.mark.parametrize(
    "command", [[], *([c] for c in COMMANDS), ["analyze"], ["baseline"], ["dataset", "make"]]
)
def test_flags_show_no_value_type(command):
    """A flag takes no value: typer 0.29 printed `--debug <bool>` (and `--help <bool>`), which
    reads as if it needed one."""
    result = runner.invoke(app, [*command, "--help"], env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.output
    assert "<bool>" not in result.output
    assert "--help" in result.output


ALL_COMMANDS = [
    [],
    ["collect"],
    ["prepare"],
    ["baseline"],
    ["import"],
    ["merge"],
    ["sql"],
    ["migrate"],
    ["export"],
    ["doctor"],
    ["analyze"],
    ["compare"],
    ["verify"],
    ["dataset"],
    ["dataset", "make"],
]


@pytest.mark.parametrize("columns", ["80", "120"])
@pytest.mark.parametrize("command", ALL_COMMANDS, ids=lambda c: " ".join(c) or "edgestats")
def test_help_cuts_nothing(command, columns):
    """Rich cuts a word longer than its help column with "…" (collect's 40 options left a
    24-column help column at 80): a reader must see every word, at 80 columns too."""
    result = runner.invoke(app, [*command, "--help"], env={"COLUMNS": columns})
    assert result.exit_code == 0, result.output
    assert "…" not in result.output, result.output
    assert max(len(line) for line in result.output.splitlines()) <= int(columns)
