"""`edgestats compare`'s arguments and options, declared once as `Annotated` aliases.

Separate from cli/compare.py, which runs the comparison and renders it: these are only the
declarations (flag names, metavars, help) its signature names and its --help is built from.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

DbAArg = Annotated[
    Path,
    typer.Argument(
        metavar="A", help="Results DB of side A, the baseline (opened read-only).", show_default=False
    ),
]
DbBArg = Annotated[
    Path | None,
    typer.Argument(
        metavar="[B]",
        help="Results DB of side B; without it, both sides come from A with --a and --b.",
        show_default=False,
    ),
]
AOpt = Annotated[
    str | None,
    typer.Option(
        "--a",
        metavar="SQL",
        help="Select side A's runs: an expression on run_summary columns, e.g. \"framework = 'pytorch'\".",
    ),
]
BOpt = Annotated[
    str | None,
    typer.Option("--b", metavar="SQL", help="Select side B's runs, e.g. \"framework = 'onnxruntime'\"."),
]
WhereOpt = Annotated[
    str | None,
    typer.Option("--where", metavar="SQL", help="Select the runs of both sides, e.g. \"model = 'cnn9'\"."),
]
MatchOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--match",
        metavar="COL",
        help="Match configurations on these run columns (repeatable); default: the configuration columns "
        "that do not differ between the sides.",
    ),
]
ThresholdOpt = Annotated[
    float,
    typer.Option(
        "--threshold",
        metavar="PCT",
        help="Changes within ±PCT % count as the same; a regression must be beyond it (default 5).",
    ),
]
LevelOpt = Annotated[
    float,
    typer.Option(
        "--level", help="Confidence level of the intervals; the tests' significance level is 1 - level."
    ),
]
FormatOpt = Annotated[
    str,
    typer.Option(
        "--format", metavar="text|json|markdown", help="Output: text (80 columns), json or markdown."
    ),
]
OutOpt = Annotated[
    Path | None,
    typer.Option(
        "--out",
        metavar="DIR",
        help="Also write DIR/index.html (a chart of the ratios and their intervals, offline) and "
        "DIR/compare.json.",
    ),
]
