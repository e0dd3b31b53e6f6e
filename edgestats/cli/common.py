"""What every command shares: error reporting and output helpers."""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import duckdb
import typer
from typer.core import TyperGroup

from edgestats.errors import DatabaseError, EdgestatsError
from edgestats.store.database import damage_error, storage_error


@dataclass
class _State:
    debug: bool = False


state = _State()


def handle_errors(command: Callable[..., Any]) -> Callable[..., Any]:
    """Print an EdgestatsError as one line on stderr and exit 1; `--debug` keeps the traceback.

    A DuckDB error or OSError that means a damaged DB block or a storage fault (disk full, file
    too large, read-only, permission denied) gets the same one line (edgestats/store/database.py
    words both); other errors that are not EdgestatsError are bugs and keep their traceback.
    """

    @functools.wraps(command)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return command(*args, **kwargs)
        except EdgestatsError as exc:
            if state.debug:
                raise
            # An error a layer raised from a damaged block (a query's error) is that damage.
            damaged = (
                None if isinstance(exc, DatabaseError) else damage_error(exc.__cause__, kwargs.get("db"))
            )
            typer.echo(f"error: {damaged or exc}", err=True)
            raise typer.Exit(1) from None
        except (duckdb.Error, OSError) as exc:
            # A damaged block or a storage fault met where no layer translated it (an analysis
            # query reading a block that fails its checksum): the same one line as everywhere.
            db = kwargs.get("db")  # the DB the command works on, when it names one
            translated = storage_error(_named_file(exc), exc, note="") or damage_error(exc, db)
            if translated is None or state.debug:
                raise
            typer.echo(f"error: {translated}", err=True)
            raise typer.Exit(1) from None

    return wrapper


def _named_file(exc: BaseException) -> str:
    return str(getattr(exc, "filename", None) or "a file edgestats writes")


def _untyped_flags(command: Any, ctx: Any) -> None:
    """Typer (0.29) shows a `<bool>` type beside every flag, --help included, as if it took a
    value: an empty metavar shows nothing there, as flags need."""
    for param in command.get_params(ctx):
        if getattr(param, "is_bool_flag", False) and param.metavar is None:
            param.metavar = ""


class FlagsGroup(TyperGroup):
    """The `edgestats` group: its own and every command's flags are shown without a type."""

    def get_params(self, ctx: Any) -> list:
        params = super().get_params(ctx)
        for param in params:
            if getattr(param, "is_bool_flag", False) and param.metavar is None:
                param.metavar = ""
        return params

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        command = super().get_command(ctx, cmd_name)
        if command is not None:
            _untyped_flags(command, ctx)
        return command
