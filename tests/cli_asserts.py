"""Assertions shared by the tests of the CLI's error output."""

from __future__ import annotations


def one_line_error(result) -> str:
    """The one `error: ...` line of a failed command (a typer CliRunner result): exit status 1,
    no traceback, nothing else printed."""
    assert result.exit_code == 1, result.output
    assert "Traceback" not in result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.output
    return lines[0]
