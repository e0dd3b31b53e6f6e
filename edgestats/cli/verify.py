"""`edgestats verify PATH`: read a whole DB (or lake) and say, per table, whether it is whole.

The reading is edgestats/store/lake_verify.py's, the printing reports/terminal/verify.py's.
"""

from __future__ import annotations

import typer

from edgestats.cli.common import handle_errors
from edgestats.reports.terminal.verify import verify_json, verify_lines
from edgestats.store.lake_verify import verify_path

DAMAGED_EXIT = 1


@handle_errors
def verify_command(
    path: str = typer.Argument(
        ...,
        metavar="PATH",
        help="A results DB, an export folder (a lake), or a quoted glob of DBs, e.g. 'results/*.duckdb'.",
    ),
    as_json: bool = typer.Option(
        False, "--json", help="Print the findings as JSON (a list, one object per file or folder)."
    ),
) -> None:
    """Read every block of a DB (or every file of a lake) and report damage per table.

    DuckDB checks a block's checksum only when a query reads it, so a flipped data block goes
    unnoticed until then, and `collect` and `import` can append to such a file. verify reads
    every value of every table, checks the checksum of every other block (indexes, catalog) and
    the file's length; for a lake, the manifest and every Parquet file it lists, read in full.

    A damaged DB is marked (a hidden `.NAME.damaged` file beside it): `collect` and `import`
    then refuse to append to it unless `--force`; a later verify that finds it whole removes the
    mark. Exit status: 0 when everything is whole, 1 when something is damaged (the recovery
    steps are printed) or PATH cannot be checked.
    """
    reports = verify_path(path)
    if as_json:
        typer.echo(verify_json(reports))
    else:
        for report in reports:
            for line in verify_lines(report):
                typer.echo(line)
    if not all(r.whole for r in reports):
        raise typer.Exit(DAMAGED_EXIT)


def register(app: typer.Typer) -> None:
    app.command("verify")(verify_command)
