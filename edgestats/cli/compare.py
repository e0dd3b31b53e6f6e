"""`edgestats compare A.duckdb [B.duckdb]`: is B faster than A, by how much, and is it real?

Thin: the comparison's options are declared once (edgestats/analysis/compare/flags.py; the DBs,
--format and --out here), `edgestats.workflows.compare` does the matching and the statistics (and
the page for --out), and the result is printed as text (the terminal's width, 80 to 120 columns),
Markdown or JSON by reports/terminal/compare.py. Exit status (docs/cli/compare.md): 0 no
significant regression, 1 a significant regression beyond --threshold, 2 bad input — as diff(1)
and cmp(1) do, so a CI job tells "slower" from "could not compare".
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from edgestats.analysis.compare.flags import COMPARE_OPTIONS
from edgestats.cli.analysis_extra import needs_analysis_extra
from edgestats.cli.common import handle_errors
from edgestats.cli.declared import declared_command
from edgestats.options import Opt
from edgestats.reports.terminal.compare import FORMATS, page_line, render

EXIT_REGRESSION = 1
EXIT_INPUT_ERROR = 2

OPTIONS = (
    Opt(
        "db_a",
        Path,
        "Results DB of side A, the baseline (opened read-only).",
        argument=True,
        required=True,
        metavar="A",
    ),
    Opt(
        "db_b",
        Path,
        "Results DB of side B; without it, both sides come from A with --a and --b.",
        argument=True,
        metavar="[B]",
    ),
    *COMPARE_OPTIONS,
    Opt(
        "fmt",
        str,
        "Output: text (80 columns), json or markdown.",
        default="text",
        flags=("--format",),
        metavar="text|json|markdown",
    ),
    Opt(
        "out",
        Path,
        "Also write DIR/index.html (a chart of the ratios and their intervals, offline) and "
        "DIR/compare.json.",
        metavar="DIR",
    ),
)


def compare(values: dict[str, Any]) -> None:
    """Compare B with A, configuration by configuration: the ratio B/A of median latency, energy
    per inference and peak RSS with run-level intervals (Welch t on log per-run figures), Holm's
    correction across configurations, and a verdict (faster, slower, same within --threshold,
    inconclusive); the geometric mean of the ratios across configurations; a warning, with the
    next step, when runs were flagged noisy or differ by more than 10 %.

    Exit status: 0 no significant regression; 1 median latency significantly slower by more than
    --threshold in some configuration; 2 bad input (missing DB, bad --a/--b/--where, nothing
    matched)."""
    flags = {name: value for name, value in values.items() if name != "db_a"}
    try:
        code = _compare(db=values["db_a"], **flags)
    except typer.Exit as exc:  # handle_errors printed the one line; input errors exit 2 here
        raise typer.Exit(EXIT_INPUT_ERROR if exc.exit_code == 1 else exc.exit_code) from None
    raise typer.Exit(code)


@handle_errors
@needs_analysis_extra("compare")
def _compare(*, db: Path, db_b: Path | None, fmt: str, out: Path | None, **flags: Any) -> int:
    from edgestats.workflows.compare import compare as run

    if fmt not in FORMATS:
        raise typer.BadParameter(f"use one of {', '.join(FORMATS)}", param_hint="--format")
    if db_b is None and (flags["a"] is None or flags["b"] is None):
        raise typer.BadParameter(
            "give two DBs (compare A.duckdb B.duckdb), or one DB with both --a SQL and --b SQL",
            param_hint="--a/--b",
        )
    done = run(db, db_b, out=out, **flags)
    typer.echo(render(done.comparison, fmt))
    if done.page is not None:
        typer.echo(page_line(done.page), err=True)
    return EXIT_REGRESSION if done.comparison.regressions else 0


compare_command = declared_command(OPTIONS, compare)


def register(app: typer.Typer) -> None:
    app.command("compare", no_args_is_help=True)(compare_command)
