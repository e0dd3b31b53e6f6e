"""The `edgestats` command: a thin typer layer. Each command parses its options, calls one
library function and prints the result. One module per group of commands."""

from __future__ import annotations

import typer

from edgestats.cli import (
    analyze,
    baseline,
    collect,
    compare,
    dataset,
    db_commands,
    doctor,
    export,
    prepare,
    verify,
)
from edgestats.cli.common import FlagsGroup, state
from edgestats.version import __version__

app = typer.Typer(
    name="edgestats",
    help="Measure deep-learning frameworks on edge devices, store raw samples in DuckDB, analyse them.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode="markdown",
    cls=FlagsGroup,
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"edgestats {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    debug: bool = typer.Option(False, "--debug", help="Show the full traceback of an error."),
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="Print the version and exit."
    ),
) -> None:
    """edgestats: results database and statistics for deep learning on edge devices.

    Typical flow: `collect` on each device, `merge` the files, `analyze` or `sql` on a laptop.
    """
    state.debug = debug


for _module in (collect, prepare, baseline, dataset, db_commands, export, doctor, analyze, compare, verify):
    _module.register(app)


def main() -> None:
    app()
