"""An option declared once: the `Opt` record each command's flags and keywords are derived from.

A command's flags, the sweep file's keys, the analysis options and the Python API's keywords
all come from it (docs/architecture.md §3).

A command's options are one tuple of `Opt`s, kept beside what they feed (collect's in
collectors/options.py, analyze's in analysis/core/flags.py, compare's in analysis/compare/flags.py);
cli/declared.py builds the typer command from the tuple, the library reads each value under its
`key`. Standard library only: the device side and `--help` import it.
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable, Iterable, Mapping, Sequence
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
    tags: tuple[str, ...] = ()  # the subsets it belongs to, for a reader of some options only (tagged())

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


def tagged(options: Iterable[Opt], tag: str) -> tuple[Opt, ...]:
    """The options carrying `tag`, in their order (e.g. those the Python API's `runs` takes too)."""
    return tuple(opt for opt in options if tag in opt.tags)


def values_of(options: Iterable[Opt], values: Mapping[str, Any]) -> dict[str, Any]:
    """The values (by option name) of these options only: a command's values, read by what takes
    some of its options."""
    return {opt.name: values[opt.name] for opt in options if opt.name in values}


def given(opt: Opt, value: Any) -> Any:
    """A value as the library takes it: a repeatable option's as a list (one string is one value,
    None none), others as they are."""
    if not opt.repeatable:
        return value
    if value is None:
        return []
    return [value] if isinstance(value, str) else list(value)


def nested(values: Mapping[str, Any]) -> dict[str, Any]:
    """Values by key with the dotted keys gathered: {"filters.device": ["pi5"]} is {"filters":
    {"device": ["pi5"]}}. A dotted key's value that is None or empty is left out (not given)."""
    out: dict[str, Any] = {}
    for key, value in values.items():
        outer, dot, inner = key.partition(".")
        if not dot:
            out[key] = value
        elif value is not None and value != []:
            out.setdefault(outer, {})[inner] = value
        else:
            out.setdefault(outer, {})
    return out


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


def optional_type(opt: Opt) -> Any:
    """One value's type, optional (None: not given) unless the option has a default or is required."""
    return opt.type if opt.default is not None or opt.required else opt.type | None


def _field(opt: Opt) -> tuple[Any, Any]:
    """The annotation and the dataclass default of the field an option feeds."""
    if "." in opt.feeds:
        return dict[str, Any], dataclasses.field(default_factory=dict)
    if opt.repeatable:
        return list[opt.type], dataclasses.field(default_factory=list)
    return optional_type(opt), opt.default


def declared_fields(options: Iterable[Opt]) -> Callable[[type], type]:
    """A class decorator, put beneath @dataclass: the class gets one field per option, named by
    its key, with its default (a repeatable option's: an empty list), in the options' order; the
    options whose keys share a prefix `NAME.` feed one dict field NAME (a filter per key). The
    fields the class declares itself follow."""

    def add_fields(cls: type) -> type:
        fields: dict[str, Any] = {}
        for opt in options:
            outer, dot, _ = opt.feeds.partition(".")
            annotation, default = _field(opt)
            if outer in fields and not dot:
                raise ValueError(f"two options feed the field {outer!r}")
            fields.setdefault(outer, annotation)
            setattr(cls, outer, default)
        cls.__annotations__ = {**fields, **cls.__dict__.get("__annotations__", {})}
        return cls

    return add_fields


def keyword_annotation(opt: Opt) -> Any:
    """What a Python caller gives: a repeatable option one value or several, None where no default."""
    if opt.repeatable:
        return opt.type | Sequence[opt.type] | None
    return optional_type(opt)


def keyword_signature(
    options: Iterable[Opt],
    *,
    first: Sequence[inspect.Parameter] = (),
    positional: Sequence[str] = (),
    extra: Sequence[inspect.Parameter] = (),
) -> inspect.Signature:
    """The signature of a Python function taking these options as keywords, for help() and
    inspect: `first` (e.g. self), the options named in `positional` (positional or keyword), then
    `extra` (keyword-only parameters of the function's own) and the other options keyword-only,
    each with its default."""
    options = list(options)
    ahead = [opt for name in positional for opt in options if opt.name == name]
    rest = [opt for opt in options if opt.name not in positional]

    def parameter(opt: Opt, kind: Any) -> inspect.Parameter:
        return inspect.Parameter(opt.name, kind, default=opt.default, annotation=keyword_annotation(opt))

    return inspect.Signature(
        [
            *first,
            *(parameter(opt, inspect.Parameter.POSITIONAL_OR_KEYWORD) for opt in ahead),
            *extra,
            *(parameter(opt, inspect.Parameter.KEYWORD_ONLY) for opt in rest),
        ]
    )
