"""An option declared once: the `Opt` record a command's flags, the sweep file's keys, the analysis
options and the Python API's keywords are all derived from (docs/architecture.md §3).

A command's options are one tuple of `Opt`s, kept beside what they feed (collect's in
collectors/options.py, analyze's in analysis/core/flags.py, compare's in analysis/compare/flags.py);
cli/declared.py builds the typer command from the tuple, the library reads each value under its
`key`. Standard library only: the device side and `--help` import it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Opt:
    """One option of one command."""

    name: str  # the parameter's name: the Python API's keyword and the value's name in the command
    type: type  # one value's type: str, int, float, bool or pathlib.Path
    help: str
    default: Any = None  # None: not given (the sweep file's, or the library's default, applies)
    flags: tuple[str, ...] = ()  # its spellings on the command line; default ("--name-with-dashes",)
    metavar: str | None = None
    repeatable: bool = False  # given several times, a list (in a sweep: an axis)
    key: str | None = None  # what it feeds (a sweep key, an AnalysisOptions field); default: name
    argument: bool = False  # positional
    required: bool = False
    parser: Callable[[str], Any] | None = None  # the text to the value, raising ValueError
    minimum: float | None = None
    group: str = ""  # the --help panel it is listed under

    @property
    def feeds(self) -> str:
        return self.key or self.name

    @property
    def spellings(self) -> tuple[str, ...]:
        return self.flags or ("--" + self.name.replace("_", "-"),)

    @property
    def flag(self) -> str:
        """How a message names it: its first spelling (a positional: its name in capitals)."""
        return self.metavar or self.name.upper() if self.argument else self.spellings[0]


class OptionError(ValueError):
    """A value an option cannot take, found by the library once the values were parsed (a value
    that is wrong only beside another's): cli/declared.py reports it as a usage error naming
    `flag`, as a parser's error is (exit 2); the Python API raises it as the ValueError it is."""

    def __init__(self, flag: str, message: str):
        super().__init__(message)
        self.flag = flag


def by_name(options: Iterable[Opt]) -> dict[str, Opt]:
    return {opt.name: opt for opt in options}


def fed(options: Iterable[Opt], values: Mapping[str, Any]) -> dict[str, Any]:
    """The values (by option name) under the keys they feed; options not in `values` are left out."""
    return {opt.feeds: values[opt.name] for opt in options if opt.name in values}


def check_keywords(options: Iterable[Opt], keywords: Mapping[str, Any], where: str) -> None:
    """A TypeError naming the valid keywords, for a keyword that is no option's (the Python API)."""
    names = by_name(options)
    unknown = sorted(set(keywords) - set(names))
    if unknown:
        raise TypeError(
            f"{where}() got unexpected keyword argument(s) {', '.join(unknown)}; its options are "
            f"{', '.join(names)}"
        )
