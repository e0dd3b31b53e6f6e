"""What every command shares: error reporting and output helpers."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any, Callable

import typer

from edgestats.errors import EdgestatsError


@dataclass
class _State:
    debug: bool = False


state = _State()


def handle_errors(command: Callable[..., Any]) -> Callable[..., Any]:
    """Print an EdgestatsError as one line on stderr and exit 1; `--debug` keeps the traceback.

    Errors that are not EdgestatsError are bugs and keep their traceback.
    """

    @functools.wraps(command)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return command(*args, **kwargs)
        except EdgestatsError as exc:
            if state.debug:
                raise
            typer.echo(f"error: {exc}", err=True)
            raise typer.Exit(1) from None

    return wrapper
