"""`edgestats compare A.duckdb [B.duckdb]`: is B faster than A, by how much, and is it real?

Thin: the options become two Selections, `edgestats.analysis.compare.compare` does the matching
and the statistics, and the result is printed as text (the terminal's width, 80 to 120 columns),
JSON or Markdown, and drawn by `edgestats.reports.compare_page` (--out). Exit status
(docs/cli/compare.md): 0 no significant regression, 1 a significant regression beyond
--threshold, 2 bad input — as diff(1) and cmp(1) do, so a CI job tells "slower" from "could not
compare".
"""

from __future__ import annotations

import shutil
import textwrap
from pathlib import Path

import typer

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
from edgestats.formatting import MISSING, counted, format_interval, format_number

EXIT_REGRESSION = 1
EXIT_INPUT_ERROR = 2
FORMATS = ("text", "json", "markdown")
WIDTH = 80  # the table's width; the text uses up to MAX_WIDTH where the terminal has it
MAX_WIDTH = 120
SHORT = {
    "latency_median_ms": "median latency",
    "energy_per_inference_j": "energy/inference",
    "rss_peak_bytes": "peak RSS",
}
# Terminal columns: metric, A, B, B/A [interval], Holm's p, verdict (2 + 16+10+10+21+8+13 = 80).
COLUMNS = ((16, "<"), (10, ">"), (10, ">"), (21, ">"), (8, ">"), (13, "<"))


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
    inconclusive).

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
    from edgestats.analysis.compare import Selection, combined_where, compare

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
    from edgestats.analysis.load_overview import load_overview
    from edgestats.reports.compare_page import write_compare_page

    dbs = dict.fromkeys([comparison.a.db, comparison.b.db])  # one DB with two selections: one overview
    files = write_compare_page(out, comparison, [load_overview(db) for db in dbs])
    typer.echo(f"report: {files[0]} (open it in a browser; it needs no network) and {files[1]}", err=True)


# -- rendering ----------------------------------------------------------------------------------


def value_text(value: float | None, metric: str) -> str:
    if value is None:
        return MISSING
    if metric == "rss_peak_bytes":
        return f"{format_number(value / 1048576.0)} MiB"
    return f"{format_number(value)} {'ms' if metric.endswith('_ms') else 'J'}"


def p_text(p: float | None) -> str:
    return MISSING if p is None else f"{p:.2g}" if p >= 1e-3 else f"{p:.0e}"


def config_text(config: dict) -> str:
    return ", ".join(f"{k}={v}" for k, v in config.items()) or "all runs"


def text_width() -> int:
    """The terminal's width (COLUMNS first; 80 when piped), within [WIDTH, MAX_WIDTH]."""
    return min(max(shutil.get_terminal_size((WIDTH, 24)).columns, WIDTH), MAX_WIDTH)


def wrap(text: str, width: int = WIDTH, **options) -> list[str]:
    return textwrap.wrap(text, width, break_on_hyphens=False, **options)


def pct_text(pct: float) -> str:
    """7.9%, 12%, 1,250%: one decimal below 10 %, whole percents above."""
    return f"{pct:.1f}%" if pct < 9.95 else f"{pct:,.0f}%"


def verdict_detail(test, threshold: float) -> str:
    """What a `same` or `inconclusive` verdict could have detected (its minimum detectable
    effect), in parentheses; empty for the other verdicts and where there is no interval."""
    if test.verdict not in ("same", "inconclusive") or test.min_detectable_alpha is None:
        return ""
    mde = test.min_detectable_pct
    could = f"could detect ≥ {pct_text(mde)}" if mde is not None else "could detect no change at 80% power"
    if test.verdict == "same":
        return f"(within ±{threshold * 100:g}%; {could})"
    return f"({could}: collect more runs)"


def split_key(comparison) -> tuple[dict, list[str]]:
    """The key columns with one value in every matched configuration (said once, in the header)
    and those that vary (each configuration's label)."""
    configs = [config for config, _ in comparison.matched]
    varying = [c for c in comparison.key if len({repr(config.get(c)) for config in configs}) > 1]
    common = {c: configs[0].get(c) for c in comparison.key if c not in varying} if configs else {}
    return common, varying


def metric_cells(test, detail: str = "") -> list[str]:
    return [
        SHORT.get(test.metric, test.metric),
        value_text(test.a_estimate, test.metric),
        value_text(test.b_estimate, test.metric),
        format_interval(test.estimate, test.ci_low, test.ci_high),
        p_text(test.p_holm),
        f"{test.verdict} {detail}".rstrip(),
    ]


def metric_rows(test, threshold: float, width: int) -> list[str]:
    """The table row of one metric; the verdict's detail on it where the width allows, else on
    the next line, right-aligned under the verdict."""
    detail = verdict_detail(test, threshold)
    row = _row(metric_cells(test, detail))
    if len(row) <= width or not detail:
        return [row]
    return [_row(metric_cells(test)), detail.rjust(WIDTH)]


