"""The terminal output of `edgestats compare`: its text table, Markdown, JSON and the page's line. The
text table (the terminal's width, 80 to 120 columns, lines wrapped at word boundaries, never inside
a command, a quoted expression or a figure with its unit), the Markdown table for a pull-request
comment and the JSON document (docs/cli/compare.md, "Output"), and the line saying where --out wrote
the page. It formats a Comparison (edgestats/analysis/compare/comparison.py); it computes nothing.
"""

from __future__ import annotations

import json
import re
import shutil
import textwrap

from edgestats.formatting import MISSING, counted, format_interval, format_number

WIDTH = 80  # the table's width; the text uses up to MAX_WIDTH where the terminal has it
MAX_WIDTH = 120
SHORT = {
    "latency_median_ms": "median latency",
    "energy_per_inference_j": "energy/inference",
    "rss_peak_bytes": "peak RSS",
}
# Terminal columns: metric, A, B, B/A [interval], Holm's p, verdict (2 + 16+10+10+21+8+13 = 80).
COLUMNS = ((16, "<"), (10, ">"), (10, ">"), (21, ">"), (8, ">"), (13, "<"))


# -- cells and lines -------------------------------------------------------------------------------


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


# Spans a line break would garble: a quoted expression with its option (--where "noisy IS NOT
# TRUE"), a command with its options (edgestats collect --until-precise), an interval's bounds, a
# bound with its word (resolve ±5%), a count (4 of 4 on) and a number with its unit or noun (5 %, 8 runs).
UNBROKEN = re.compile(
    r'(?:--[a-z-]+ )?"[^"]*"|edgestats [a-z-]+(?: --[a-z-]+)*|\[[^\]]*\]'
    r"|\w+ [±≥] ?[\d.,]+ ?[%×]|\d[\d,]* of \d[\d,]*(?: [a-z]+)?|\d[\d.,]* ?%|\d[\d.,]* [a-z]+"
)
GLUE = "\ue000"  # a private-use character: textwrap breaks only at whitespace, and this is none


def wrap(text: str, width: int = WIDTH, **options) -> list[str]:
    """textwrap at word boundaries, never inside an UNBROKEN span (where it fits on a line)."""
    glued = UNBROKEN.sub(lambda m: m.group().replace(" ", GLUE), text)
    lines = textwrap.wrap(glued, width, break_on_hyphens=False, **options)
    return [line.replace(GLUE, " ") for line in lines]


def verdict_detail(test, threshold: float) -> str:
    """What a `same` or `inconclusive` verdict could have detected (its minimum detectable effect,
    in words: detect.detect_text) and, for inconclusive, how many runs would settle it, in
    parentheses; empty for the other verdicts and where there is no interval."""
    if test.verdict not in ("same", "inconclusive") or test.min_detectable_text is None:
        return ""
    if test.verdict == "same":
        return f"(within ±{threshold * 100:g}%; {test.min_detectable_text})"
    step = test.next_step["text"] if test.next_step else "collect more runs"
    return f"({test.min_detectable_text}: {step})"


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
    if len(detail) <= WIDTH - 4:
        return [_row(metric_cells(test)), detail.rjust(WIDTH)]
    return [_row(metric_cells(test)), *wrap(detail, width, initial_indent="    ", subsequent_indent="     ")]


def _row(cells: list[str]) -> str:
    """The cells at the COLUMNS' fixed edges (right-aligned ones end there, left-aligned ones start
    there); a cell longer than its column takes the next columns' padding, one space kept between
    cells, so a wide interval shifts the row only as far as it must."""
    line, end = "  ", 2
    for i, (cell, (width, align)) in enumerate(zip(cells, COLUMNS)):
        start, end, gap = end, end + width, min(i, 1)
        if align == ">":
            line += " " * max(gap, end - len(line) - len(cell)) + cell
        else:
            line += " " * max(gap, start + gap - len(line)) + cell
    return line.rstrip()


def compared_line(comparison) -> str:
    """What differs between the sides: "compared: framework pytorch (A) vs onnxruntime (B)"."""
    return "compared: " + "; ".join(
        f"{c} {va} (A) vs {vb} (B)" for c, (va, vb) in comparison.differing.items()
    )


def header_lines(comparison, width: int = WIDTH) -> list[str]:
    t = comparison.threshold
    lines = [f"A: {comparison.a.label}", f"B: {comparison.b.label}"]
    if comparison.differing:
        lines.append(compared_line(comparison))
    common, _ = split_key(comparison)
    lines.append("matched on: " + (", ".join(comparison.key) or "nothing (one group a side)"))
    if common:
        lines.append("every configuration: " + config_text(common))
    lines.append(
        f"same within {t:.0%} (ratio in [{1 / (1 + t):.3f}, {1 + t:.3f}]); intervals {comparison.level:.0%}, "
        "unit: runs; p-values Holm-adjusted"
    )
    lines += detect_legend(comparison)
    return [w for line in lines for w in wrap(line, width, subsequent_indent="  ")]


