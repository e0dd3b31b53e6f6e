"""The report page: one self-contained HTML file that works offline.

Vega, Vega-Lite and vega-embed are inlined from vl-convert's bundle (no CDN), the chart specs
travel in one JSON <script> block, and a Content-Security-Policy forbids the page any network
request, so a report opened on a plane renders exactly as it does on the lab's laptop.

Every string that may come from a DB (device, model, framework names, error texts) goes through
`html.escape` in the page, and through `script_json` inside the <script> block: a device named
`</script><script>alert(1)</script>` stays text.
"""

from __future__ import annotations

import datetime as dt
import html
import json
import math
import re
from dataclasses import dataclass, field
from typing import Any

import polars as pl

from edgestats.analysis.load.overview import Overview
from edgestats.reports.bundle import vega_bundle
from edgestats.reports.headline import headline_table
from edgestats.reports.page_answers import answers_html
from edgestats.reports.page_assets import FILTER_JS, LOADER_JS, SORT_JS, STYLE
from edgestats.reports.page_environment import TITLE as ENVIRONMENT_TITLE
from edgestats.reports.page_environment import environment_html, overview_environment
from edgestats.reports.page_tables import Footnotes, collapsed_html, csv_link, page_table, table_markup
from edgestats.version import __version__

# HTML tables stop here; the full tables are in analysis.json and `--tables`.
MAX_TABLE_ROWS = 200

# No fetch/XHR/websocket (connect-src falls back to 'none'), no remote script, style, font or
# image. Vega compiles its expressions with Function(), hence 'unsafe-eval'; vega-embed's PNG/SVG
# export makes data:/blob: URLs.
CONTENT_SECURITY_POLICY = (
    "default-src 'none'; script-src 'unsafe-inline' 'unsafe-eval'; style-src 'unsafe-inline'; "
    "img-src data: blob:; font-src data:"
)

EMBED_OPTIONS = {
    "renderer": "svg",
    # The editor/source actions open vega.github.io: offline they would only fail.
    "actions": {"export": True, "source": False, "compiled": False, "editor": False},
}


@dataclass(frozen=True)
class Figure:
    """One chart of a section. `spec` is a Vega-Lite dict (chart.to_dict())."""

    key: str
    title: str
    spec: dict[str, Any]
    secondary: bool = False  # a generic chart of a frame the section does not draw: folded, as the tables


@dataclass(frozen=True)
class Section:
    """One analysis: what it shows in a sentence, its charts, and its figures with intervals."""

    key: str
    title: str
    sentence: str
    figures: list[Figure] = field(default_factory=list)
    tables: list[tuple[str, pl.DataFrame]] = field(default_factory=list)  # (caption, figures)
    notes: list[str] = field(default_factory=list)


def element_id(*parts: str) -> str:
    """An HTML id from keys we chose (never from DB strings): lowercase letters, digits, dashes."""
    return re.sub(r"[^a-z0-9]+", "-", "-".join(parts).lower()).strip("-")


def finite(value: Any) -> Any:
    """NaN/inf as null: JSON has no NaN, and JSON.parse would reject the whole block."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite(v) for v in value]
    return value


def script_json(value: Any) -> str:
    """JSON that is safe inside <script>: no '</script>', no '<!--', no JS-breaking line
    separators. \\u003c etc. are the same string to JSON.parse."""
    text = json.dumps(finite(value), separators=(",", ":"), ensure_ascii=False, allow_nan=False, default=str)
    for raw, escaped in (
        ("<", "\\u003c"),
        (">", "\\u003e"),
        ("&", "\\u0026"),
        ("\u2028", "\\u2028"),
        ("\u2029", "\\u2029"),
    ):
        text = text.replace(raw, escaped)
    return text


def esc(value: object) -> str:
    return html.escape("" if value is None else str(value), quote=True)


# -- header -------------------------------------------------------------------------------------


def _date(value: dt.datetime | None) -> str:
    return value.strftime("%Y-%m-%d %H:%M UTC") if value else "not recorded"


def header_html(overview: Overview) -> str:
    """The title and one wrapped line of facts. The counts of configurations, runs and devices
    are recounted by the page's filter from `data-runs` (one entry per kind x status x
    configuration); the devices' facts are in the environment section."""
    runs = ", ".join(
        f"{n:,} {esc(kind)} {esc(status)}" for (kind, status), n in overview.runs_by_kind_status.items()
    )
    sources = ", ".join(f"{esc(source)} ({n:,})" for source, n in overview.sources.items())
    power = ", ".join(esc(p) for p in overview.power_sources) or "none recorded (no energy figures)"
    if overview.first_started:
        dates = f"{_date(overview.first_started)} – {_date(overview.last_started)}"
    elif overview.sources and all(source.startswith("import") for source in overview.sources):
        dates = "not recorded (imported results carry no dates)"
    else:
        dates = "not recorded"
    configs = {tuple(g.get(k) for k in g if k not in ("status", "n_runs")) for g in overview.run_groups}
    n_configs = (
        f"<div><dt>configurations</dt><dd id=count-configs>{len(configs):,}</dd></div>\n" if configs else ""
    )
    return f"""<header data-runs="{esc(script_json(overview.run_groups))}">
<h1>edgestats report: {esc(overview.db_name)}</h1>
<dl class=facts>
{n_configs}<div><dt>runs</dt><dd><span id=count-runs>{overview.n_runs:,}</span><span id=count-kinds>\
{f" ({runs})" if runs else ""}</span></dd></div>
<div><dt>devices</dt><dd id=count-devices>{len(overview.devices):,}</dd></div>
<div><dt>dates</dt><dd>{dates}</dd></div>
<div><dt>power sources</dt><dd>{power}</dd></div>
<div><dt>where from</dt><dd>{sources or "–"}</dd></div>
</dl>
</header>"""


