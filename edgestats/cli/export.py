"""`edgestats export DB --parquet DIR`: the results as hive-partitioned Parquet for other engines.

The export is edgestats/exports/'s (parquet.py, append.py), what it prints reports/terminal/export.py's.
"""

from __future__ import annotations

from pathlib import Path

import typer

from edgestats.cli.common import handle_errors
from edgestats.errors import ExportError
from edgestats.exports.parquet import MANIFEST_NAME, export_parquet
from edgestats.reports.terminal.export import append_line, export_lines

HELP = f"""Export every table of a results DB as hive-partitioned Parquet, for other engines.

Writes one dataset folder per table, partitioned by device: DIR/TABLE/device_id=UUID/part-0.parquet
(tables without a device_id column get it from their run). DuckDB, polars and Spark read each
folder back with the DB's row counts, e.g. read_parquet('DIR/runs/**/*.parquet', hive_partitioning=true),
pl.scan_parquet('DIR/runs', hive_partitioning=True) or spark.read.parquet('DIR/runs').

UUID and JSON columns are written as strings, timestamps as microsecond UTC timestamps. A table
with no rows gets one zero-row file with its columns. DIR/{MANIFEST_NAME} lists the schema and
edgestats versions and, per table, its rows, columns and files.

The DB is opened read-only and never changed. DIR must be new or empty: --overwrite replaces an
earlier edgestats export there. The export is written next to DIR and renamed into place at the
end, so an interrupted export leaves DIR as it was.

--append adds the DB's runs to an existing export in DIR (a results lake of many devices): only
runs, devices and baselines DIR lacks, so appending the same DB twice adds nothing. `sql` and
`analyze` read such a folder directly, as they read a DB.
"""


@handle_errors
def export_command(
    db: Path = typer.Argument(
        ..., metavar="DB", help="The results DB (.duckdb) to export.", show_default=False
    ),
    parquet: Path = typer.Option(
        ...,
        "--parquet",
        metavar="DIR",
        show_default=False,
        help="Folder to write the Parquet export to; must be new or empty (see --overwrite).",
    ),
    overwrite: bool = typer.Option(
        False,
        "--overwrite",
        help="Replace an earlier edgestats export in DIR (a folder without "
        f"{MANIFEST_NAME} is never deleted).",
    ),
    append: bool = typer.Option(
        False,
        "--append",
        help="Add the DB's runs that DIR lacks to the export already there (a lake of many devices); "
        "idempotent.",
    ),
) -> None:
    if append:
        if overwrite:
            raise ExportError(
                "--append adds to the export in DIR and --overwrite replaces it: give one of them"
            )
        _append(db, parquet)
        return
    manifest = export_parquet(db, parquet, overwrite=overwrite)
    for line in export_lines(manifest, db, parquet):
        typer.echo(line)


def _append(db: Path, lake: Path) -> None:
    from edgestats.exports.append import append_parquet

    typer.echo(append_line(append_parquet(db, lake), db, lake))


def register(app: typer.Typer) -> None:
    app.command("export", help=HELP, no_args_is_help=True)(export_command)
