"""`edgestats verify PATH`: read a whole DB (or lake) and say, per table, whether it is whole."""

from __future__ import annotations

import json

import typer

from edgestats.cli.common import handle_errors
from edgestats.store.lake_verify import verify_path
from edgestats.store.verify import Verification

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
        typer.echo(json.dumps([r.as_dict() for r in reports], indent=2))
    else:
        for report in reports:
            print_report(report)
    if not all(r.whole for r in reports):
        raise typer.Exit(DAMAGED_EXIT)


def print_report(report: Verification) -> None:
    damaged = [f for f in report.findings if not f.ok]
    verdict = f"damaged ({len(damaged)} of {len(report.findings)} parts)" if damaged else "whole"
    typer.echo(f"{report.path}: {verdict}")
    width = max((len(f.name) for f in report.findings), default=0)
    for finding in report.findings:
        typer.echo(f"  {'ok' if finding.ok else 'DAMAGED':<8} {finding.name:<{width}}  {finding.detail}")
    for note in report.notes:
        typer.echo(f"  note: {note}")
    if report.recovery:
        typer.echo("  to recover:")
    for step in report.recovery:
        typer.echo(f"    - {step}")
    if report.mark:
        typer.echo(f"  {report.mark}")


def register(app: typer.Typer) -> None:
    app.command("verify")(verify_command)
