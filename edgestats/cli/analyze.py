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

from edgestats.cli.common import handle_errors
from edgestats.registry.analyses import ANALYSES, choices_text
from edgestats.reports.terminal import DEFAULT_LIMIT, TextOptions, print_results


@handle_errors
def analyze_command(
    db: Path = typer.Argument(..., metavar="DB", help="Results DB (opened read-only).", show_default=False),
    only: str | None = typer.Option(
        None, "--only", metavar="NAME", help=f"Run one analysis: {choices_text()}."
    ),
    as_json: bool = typer.Option(
        False, "--json", help="Print {analysis: [entries]} as JSON on stdout (docs/cli/analyze.md)."
    ),
    where: str | None = typer.Option(
        None,
        "--where",
        metavar="SQL",
        help="Select runs with an expression on run_summary columns, e.g. \"framework = 'pytorch'\".",
    ),
    by: list[str] = typer.Option(
        [],
        "--by",
        metavar="COL",
        help="Group key (repeatable), any run column: device, framework, runtime, model, batch_size, threads, precision, dataset and the others of run_summary.",
    ),
    level: float = typer.Option(0.95, "--level", help="Confidence level of every interval."),
    seed: int = typer.Option(
        0, "--seed", help="Seed of the bootstrap resampling (results are reproducible for a seed)."
    ),
    resamples: int = typer.Option(2000, "--resamples", help="Bootstrap resamples per interval."),
    bca_max_n: int = typer.Option(
        500,
        "--bca-max-n",
        help="Largest sample bootstrapped with BCa; bigger ones use order statistics (quantiles) or the percentile bootstrap (ratios).",
    ),
    device: list[str] = typer.Option([], "--device", help="Only runs on this device (repeatable)."),
    framework: list[str] = typer.Option([], "--framework", help="Only this framework (repeatable)."),
    runtime: list[str] = typer.Option([], "--runtime", help="Only this runtime (repeatable)."),
    model: list[str] = typer.Option([], "--model", help="Only this model (repeatable)."),
    dataset: list[str] = typer.Option([], "--dataset", help="Only this dataset (repeatable)."),
    kind: list[str] = typer.Option([], "--kind", help="Only inference or training runs."),
    noisy: str = typer.Option(
        "include",
        "--noisy",
        metavar="include|exclude",
        help="Runs flagged noisy by collect's noise sentinel (a busy machine): include them, counted in a note, or exclude them. Runs never judged (imported, recovered) are kept.",
    ),
    response: str | None = typer.Option(
        None,
        "--response",
        metavar="COL",
        help="hyperparams: the response, e.g. training_time_s, accuracy_pct, epoch_time_s, testing_time_s, latency_median_ms.",
    ),
    factor: list[str] = typer.Option(
        [],
        "--factor",
        metavar="COL",
        help="hyperparams: a factor (repeatable), e.g. batch_size, iterations, learning_rate, threads.",
    ),
    interaction: bool = typer.Option(
        False, "--interaction", help="hyperparams: add every pairwise interaction of the factors."
    ),
    best: str | None = typer.Option(
        None,
        "--best",
        metavar="min|max",
        help="hyperparams: report the configuration with the min or max mean response per group.",
    ),
    constraint: str | None = typer.Option(
        None,
        "--constraint",
        metavar="TEXT",
        help='hyperparams: only configurations meeting it count for --best, e.g. "training_time_s <= 600".',
    ),
    log: list[str] = typer.Option(
        [],
        "--log",
        metavar="COL",
        help="hyperparams: log10-scale this factor (default: when it spans two decades).",
    ),
    linear: list[str] = typer.Option(
        [], "--linear", metavar="COL", help="hyperparams: never log-scale this factor."
    ),
    out: Path | None = typer.Option(
        None,
        "--out",
        metavar="DIR",
        help="Write the report here: DIR/index.html (one self-contained page, works offline) and DIR/analysis.json.",
    ),
    png: bool = typer.Option(False, "--png", help="With --out: every chart as DIR/images/*.png too."),
    svg: bool = typer.Option(False, "--svg", help="With --out: every chart as DIR/images/*.svg too."),
    limit: int = typer.Option(
        DEFAULT_LIMIT,
        "--limit",
        metavar="N",
        min=1,
        help="Rows per table in the text output (the collected devices' first).",
    ),
    all_rows: bool = typer.Option(False, "--all", help="Every row of every table in the text output."),
    tables: str | None = typer.Option(
        None,
        "--tables",
        metavar="latex|markdown|csv",
        help="With --out: every table, with its intervals, as DIR/tables/* in this format (for papers).",
    ),
) -> None:
    """Statistics with confidence intervals over the runs of a results DB; the --help text is
    command_help(), which lists the registry's analyses."""
    from edgestats.analysis import AnalysisOptions, dumps, run_analyses

    filters = {
        "device": device,
        "framework": framework,
        "runtime": runtime,
        "model": model,
        "dataset": dataset,
        "kind": kind,
    }
    options = AnalysisOptions.from_flags(
        only=only,
        where=where,
        by=by,
        level=level,
        seed=seed,
        resamples=resamples,
        bca_max_n=bca_max_n,
        filters=filters,
        noisy=noisy,
        response=response,
        factor=factor,
        interaction=interaction,
        best=best,
        constraint=constraint,
        log=log,
        linear=linear,
    )
    if (png or svg or tables) and out is None:
        raise typer.BadParameter(
            "--png, --svg and --tables write into the report folder: add --out DIR", param_hint="--out"
        )
    if tables is not None and tables not in ("latex", "markdown", "csv"):
        raise typer.BadParameter("use latex, markdown or csv", param_hint="--tables")
    results = run_analyses(db, options)
    if as_json:
        typer.echo(dumps(results))
    elif out is None:
        from edgestats.analysis.overview import collected_devices

        print_results(
            results, TextOptions(limit=None if all_rows else limit, collected_devices=collected_devices(db))
        )
    if out is not None:
        write_report_files(
            db, out, results, images=[f for f, on in (("png", png), ("svg", svg)) if on], tables=tables
        )


def command_help() -> str:
    """The command's help: what it does, then every analysis of the registry with its help line."""
    analyses = "\n\n".join(f"{entry.name}: {entry.help}" for entry in ANALYSES)
    return (
        "Statistics with confidence intervals over the runs of a results DB.\n\n"
        "Without --only, runs every analysis the data supports:\n\n" + analyses + "\n\n"
        "Every estimate comes with its interval, its n and what n counts. Only ok and diverged runs are used."
    )


def write_report_files(db: Path, out: Path, results, *, images: list[str], tables: str | None) -> None:
    """The report, and where it is: on stderr when --json owns stdout. The report draws; the DB's
    overview and power trace are loaded here, by the analysis layer."""
    from edgestats.analysis.overview import load_overview
    from edgestats.analysis.power_trace import load_power_trace
    from edgestats.reports import write_report

    files = write_report(out, results, load_overview(db), load_power_trace(db), images=images, tables=tables)
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
