"""A command built from declared options (edgestats/cli/declared.py) parses as a hand-written typer
signature would: flags and short flags, repeatable options as lists, positionals, parsers, required
options and defaults, and --help shows each option's help."""

from __future__ import annotations

from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from edgestats.cli.declared import declared_command
from edgestats.options import Opt, OptionError, check_keywords, fed


def _count(text: str) -> int:
    if not text.isdigit():
        raise ValueError(f"{text!r}: give a whole number")
    return int(text)


OPTIONS = (
    Opt("db", Path, "The DB.", argument=True, required=True, metavar="DB"),
    Opt("model", str, "A model (repeatable).", flags=("--model", "-m"), repeatable=True),
    Opt("level", float, "The level.", default=0.95),
    Opt("warmup", str, "Warm-up count.", parser=_count),
    Opt("input_path", str, "An input.", flags=("--input",), key="input"),
    Opt("verbose", bool, "Say more.", default=False),
    Opt("out", Path, "Where to write.", required=True),
)


def run(args: list[str]):
    seen: dict = {}

    def body(values: dict) -> None:
        """Run the test command."""
        seen.update(values)

    app = typer.Typer()
    app.command()(declared_command(OPTIONS, body))
    app.command("other")(lambda: None)  # two commands: typer keeps the command's name
    result = CliRunner().invoke(app, ["body", *args])
    return result, seen


def test_flags_parse_into_values_by_name():
    result, seen = run(
        ["x.duckdb", "-m", "a", "--model", "b", "--warmup", "7", "--input", "i.png", "--out", "o"]
    )
    assert result.exit_code == 0, result.output
    assert seen == {
        "db": Path("x.duckdb"),
        "model": ["a", "b"],
        "level": 0.95,
        "warmup": 7,
        "input_path": "i.png",
        "verbose": False,
        "out": Path("o"),
    }
    assert fed(OPTIONS, seen)["input"] == "i.png"


def test_a_missing_required_option_and_a_parser_error_are_usage_errors():
    result, _ = run(["x.duckdb"])
    assert result.exit_code == 2 and "--out" in result.output
    result, _ = run(["x.duckdb", "--out", "o", "--warmup", "many"])
    assert result.exit_code == 2 and "give a whole number" in result.output


def test_help_lists_every_declared_option():
    result, _ = run(["--help"])
    assert result.exit_code == 0
    for opt in OPTIONS:
        assert opt.help in result.output.replace("\n", " ") or opt.argument, opt.name


def test_a_name_declared_twice_is_refused_and_the_api_names_valid_keywords():
    with pytest.raises(ValueError, match="declared twice"):
        declared_command((*OPTIONS, OPTIONS[1]), lambda values: None)
    with pytest.raises(TypeError, match="modle.*model"):
        check_keywords(OPTIONS, {"modle": "x"}, "analyze")


def test_an_option_error_of_the_body_is_a_usage_error_naming_its_flag():
    """A value the library refuses once every value was parsed (OptionError) is said as typer says
    a bad value: exit 2, naming the flag."""

    def body(values: dict) -> None:
        """Refuse the level."""
        raise OptionError("--level", f"{values['level']}: give a level below 1")

    app = typer.Typer()
    app.command()(declared_command(OPTIONS, body))
    result = CliRunner().invoke(app, ["x.duckdb", "--out", "o", "--level", "2"])
    assert result.exit_code == 2
    assert "--level" in result.output and "2.0: give a level below 1" in result.output
