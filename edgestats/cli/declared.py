"""A typer command built from a tuple of declared options (edgestats/options.py).

The signature typer reads is made from the declarations, so a flag is written once, where its
value is used.

`declared_command(OPTIONS, body)` returns a function whose parameters are the options (each an
`Annotated[type, typer.Option(...)]`, as a hand-written signature would have) and which calls
`body(values)` with every value by option name. Parameters typer supplies itself (a
`typer.Context`) are given as `extra`. An OptionError the body raises (a value the library
refused once every value was parsed) is a usage error naming its flag, as a parser's is.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Sequence
from typing import Annotated, Any

import typer

from edgestats.options import Opt, OptionError, optional_type


def value_type(opt: Opt) -> Any:
    """The parameter's type as typer reads it: a list for a repeatable option, optional where the
    default is None."""
    if opt.repeatable:
        return list[opt.type] | None
    return optional_type(opt)


def _parser(opt: Opt) -> Callable[[str], Any] | None:
    if opt.parser is None:
        return None

    def parse(text: str) -> Any:
        try:
            return opt.parser(text)
        except ValueError as exc:
            raise typer.BadParameter(str(exc)) from None

    return parse


def typer_info(opt: Opt) -> Any:
    """The typer.Option (or typer.Argument) of one declaration."""
    common: dict[str, Any] = {"help": opt.help, "metavar": opt.metavar}
    if opt.parser is not None:
        common["parser"] = _parser(opt)
    if opt.minimum is not None:
        common["min"] = opt.minimum
    if opt.group:
        common["rich_help_panel"] = opt.group
    if opt.argument:
        return typer.Argument(show_default=opt.default is not None, **common)
    return typer.Option(*opt.spellings, **common)


def parameter(opt: Opt) -> inspect.Parameter:
    """The keyword parameter typer reads: no default where the option is required."""
    return inspect.Parameter(
        opt.name,
        inspect.Parameter.KEYWORD_ONLY,
        default=inspect.Parameter.empty if opt.required else opt.default,
        annotation=Annotated[value_type(opt), typer_info(opt)],
    )


def declared_command(
    options: Sequence[Opt],
    body: Callable[[dict[str, Any]], Any],
    *,
    extra: Sequence[inspect.Parameter] = (),
) -> Callable[..., Any]:
    """A command typer can register: its parameters are `extra` then `options`; it calls
    `body(values)` (every value by name, `extra`'s included). Its help is body's docstring."""
    params = [*extra, *(parameter(opt) for opt in options)]
    names = [p.name for p in params]
    if len(set(names)) != len(names):
        raise ValueError(f"an option is declared twice: {sorted(n for n in names if names.count(n) > 1)}")

    @functools.wraps(body)
    def command(**values: Any) -> Any:
        try:
            return body(values)
        except OptionError as exc:
            raise typer.BadParameter(str(exc), param_hint=exc.flag) from None

    del command.__wrapped__  # typer reads the signature below, not body's
    command.__signature__ = inspect.Signature(params)
    command.__annotations__ = {p.name: p.annotation for p in params}
    return command
