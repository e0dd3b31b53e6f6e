"""`edgestats compare A.duckdb [B.duckdb]`: is B faster than A, by how much, and is it real?

Thin: the options become two Selections, `edgestats.analysis.compare.comparison.compare` does the matching
and the statistics, and the result is printed as text (the terminal's width, 80 to 120 columns)
or Markdown (compare_render.py), or JSON, and drawn by `edgestats.reports.compare_page` (--out). Exit status
(docs/cli/compare.md): 0 no significant regression, 1 a significant regression beyond
--threshold, 2 bad input — as diff(1) and cmp(1) do, so a CI job tells "slower" from "could not
compare".
"""

from __future__ import annotations

from pathlib import Path

import typer

from edgestats.cli.analysis_extra import needs_analysis_extra
from edgestats.cli.common import handle_errors
from edgestats.cli.compare_options import (
    AOpt,
    BOpt,
    DbAArg,
    DbBArg,
    FormatOpt,
    LevelOpt,
    MatchOpt,
    OutOpt,
    ThresholdOpt,
    WhereOpt,
)
from edgestats.cli.compare_render import render_markdown, render_text, text_width

EXIT_REGRESSION = 1
EXIT_INPUT_ERROR = 2
FORMATS = ("text", "json", "markdown")


def compare_command(
    db_a: DbAArg,
    db_b: DbBArg = None,
    a: AOpt = None,
    b: BOpt = None,
    where: WhereOpt = None,
    match: MatchOpt = None,
    threshold: ThresholdOpt = 5.0,
    level: LevelOpt = 0.95,
    fmt: FormatOpt = "text",
    out: OutOpt = None,
) -> None:
    """Compare B with A, configuration by configuration: the ratio B/A of median latency, energy
    per inference and peak RSS with run-level intervals (Welch t on log per-run figures), Holm's
    correction across configurations, and a verdict (faster, slower, same within --threshold,
    inconclusive); the geometric mean of the ratios across configurations; a warning, with the
    next step, when runs were flagged noisy or differ by more than 10 %.

    Exit status: 0 no significant regression; 1 median latency significantly slower by more than
    --threshold in some configuration; 2 bad input (missing DB, bad --a/--b/--where, nothing
    matched)."""
    try:
        code = _compare(
            db=db_a,
            db_b=db_b,
            a=a,
            b=b,
            where=where,
            match=match or [],
            threshold=threshold,
            level=level,
            fmt=fmt,
            out=out,
        )
    except typer.Exit as exc:  # handle_errors printed the one line; input errors exit 2 here
        raise typer.Exit(EXIT_INPUT_ERROR if exc.exit_code == 1 else exc.exit_code) from None
    raise typer.Exit(code)


@handle_errors
@needs_analysis_extra("compare")
def _compare(
    *,
    db: Path,
    db_b: Path | None,
    a: str | None,
    b: str | None,
    where: str | None,
    match: list[str],
    threshold: float,
    level: float,
    fmt: str,
    out: Path | None,
) -> int:
    from edgestats.analysis.compare.comparison import Selection, combined_where, compare

    if fmt not in FORMATS:
        raise typer.BadParameter(f"use one of {', '.join(FORMATS)}", param_hint="--format")
    if db_b is None and (a is None or b is None):
        raise typer.BadParameter(
            "give two DBs (compare A.duckdb B.duckdb), or one DB with both --a SQL and --b SQL",
            param_hint="--a/--b",
        )
    side_a = Selection(db, combined_where({"--where": where, "--a": a}))
    side_b = Selection(db_b or db, combined_where({"--where": where, "--b": b}))
    comparison = compare(side_a, side_b, threshold=threshold / 100.0, level=level, match=list(match) or None)
    if fmt == "json":
        import json

        typer.echo(json.dumps(comparison.to_json(), indent=2, allow_nan=False))
    else:
        typer.echo(
            render_markdown(comparison) if fmt == "markdown" else render_text(comparison, text_width())
        )
    if out is not None:
        write_page(comparison, out)
    return EXIT_REGRESSION if comparison.regressions else 0


def write_page(comparison, out: Path) -> None:
    from edgestats.analysis.load.overview import load_overview
    from edgestats.reports.compare_page import write_compare_page

    dbs = dict.fromkeys([comparison.a.db, comparison.b.db])  # one DB with two selections: one overview
    files = write_compare_page(out, comparison, [load_overview(db) for db in dbs])
    typer.echo(f"report: {files[0]} (open it in a browser; it needs no network) and {files[1]}", err=True)


def register(app: typer.Typer) -> None:
    app.command("compare", no_args_is_help=True)(compare_command)