# -- sections -----------------------------------------------------------------------------------

# Charts shown under "At a glance", before the sections: (section key, figure key).
MAIN_CHARTS = (("summary", "latency"), ("tradeoff", "pareto"))


def table_html(
    caption: str,
    frame: pl.DataFrame,
    notes: Footnotes | None = None,
    *,
    key: str | None = None,
    collapsed: bool = False,
) -> str:
    """A frame as a wide table with units, intervals inline, a CSV link, and its notes as footnotes
    (listed right after it when no page-wide `notes` is given, as in a notebook)."""
    own = notes is None
    notes = Footnotes() if own else notes
    table = page_table(element_id(key or caption), caption, frame, notes)
    if collapsed:
        text = collapsed_html(table, MAX_TABLE_ROWS)
    else:
        text = (
            f"<div class=tablehead><span class=cap>{esc(caption)}</span> {csv_link(table)}</div>"
            + table_markup(table, MAX_TABLE_ROWS)
        )
    return text + (notes.html().replace("<h2>Notes</h2>", "") if own else "")


def figure_html(section: Section, figure: Figure) -> str:
    chart_id = element_id("chart", section.key, figure.key)
    return (
        f"<figure><figcaption>{esc(figure.title)}</figcaption>"
        f'<div class="chart" id="{chart_id}" data-rendered="pending"></div></figure>'
    )


def shared_notes(sections: list[Section]) -> list[str]:
    """Notes that several sections carry (e.g. how many runs were noisy): said once, at the top."""
    counts: dict[str, int] = {}
    for section in sections:
        for note in dict.fromkeys(section.notes):
            counts[note] = counts.get(note, 0) + 1
    return [note for note, n in counts.items() if n > 1]


def section_html(
    section: Section,
    notes: Footnotes | None = None,
    moved: frozenset = frozenset(),
    shared: tuple[str, ...] = (),
    lead: str = "",
) -> str:
    """A section: its sentence, its `lead` (HTML: the answers' tables), its charts (those in
    `moved` are at the top), its tables folded."""
    notes = notes if notes is not None else Footnotes()
    parts = [
        f'<section id="{element_id(section.key)}"><h2>{esc(section.title)}</h2>',
        f"<p class=sentence>{esc(section.sentence)}</p>",
        lead,
    ]
    shown = [f for f in section.figures if (section.key, f.key) not in moved]
    if len(shown) < len(section.figures):
        parts.append('<p class=moved>Its main chart is under <a href="#glance">At a glance</a>.</p>')
    parts.append(
        "<div class=charts>" + "".join(figure_html(section, f) for f in shown if not f.secondary) + "</div>"
    )
    folded = [f for f in shown if f.secondary]
    if folded:
        names = ", ".join(f.title for f in folded)
        parts.append(
            f"<details class=table><summary><span class=cap>More charts</span> <span class=shape>{esc(names)}"
            "</span></summary><div class=charts>"
            + "".join(figure_html(section, f) for f in folded)
            + "</div></details>"
        )
    parts += [
        table_html(caption, frame, notes, key=f"{section.key}-{caption}", collapsed=True)
        for caption, frame in section.tables
        if frame.height
    ]
    parts += [f"<p class=note>{esc(note)}</p>" for note in dict.fromkeys(section.notes) if note not in shared]
    parts.append("</section>")
    return "\n".join(parts)


