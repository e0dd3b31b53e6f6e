"""`edgestats analyze DB`: statistics with confidence intervals over a results DB.

Thin: the options become an AnalysisOptions, `edgestats.analysis.run_analyses` does the work,
and the results are printed as JSON (--json) or as tables of their figure frames, or drawn by
`edgestats.reports.write_report` from what the analysis layer loaded (--out). The analyses' names
and help come from the registry (edgestats/registry/analyses.py). The analysis stack (polars,
scipy, statsmodels) is imported inside the command, so `edgestats --help` and device-side
commands never load it.
"""

from __future__ import annotations

from pathlib import Path

import typer

from edgestats.cli.analysis_extra import needs_analysis_extra
from edgestats.cli.analyze_options import (
    FILTER_COLUMNS,
    AllRowsOpt,
    AnswerAcrossOpt,
    AnswerByOpt,
    BcaMaxNOpt,
    BestOpt,
    ByOpt,
    ConstraintOpt,
    DatasetOpt,
    DbArg,
    DeviceOpt,
    FactorOpt,
    FrameworkOpt,
    InteractionOpt,
    JsonOpt,
    KindOpt,
    LevelOpt,
    LimitOpt,
    LinearOpt,
    LogOpt,
    ModelOpt,
    NoisyOpt,
    OnlyOpt,
    OutOpt,
    PngOpt,
    ResamplesOpt,
    ResponseOpt,
    RuntimeOpt,
    SeedOpt,
    SvgOpt,
    TablesOpt,
    WhereOpt,
)
from edgestats.cli.common import handle_errors
from edgestats.registry.analyses import ANALYSES
from edgestats.reports.terminal.analyze import DEFAULT_LIMIT, TextOptions, print_results


@handle_errors
@needs_analysis_extra("analyze")
def analyze_command(
    db: DbArg,
    only: OnlyOpt = None,
    as_json: JsonOpt = False,
    where: WhereOpt = None,
    by: ByOpt = None,
    level: LevelOpt = 0.95,
    seed: SeedOpt = 0,
    resamples: ResamplesOpt = 2000,
    bca_max_n: BcaMaxNOpt = 500,
    device: DeviceOpt = None,
    framework: FrameworkOpt = None,
    runtime: RuntimeOpt = None,
    model: ModelOpt = None,
    dataset: DatasetOpt = None,
    kind: KindOpt = None,
    noisy: NoisyOpt = "include",
    answer_by: AnswerByOpt = None,
    answer_across: AnswerAcrossOpt = None,
    response: ResponseOpt = None,
    factor: FactorOpt = None,
    interaction: InteractionOpt = False,
    best: BestOpt = None,
    constraint: ConstraintOpt = None,
    log: LogOpt = None,
    linear: LinearOpt = None,
    out: OutOpt = None,
    png: PngOpt = False,
    svg: SvgOpt = False,
    limit: LimitOpt = DEFAULT_LIMIT,
    all_rows: AllRowsOpt = False,
    tables: TablesOpt = None,
) -> None:
    """Statistics with confidence intervals over a results DB; its --help is command_help()."""
    from edgestats.analysis import dumps, run_analyses

    options = options_from_flags(dict(locals()))
    images = report_extras(out, png=png, svg=svg, tables=tables)
    results = run_analyses(db, options)
    if as_json:
        typer.echo(dumps(results))
    elif out is None:
        print_text(db, results, limit=None if all_rows else limit)
    if out is not None:
        write_report_files(db, out, results, images=images, tables=tables, options=options)


# The command's flags that AnalysisOptions.from_flags takes under the same name; a repeatable one
# arrives as None when not given.
OPTION_FLAGS = (
    "only",
    "where",
    "level",
    "seed",
    "resamples",
    "bca_max_n",
    "noisy",
    "response",
    "interaction",
    "best",
    "constraint",
)
LIST_FLAGS = ("by", "factor", "log", "linear", "answer_by", "answer_across")


def options_from_flags(flags: dict):
    """The AnalysisOptions of the command's flags (its parameters by name)."""
    from edgestats.analysis import AnalysisOptions

    return AnalysisOptions.from_flags(
        **{k: flags[k] for k in OPTION_FLAGS},
        **{k: flags[k] or () for k in LIST_FLAGS},
        filters={c: flags[c] for c in FILTER_COLUMNS},
    )


def report_extras(out: Path | None, *, png: bool, svg: bool, tables: str | None) -> list[str]:
    """--png, --svg and --tables, checked (they need --out); the image formats to write."""
    if (png or svg or tables) and out is None:
        raise typer.BadParameter(
            "--png, --svg and --tables write into the report folder: add --out DIR", param_hint="--out"
        )
    if tables is not None and tables not in ("latex", "markdown", "csv"):
        raise typer.BadParameter("use latex, markdown or csv", param_hint="--tables")
    return [f for f, on in (("png", png), ("svg", svg)) if on]


def print_text(db: Path, results, *, limit: int | None) -> None:
    """The results as tables on the terminal, the devices that collected runs first."""
    from edgestats.analysis.load.overview import collected_devices

    print_results(results, TextOptions(limit=limit, collected_devices=collected_devices(db)))


def command_help() -> str:
    """The command's help: what it does, then every analysis of the registry with its help line."""
    analyses = "\n\n".join(f"{entry.name}: {entry.help}" for entry in ANALYSES)
    return (
        "Statistics with confidence intervals over the runs of a results DB.\n\n"
        "Without --only, runs every analysis the data supports:\n\n" + analyses + "\n\n"
        "Every estimate comes with its interval, its n and what n counts. Only ok and diverged runs are used."
    )


def write_report_files(
    db: Path, out: Path, results, *, images: list[str], tables: str | None, options=None
) -> None:
    """The report, and where it is: on stderr when --json owns stdout. The report draws; the DB's
    overview, power trace and environment (of the runs `options` select) are loaded here, by the
    analysis layer."""
    from edgestats.analysis.load.environment import load_environment
    from edgestats.analysis.load.overview import load_overview
    from edgestats.analysis.load.power_trace import load_power_trace
    from edgestats.reports import write_report

    environment = load_environment(db, options.where, options.filters) if options else load_environment(db)
    files = write_report(
        out,
        results,
        load_overview(db),
        load_power_trace(db),
        images=images,
        tables=tables,
        environment=environment,
    )
    say = lambda text: typer.echo(text, err=True)  # noqa: E731  (stdout may be JSON)
    say(f"report: {files.index} (open it in a browser; it needs no network) and {files.analysis_json}")
    if files.images:
        say(f"  {len(files.images)} images in {files.images[0].parent}")
    if files.tables:
        say(f"  {len(files.tables)} {tables} tables in {files.tables[0].parent}")
    for error in files.chart_errors:
        say(f"  warning: a chart could not be drawn (please report it): {error.splitlines()[0]}")


def register(app: typer.Typer) -> None:
    app.command("analyze", no_args_is_help=True, help=command_help())(analyze_command)