def _row(cells: list[str]) -> str:
    return (
        "  "
        + "".join(
            f"{c:{align}{w}}" if i == 0 else f" {c:{align}{w - 1}}"
            for i, (c, (w, align)) in enumerate(zip(cells, COLUMNS))
        ).rstrip()
    )


def header_lines(comparison, width: int = WIDTH) -> list[str]:
    t = comparison.threshold
    lines = [f"A: {comparison.a.label}", f"B: {comparison.b.label}"]
    if comparison.differing:
        lines.append(
            "compared: "
            + "; ".join(f"{c} {va} (A) vs {vb} (B)" for c, (va, vb) in comparison.differing.items())
        )
    common, _ = split_key(comparison)
    lines.append("matched on: " + (", ".join(comparison.key) or "nothing (one group a side)"))
    if common:
        lines.append("every configuration: " + config_text(common))
    lines.append(
        f"same within {t:.0%} (ratio in [{1 / (1 + t):.3f}, {1 + t:.3f}]); intervals {comparison.level:.0%}, "
        "unit: runs; p Holm-adjusted"
    )
    lines += detect_legend(comparison)
    return [w for line in lines for w in wrap(line, width, subsequent_indent="  ")]


def detect_legend(comparison) -> list[str]:
    """What "could detect" means, once, where a verdict shows it."""
    if not any(verdict_detail(x, comparison.threshold) for _, tests in comparison.matched for x in tests):
        return []
    return [
        "could detect ≥ x: the smallest increase of B over A that would be called slower (higher) "
        "with 80% power, at these runs' spread and counts"
    ]


def render_text(comparison, width: int = WIDTH) -> str:
    lines = header_lines(comparison, width) + [""]
    _, varying = split_key(comparison)
    for config, tests in comparison.matched:
        n_a, n_b = (tests[0].n_a, tests[0].n_b) if tests else (0, 0)
        label = config_text({c: config[c] for c in varying}) + ": " if varying else ""
        lines += wrap(f"{label}{n_a} (A) vs {n_b} (B) runs", width, subsequent_indent="  ")
        lines.append(_row(["metric", "A", "B", "B/A [interval]", "p", "verdict"]))
        lines += [row for t in tests for row in metric_rows(t, comparison.threshold, width)]
        lines += [
            w
            for t in tests
            if t.note
            for w in wrap(
                f"{SHORT.get(t.metric, t.metric)}: {t.note}",
                width,
                initial_indent="  note: ",
                subsequent_indent="    ",
            )
        ]
        lines.append("")
    lines += footer_lines(comparison, width)
    return "\n".join(lines).rstrip()


def footer_lines(comparison, width: int = WIDTH) -> list[str]:
    lines = []
    for u in comparison.unmatched:
        text = f"only in {u['side'].upper()} (not compared): {config_text(u['config'])} ({u['n_runs']} runs)"
        lines += wrap(text, width, subsequent_indent="  ")
    lines += [w for note in comparison.notes for w in wrap(f"note: {note}", width, subsequent_indent="  ")]
    n = len(comparison.regressions)
    summary = (
        f"regression: {counted(n, 'configurations')} significantly slower by more than "
        f"{comparison.threshold:.0%} (exit 1)"
        if n
        else f"no significant regression beyond {comparison.threshold:.0%} (exit 0)"
    )
    return lines + wrap(summary, width)


def render_markdown(comparison) -> str:
    """One GitHub-flavoured table (for a PR comment), then the unmatched configurations."""
    from edgestats.reports.tables import markdown_escape

    t = comparison.threshold
    common, varying = split_key(comparison)
    lines = [
        f"**B** {markdown_escape(comparison.b.label)} vs **A** {markdown_escape(comparison.a.label)}: "
        f"same within ±{t:.0%}, {comparison.level:.0%} intervals over runs, Holm-adjusted p",
        "",
        *([f"Every configuration: {markdown_escape(config_text(common))}", ""] if common else []),
        "| configuration | metric | A | B | B/A [interval] | p (Holm) | verdict | runs |",
        "|---|---|--:|--:|--:|--:|---|--:|",
    ]
    for config, tests in comparison.matched:
        for test in tests:
            cells = [
                config_text({c: config[c] for c in varying}),
                *metric_cells(test, verdict_detail(test, t)),
                f"{test.n_a} vs {test.n_b}",
            ]
            lines.append("| " + " | ".join(markdown_escape(c) for c in cells) + " |")
    extra = [
        f"only in {u['side'].upper()}: {config_text(u['config'])} ({u['n_runs']} runs)"
        for u in comparison.unmatched
    ]
    extra += list(comparison.notes) + detect_legend(comparison)
    lines += ([""] + [f"- {markdown_escape(e)}" for e in extra]) if extra else []
    lines += ["", "**regression**" if comparison.regressions else "no significant regression"]
    return "\n".join(lines)


def register(app: typer.Typer) -> None:
    app.command("compare", no_args_is_help=True)(compare_command)