def glance_html(sections: list[Section], summary: Any, notes: Footnotes) -> tuple[str, frozenset]:
    """The headline table and the main charts; and which charts moved up here."""
    table = headline_table(summary, notes) if summary is not None else None
    moved = [(s, f) for s in sections for f in s.figures if (s.key, f.key) in MAIN_CHARTS]
    if table is None and not moved:
        return "", frozenset()
    parts = ['<section id="glance"><h2>At a glance</h2>']
    if table is not None:
        parts.append(
            f"<div class=tablehead><span class=cap>Per configuration</span> "
            f"<span class=shape>{esc(table.shape)}; click a header to sort</span> {csv_link(table)}</div>"
        )
        parts.append(table_markup(table, MAX_TABLE_ROWS))
    parts.append("<div class=charts>" + "".join(figure_html(s, f) for s, f in moved) + "</div></section>")
    return "\n".join(parts), frozenset((s.key, f.key) for s, f in moved)


def chart_specs(sections: list[Section]) -> dict[str, dict[str, Any]]:
    return {element_id("chart", s.key, f.key): f.spec for s in sections for f in s.figures}


def contents_html(entries: list[tuple[str, str]]) -> str:
    """The contents list: (element id, title) per part, in page order."""
    items = "".join(f'<li><a href="#{key}">{esc(title)}</a></li>' for key, title in entries)
    return f"<nav><ol>{items}</ol></nav>"


def page_body(
    sections: list[Section],
    notes: Footnotes,
    *,
    summary: Any = None,
    answers: Any = None,
    environment: str = "",
) -> tuple[list[tuple[str, str]], str]:
    """(contents entries, the <main> markup): the answers first (before "At a glance" and any
    chart), then the headline and main charts, every other section, the environment."""
    first = [s for s in sections if s.key == "answers"]
    rest = [s for s in sections if s.key != "answers"]
    shared = tuple(shared_notes(sections))
    lead = answers_html(answers, notes) if answers is not None else ""
    top = "\n".join(section_html(s, notes, frozenset(), shared, lead) for s in first)
    glance, moved = glance_html(rest, summary, notes)
    body = "\n".join(section_html(s, notes, moved, shared) for s in rest)
    every = "".join(f"<p class=note>In every section: {esc(note)}</p>" for note in shared)
    entries = [(element_id(s.key), s.title) for s in first]
    entries += [("glance", "At a glance")] if glance else []
    entries += [(element_id(s.key), s.title) for s in rest]
    entries += [("environment", ENVIRONMENT_TITLE)] if environment else []
    return entries, "\n".join((top, glance, every, body, environment))


def render_page(
    overview: Overview,
    sections: list[Section],
    *,
    summary: Any = None,
    answers: Any = None,
    environment: dict[str, pl.DataFrame] | None = None,
    generated_at: dt.datetime | None = None,
) -> str:
    """The page: header, contents, filter bar; the answers (of `answers`, the answers analysis'
    result), "At a glance" (the headline table of `summary`, the summary analysis' result, and
    the main charts), a section per analysis, the environment (`environment`: the frames of
    edgestats.analysis.load.environment; without it, the devices of `overview`), the footnotes,
    the scripts."""
    generated_at = generated_at or dt.datetime.now(dt.timezone.utc)
    notes = Footnotes()
    environment_part = environment_html(environment or overview_environment(overview), notes, MAX_TABLE_ROWS)
    entries, main = page_body(sections, notes, summary=summary, answers=answers, environment=environment_part)
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="{esc(CONTENT_SECURITY_POLICY)}">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="generator" content="edgestats {esc(__version__)}">
<title>edgestats report: {esc(overview.db_name)}</title>
<style>{STYLE}</style>
</head>
<body>
{header_html(overview)}
{contents_html(entries)}
<div id=filters hidden><b>Filter</b><span id=filter-state>showing everything</span></div>
<main>
{main}
</main>
{notes.html()}
<footer>Written by edgestats {esc(__version__)} on {generated_at.strftime("%Y-%m-%d %H:%M UTC")}.
Intervals are confidence intervals at the level given under each table; n is the number of
observations behind each figure. Click a table's header to sort it; CSV links download the
table's numbers; the filter bar shows one device, framework, runtime or model in every table,
chart, answer and count.
This page makes no network requests.</footer>
<script type="application/json" id="edgestats-specs">{script_json(chart_specs(sections))}</script>
<script type="application/json" id="edgestats-embed-options">{script_json(EMBED_OPTIONS)}</script>
<script>{vega_bundle()}</script>
<script>{LOADER_JS}{SORT_JS}{FILTER_JS}</script>
</body>
</html>
"""