def detect_legend(comparison) -> list[str]:
    """What "could detect" means, once, where a verdict shows it."""
    if not any(verdict_detail(x, comparison.threshold) for _, tests in comparison.matched for x in tests):
        return []
    return [
        "could detect ≥ x: the smallest increase of B over A that would be called slower (higher) "
        "with 80% power, at these runs' spread and counts (from 2× on, as the ratio B/A)"
    ]


def warning_lines(comparison, width: int = WIDTH) -> list[str]:
    """pyperf's "WARNING: the benchmark result may be unstable", with each cause and its next step."""
    from edgestats.analysis.compare.cautions import HEADLINE

    if not comparison.warnings:
        return []
    lines = [f"WARNING: {HEADLINE}"]
    for w in comparison.warnings:
        lines += wrap(w.message, width, initial_indent="  - ", subsequent_indent="    ")
        lines += wrap(f"next: {w.next_step}", width, initial_indent="    ", subsequent_indent="      ")
    return lines + [""]


def overall_parts(comparison) -> tuple[str, list[str]]:
    """The geometric mean of B/A across configurations: the heading, and each metric's figure
    with its interval."""
    parts = [
        f"{SHORT.get(o.metric, o.metric)} {format_interval(o.estimate, o.ci_low, o.ci_high)} over "
        f"{counted(o.n_configurations, 'configurations')}" + (f" ({o.note})" if o.note else "")
        for o in comparison.overall
    ]
    return (
        f"overall B/A (geometric mean across configurations, {comparison.level:.0%} interval over runs):",
        parts,
    )


def overall_text(comparison) -> str:
    """The overall figures on one line (markdown)."""
    heading, parts = overall_parts(comparison)
    return f"{heading} " + "; ".join(parts)


def render_text(comparison, width: int = WIDTH) -> str:
    lines = header_lines(comparison, width) + [""] + warning_lines(comparison, width)
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
    if comparison.overall:  # the heading, then one line per metric
        heading, parts = overall_parts(comparison)
        lines += wrap(heading, width, subsequent_indent="  ")
        lines += [
            w for part in parts for w in wrap(part, width, initial_indent="  ", subsequent_indent="    ")
        ]
    n = len(comparison.regressions)
    summary = (
        f"regression: {counted(n, 'configurations')} significantly slower by more than "
        f"{comparison.threshold:.0%} (exit 1)"
        if n
        else f"no significant regression beyond {comparison.threshold:.0%} (exit 0)"
    )
    return lines + wrap(summary, width)


def markdown_warnings(comparison) -> list[str]:
    """The warnings as one quoted block: the headline, then each cause and its next step."""
    from edgestats.analysis.compare.cautions import HEADLINE
    from edgestats.reports.tables import markdown_escape

    if not comparison.warnings:
        return []
    return [
        f"> **WARNING: {HEADLINE}**",
        ">",
        *[
            f"> - {markdown_escape(w.message)}. Next: {markdown_escape(w.next_step)}."
            for w in comparison.warnings
        ],
        "",
    ]


def render_markdown(comparison) -> str:
    """One GitHub-flavoured table (for a PR comment), then the unmatched configurations."""
    from edgestats.reports.tables import markdown_escape

    t = comparison.threshold
    common, varying = split_key(comparison)
    lines = [
        f"**B** {markdown_escape(comparison.b.label)} vs **A** {markdown_escape(comparison.a.label)}: "
        f"same within ±{t:.0%}, {comparison.level:.0%} intervals over runs, Holm-adjusted p",
        "",
        *([f"{markdown_escape(compared_line(comparison))}", ""] if comparison.differing else []),
        *([f"Every configuration: {markdown_escape(config_text(common))}", ""] if common else []),
        *markdown_warnings(comparison),
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
    lines += ["", markdown_escape(overall_text(comparison))] if comparison.overall else []
    lines += ["", "**regression**" if comparison.regressions else "no significant regression"]
    return "\n".join(lines)


FORMATS = ("text", "json", "markdown")


def render(comparison, fmt: str, width: int | None = None) -> str:
    """The comparison in one of FORMATS; text at `width` (default: the terminal's, text_width())."""
    if fmt == "json":
        return json.dumps(comparison.to_json(), indent=2, allow_nan=False)
    if fmt == "markdown":
        return render_markdown(comparison)
    return render_text(comparison, text_width() if width is None else width)


def page_line(files: tuple) -> str:
    """Where `compare --out` wrote its page and its JSON (on stderr: stdout may be JSON)."""
    return f"report: {files[0]} (open it in a browser; it needs no network) and {files[1]}"
