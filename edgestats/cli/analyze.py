"""`edgestats analyze DB`: statistics with confidence intervals over a results DB.

Thin: the flags are declared once (the analysis options in edgestats/analysis/core/flags.py, the
command's own output options here) and become an AnalysisOptions; `edgestats.workflows.analyze`
does the work (the analyses, and the report for --out); the results are printed as JSON (--json)
or as tables of their figure frames (reports/terminal/analyze.py). The analyses' names and help
come from the registry (edgestats/registry/analyses.py). The analysis stack (polars, scipy,
statsmodels) is imported inside the command, so `edgestats --help` and device-side commands never
load it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from edgestats.analysis.core.flags import ANALYSIS_OPTIONS
from edgestats.cli.analysis_extra import needs_analysis_extra
from edgestats.cli.common import handle_errors
from edgestats.cli.declared import declared_command
from edgestats.options import Opt, values_of
from edgestats.registry.analyses import ANALYSES
from edgestats.reports.terminal.analyze import DEFAULT_LIMIT, TextOptions, print_results, report_lines

DB = Opt("db", Path, "Results DB (opened read-only).", argument=True, required=True, metavar="DB")
AS_JSON = Opt(
    "as_json",
    bool,
    "Print {analysis: [entries]} as JSON on stdout (docs/cli/analyze.md).",
    default=False,
    flags=("--json",),
)
# -- the report and the text output: the command's own (the Python API returns frames and charts)
OUTPUT_OPTIONS = (
    Opt(
        "out",
        Path,
        "Write the report here: DIR/index.html (one self-contained page, works offline) and "
        "DIR/analysis.json.",
        metavar="DIR",
    ),
    Opt("png", bool, "With --out: every chart as DIR/images/*.png too.", default=False),
    Opt("svg", bool, "With --out: every chart as DIR/images/*.svg too.", default=False),
    Opt(
        "limit",
        int,
        "Rows per table in the text output (the collected devices' first).",
        default=DEFAULT_LIMIT,
        metavar="N",
        minimum=1,
    ),
    Opt("all_rows", bool, "Every row of every table in the text output.", default=False, flags=("--all",)),
    Opt(
        "tables",
        str,
        "With --out: every table, with its intervals, as DIR/tables/* in this format (for papers).",
        metavar="latex|markdown|csv",
    ),
)
ONLY, *SELECTION_AND_STATISTICS = ANALYSIS_OPTIONS  # --only is declared first
# As --help lists them: --json beside --only, the output options last.
OPTIONS = (DB, ONLY, AS_JSON, *SELECTION_AND_STATISTICS, *OUTPUT_OPTIONS)


def analyze(values: dict[str, Any]) -> None:
    """Statistics with confidence intervals over a results DB; its --help is command_help()."""
    from edgestats.analysis import AnalysisOptions, dumps
    from edgestats.workflows.analyze import analyze as run

    options = AnalysisOptions.from_flags(**values_of(ANALYSIS_OPTIONS, values))
    report = report_request(values)
    text = not values["as_json"] and report is None
    done = run(values["db"], options, report=report, collected=text)
    if values["as_json"]:
        typer.echo(dumps(done.results))
    elif text:
        limit = None if values["all_rows"] else values["limit"]
        print_results(done.results, TextOptions(limit=limit, collected_devices=done.collected_devices))
    if done.report is not None:
        for line in report_lines(done.report, values["tables"]):
            typer.echo(line, err=True)  # stdout may be JSON


def report_request(values: dict[str, Any]):
    """--out with --png, --svg and --tables, checked (they need --out); None without --out."""
    from edgestats.workflows.report import ReportRequest

    out, tables = values["out"], values["tables"]
    if (values["png"] or values["svg"] or tables) and out is None:
        raise typer.BadParameter(
            "--png, --svg and --tables write into the report folder: add --out DIR", param_hint="--out"
        )
    if tables is not None and tables not in ("latex", "markdown", "csv"):
        raise typer.BadParameter("use latex, markdown or csv", param_hint="--tables")
    images = tuple(f for f in ("png", "svg") if values[f])
    return ReportRequest(out, images, tables) if out is not None else None


def command_help() -> str:
    """The command's help: what it does, then every analysis of the registry with its help line."""
    analyses = "\n\n".join(f"{entry.name}: {entry.help}" for entry in ANALYSES)
    return (
        "Statistics with confidence intervals over the runs of a results DB.\n\n"
        "Without --only, runs every analysis the data supports:\n\n" + analyses + "\n\n"
        "Every estimate comes with its interval, its n and what n counts. Only ok and diverged runs are used."
    )


analyze_command = handle_errors(needs_analysis_extra("analyze")(declared_command(OPTIONS, analyze)))


def register(app: typer.Typer) -> None:
    app.command("analyze", no_args_is_help=True, help=command_help())(analyze_command)
