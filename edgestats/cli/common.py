"""What every command shares: error reporting and output helpers."""

from __future__ import annotations

import functools
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import duckdb
import typer
from typer.core import TyperGroup

import edgestats.interrupts as interrupts
from edgestats.errors import DamagedDatabaseError, DatabaseError, EdgestatsError
from edgestats.store.database import damage_error, storage_error
from edgestats.store.verify import note_damage_met


@dataclass
class _State:
    debug: bool = False


state = _State()


def _quiet_on_signals(command: Callable[..., Any]) -> Callable[..., Any]:
    """After a SIGINT, SIGTERM or SIGHUP (edgestats/interrupts.py), whatever the command raises
    (DuckDB's "Query interrupted", a query error wording it, SystemExit) ends it with one line
    saying what it left as it was, and status 128 + signal; `--debug` prints the traceback too."""
    name = command.__name__.removesuffix("_command").lstrip("_")
    if command.__module__.endswith(".dataset"):  # the one command of a sub-group
        name = f"dataset {name}"

    @functools.wraps(command)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        interrupts.enter(name, kwargs)
        try:
            result = command(*args, **kwargs)
        except BaseException:
            interrupts.leave()
            signum, line = interrupts.received(), interrupts.take_line()
            if line is None:  # no signal, or a command inside this one has said it
                raise
            if state.debug:
                traceback.print_exc()
            typer.echo(line, err=True)
            raise typer.Exit(128 + signum) from None
        # The command returned: its work is done and its output printed. No call stands between its
        # return and these two stores (CPython runs a signal handler only at a call or a loop's
        # jump), so a signal from here on changes nothing (interrupts.on_signal).
        interrupts.state.depth -= 1
        interrupts.state.finished = interrupts.state.finished or interrupts.state.depth <= 0
        return result

    return wrapper


def handle_errors(command: Callable[..., Any]) -> Callable[..., Any]:
    """Print an EdgestatsError as one line on stderr and exit 1; `--debug` keeps the traceback.

    A DuckDB error or OSError that means a damaged DB block or a storage fault (disk full, file
    too large, read-only, permission denied) gets the same one line (edgestats/store/database.py
    words both); other errors that are not EdgestatsError are bugs and keep their traceback.
    """

    command = _quiet_on_signals(command)  # innermost: the interruption, not the error it caused

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
            _remember_damage(damaged or exc, kwargs.get("db"))
            typer.echo(f"error: {damaged or exc}", err=True)
            raise typer.Exit(1) from None
        except (duckdb.Error, OSError) as exc:
            # A damaged block or a storage fault met where no layer translated it (an analysis
            # query reading a block that fails its checksum): the same one line as everywhere.
            db = kwargs.get("db")  # the DB the command works on, when it names one
            translated = storage_error(_named_file(exc), exc, note="") or damage_error(exc, db)
            if translated is None or state.debug:
                raise
            _remember_damage(translated, db)
            typer.echo(f"error: {translated}", err=True)
            raise typer.Exit(1) from None

    return wrapper


def _remember_damage(error: BaseException, db: Any) -> None:
    """A DB a command found damaged is marked (edgestats/store/verify.py), so that `collect` and
    `import`, which read no old block when they append, stop appending to it."""
    if isinstance(error, DamagedDatabaseError) and db is not None:
        note_damage_met(db, str(error))


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
