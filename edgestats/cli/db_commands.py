"""Commands on result files: import, merge, sync, sql, migrate.

Each parses its arguments, calls the library (edgestats.imports, edgestats.exports.merge,
edgestats.store) and prints what it returned through reports/terminal/ (sql's streamed table is the
store's own, edgestats/store/query.py: it is written batch by batch as DuckDB reads it).
"""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

import typer

from edgestats.cli.common import handle_errors
from edgestats.exports.merge import merge
from edgestats.imports.importer import import_results
from edgestats.reports.terminal.imports import import_lines
from edgestats.reports.terminal.merge import merge_lines
from edgestats.reports.terminal.migrate import migrate_line
from edgestats.reports.terminal.sync import sync_lines
from edgestats.store.database import connect
from edgestats.store.migrations import current_version, latest_version, migrate
from edgestats.store.query import FORMATS, print_query, terminal_columns
from edgestats.store.verify import refuse_known_damaged
from edgestats.workflows.sync import sync_sources


@handle_errors
def import_command(
    db: Path = typer.Argument(..., help="Results DB to import into (created if missing)."),
    file: Path = typer.Argument(
        ..., help="CSV, TSV or Parquet file with one row per run, or a benchmark tool's output (--format)."
    ),
    kind: str = typer.Option(
        None,
        "--kind",
        help="What the rows are: inference, training or generation (not needed with --format).",
    ),
    map_: list[str] = typer.Option(
        [], "--map", help="Rename a column: SRC=DST (repeatable), e.g. --map 'Train (s)=training_time_s'."
    ),
    device: str = typer.Option(None, "--device", help="Device name for rows without a 'device' column."),
    long: bool = typer.Option(
        False,
        "--long",
        help="The file is long-format: one row per run and metric (or phase), with 'metric' (or 'phase'), "
        "'value' and optionally 'unit' columns.",
    ),
    replace: bool = typer.Option(
        False,
        "--replace",
        help="Replace the runs of an earlier import of this file (same content or same file name), e.g. "
        "after correcting --map or --device.",
    ),
    fmt: str = typer.Option(
        None,
        "--format",
        help="FILE is a benchmark tool's output, one inference run: benchmark_model (TFLite), benchmark_app "
        "(OpenVINO: console or report .csv/.json), perf_test (onnxruntime_perf_test), mlperf (LoadGen "
        "mlperf_log_summary.txt); or generation runs: llama-bench (llama.cpp, any -o format).",
    ),
    force: bool = typer.Option(
        False,
        "--force",
        help="Import into DB although `edgestats verify` (or a command that read it) found it damaged.",
    ),
) -> None:
    """Import results made elsewhere (CSV or Parquet, one row per run).

    Columns are matched to edgestats' canonical names (docs/cli/import.md), also when written
    like 'Training Time (s)'; a name carrying another unit of the same kind (latency_us,
    training_time_min, mem_max_gib, accuracy_frac) is converted. Other columns are kept as JSON
    in runs.extra. Nothing is written if any row is wrong; importing a file twice adds nothing;
    importing it again with another --map or --device needs --replace. With --format, FILE is
    the output of benchmark_model, benchmark_app, onnxruntime_perf_test, MLPerf LoadGen or
    llama-bench.
    """
    if not force:  # appending reads no old block: DuckDB itself would not notice the damage
        refuse_known_damaged(db, "import")
    report = import_results(
        db, file, kind=kind, mappings=map_, device=device, replace=replace, long=long, fmt=fmt
    )
    for line in import_lines(report, db, replace=replace):
        typer.echo(line)


@handle_errors
def merge_command(
    out: Path = typer.Argument(..., help="Merged DB to write (created if missing; existing runs are kept)."),
    inputs: list[Path] = typer.Argument(..., help="Result DBs to merge in."),
) -> None:
    """Merge result DBs from many devices into one.

    Runs, devices and baselines are matched by UUID: merging the same input twice changes
    nothing; a run_id with different content is an error and nothing is written. Inputs are
    only read; an input of an older schema is migrated in a temporary copy.
    """
    reports = merge(out, inputs, progress=lambda msg: typer.echo(msg, err=True))
    for line in merge_lines(reports, out):
        typer.echo(line)


@handle_errors
def sync_command(
    sources: list[Path] = typer.Argument(..., help="Board DBs to bring in (a USB stick's, pulled ones)."),
    into: Path = typer.Option(..., "--into", help="The results lake (folder) or .duckdb to sync into."),
) -> None:
    """Sync board DBs into a results lake (or a DB), idempotently by run UUID.

    Each source is checked on its own: a damaged, foreign or newer-schema file is refused in
    one line and the others are synced; the exit status is 1 when any was refused.
    """
    report = sync_sources(sources, into)
    for line in sync_lines(report):
        typer.echo(line)
    if report.refused:
        raise typer.Exit(1)


@handle_errors
def sql_command(
    db: Path = typer.Argument(..., help="Results DB to query."),
    query: str = typer.Argument(..., help='SQL (DuckDB dialect), e.g. "SELECT * FROM run_summary".'),
    fmt: str = typer.Option(
        "auto",
        "--format",
        "-f",
        help=f"Output format: {', '.join(FORMATS)}. auto: a table, or "
        "one field per line (line) when a row is wider than the terminal.",
    ),
    read: list[Path] = typer.Option(
        [],
        "--read",
        metavar="PATH",
        help="A file or folder the query may read, e.g. an export folder for read_parquet (repeatable); "
        "nothing else outside the DB is readable.",
    ),
    write: bool = typer.Option(
        False,
        "--write",
        help="Open the DB for writing, without the sandbox: the query can then write and read any file.",
    ),
) -> None:
    """Run a SQL query on a results DB and print the result.

    Tables: devices, runs, run_results, phases, latencies, samples, baselines, epochs, batches.
    Views: run_summary, training_summary, phase_energy. Without --write the query is sandboxed:
    the DB is read-only, no file is written, none outside the DB is read (but those named with
    --read), no extension is installed or loaded and no network is reached. --write opens the
    DB for writing and is not sandboxed.
    """
    if fmt not in FORMATS:
        raise typer.BadParameter(f"use one of {', '.join(FORMATS)}", param_hint="--format")
    try:
        # written batch by batch as DuckDB streams it: memory does not grow with the result
        print_query(db, query, fmt, write=write, read=read, width=terminal_columns())
        sys.stdout.flush()
    except BrokenPipeError:
        # the reader stopped (`| head`): end as a program killed by SIGPIPE would, without a traceback;
        # stdout goes to /dev/null so that the interpreter's last flush does not fail again
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        raise typer.Exit(128 + signal.SIGPIPE) from None


@handle_errors
def migrate_command(
    db: Path = typer.Argument(..., help="Results DB to bring to this edgestats' schema."),
) -> None:
    """Upgrade a results DB written by an older edgestats to the current schema, in place.

    Each migration runs in its own transaction: an interrupted upgrade leaves the DB at the
    last complete version. Opening a DB for writing (collect, import, merge output) does this too.
    """
    con = connect(db, must_exist=True)
    try:
        before, _ = current_version(con, str(db))
        applied = migrate(con, str(db), refresh_views=True)
    finally:
        con.close()
    typer.echo(migrate_line(db, before, applied, latest_version()))


def register(app: typer.Typer) -> None:
    app.command("import")(import_command)
    app.command("merge")(merge_command)
    app.command("sync")(sync_command)
    app.command("sql")(sql_command)
    app.command("migrate")(migrate_command)
