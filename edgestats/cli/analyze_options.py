"""`edgestats analyze`'s argument and options, declared once as `Annotated` aliases.

Separate from cli/analyze.py because the declarations (flag names, defaults' help, metavars) are
most of the command's text and none of its logic. Like analyze.py, this module imports nothing of
the analysis stack: the analyses' names come from the registry.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from edgestats.registry.analyses import choices_text

# The filter options, in the order AnalysisOptions.from_flags takes them as its `filters`.
FILTER_COLUMNS = ("device", "framework", "runtime", "model", "dataset", "kind")

DbArg = Annotated[
    Path, typer.Argument(metavar="DB", help="Results DB (opened read-only).", show_default=False)
]
OnlyOpt = Annotated[
    str | None, typer.Option("--only", metavar="NAME", help=f"Run one analysis: {choices_text()}.")
]
JsonOpt = Annotated[
    bool, typer.Option("--json", help="Print {analysis: [entries]} as JSON on stdout (docs/cli/analyze.md).")
]

# -- which runs, grouped how, with which intervals ---------------------------------------------
WhereOpt = Annotated[
    str | None,
    typer.Option(
        "--where",
        metavar="SQL",
        help="Select runs with an expression on run_summary columns, e.g. \"framework = 'pytorch'\".",
    ),
]
ByOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--by",
        metavar="COL",
        help="Group key (repeatable), any run column: device, framework, runtime, model, batch_size, "
        "threads, precision, dataset and the others of run_summary.",
    ),
]
LevelOpt = Annotated[float, typer.Option("--level", help="Confidence level of every interval.")]
SeedOpt = Annotated[
    int,
    typer.Option("--seed", help="Seed of the bootstrap resampling (results are reproducible for a seed)."),
]
ResamplesOpt = Annotated[int, typer.Option("--resamples", help="Bootstrap resamples per interval.")]
BcaMaxNOpt = Annotated[
    int,
    typer.Option(
        "--bca-max-n",
        help="Largest sample bootstrapped with BCa; bigger ones use order statistics (quantiles) or the "
        "percentile bootstrap (ratios).",
    ),
]

# -- the filters (FILTER_COLUMNS) ---------------------------------------------------------------
DeviceOpt = Annotated[
    list[str] | None, typer.Option("--device", help="Only runs on this device (repeatable).")
]
FrameworkOpt = Annotated[
    list[str] | None, typer.Option("--framework", help="Only this framework (repeatable).")
]
RuntimeOpt = Annotated[list[str] | None, typer.Option("--runtime", help="Only this runtime (repeatable).")]
ModelOpt = Annotated[list[str] | None, typer.Option("--model", help="Only this model (repeatable).")]
DatasetOpt = Annotated[list[str] | None, typer.Option("--dataset", help="Only this dataset (repeatable).")]
KindOpt = Annotated[list[str] | None, typer.Option("--kind", help="Only inference or training runs.")]
NoisyOpt = Annotated[
    str,
    typer.Option(
        "--noisy",
        metavar="include|exclude",
        help="Runs flagged noisy by collect's noise sentinel (a busy machine): include them, counted in a "
        "note, or exclude them. Runs never judged (imported, recovered) are kept.",
    ),
]

# -- answers ------------------------------------------------------------------------------------
AnswerByOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--answer-by",
        metavar="COL",
        help="answers: a key of the groups compared within (repeatable; default device, model, "
        "batch_size, precision, or every configuration key but --answer-across).",
    ),
]
AnswerAcrossOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--answer-across",
        metavar="COL",
        help="answers: a key of the candidates compared (repeatable; default the configuration keys "
        "not in --answer-by: framework, runtime, threads).",
    ),
]

# -- hyperparams --------------------------------------------------------------------------------
ResponseOpt = Annotated[
    str | None,
    typer.Option(
        "--response",
        metavar="COL",
        help="hyperparams: the response, e.g. training_time_s, accuracy_pct, epoch_time_s, testing_time_s, "
        "latency_median_ms.",
    ),
]
FactorOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--factor",
        metavar="COL",
        help="hyperparams: a factor (repeatable), e.g. batch_size, iterations, learning_rate, threads.",
    ),
]
InteractionOpt = Annotated[
    bool, typer.Option("--interaction", help="hyperparams: add every pairwise interaction of the factors.")
]
BestOpt = Annotated[
    str | None,
    typer.Option(
        "--best",
        metavar="min|max",
        help="hyperparams: report the configuration with the min or max mean response per group.",
    ),
]
ConstraintOpt = Annotated[
    str | None,
    typer.Option(
        "--constraint",
        metavar="TEXT",
        help='hyperparams: only configurations meeting it count for --best, e.g. "training_time_s <= 600".',
    ),
]
LogOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--log",
        metavar="COL",
        help="hyperparams: log10-scale this factor (default: when it spans two decades).",
    ),
]
LinearOpt = Annotated[
    list[str] | None,
    typer.Option("--linear", metavar="COL", help="hyperparams: never log-scale this factor."),
]

# -- the report and the text output -------------------------------------------------------------
OutOpt = Annotated[
    Path | None,
    typer.Option(
        "--out",
        metavar="DIR",
        help="Write the report here: DIR/index.html (one self-contained page, works offline) and "
        "DIR/analysis.json.",
    ),
]
PngOpt = Annotated[bool, typer.Option("--png", help="With --out: every chart as DIR/images/*.png too.")]
SvgOpt = Annotated[bool, typer.Option("--svg", help="With --out: every chart as DIR/images/*.svg too.")]
LimitOpt = Annotated[
    int,
    typer.Option(
        "--limit",
        metavar="N",
        min=1,
        help="Rows per table in the text output (the collected devices' first).",
    ),
]
AllRowsOpt = Annotated[bool, typer.Option("--all", help="Every row of every table in the text output.")]
TablesOpt = Annotated[
    str | None,
    typer.Option(
        "--tables",
        metavar="latex|markdown|csv",
        help="With --out: every table, with its intervals, as DIR/tables/* in this format (for papers).",
    ),
]
