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

from edgestats import __version__
from edgestats.analysis.overview import Overview
from edgestats.reports.bundle import vega_bundle
from edgestats.reports.tables import report_table, right_aligned

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


@dataclass(frozen=True)
class Section:
    """One analysis: what it shows in a sentence, its charts, and its figures with intervals."""

    key: str
    title: str
    sentence: str
    figures: list[Figure] = field(default_factory=list)
    tables: list[tuple[str, pl.DataFrame]] = field(default_factory=list)   # (caption, figures)
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
    for raw, escaped in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"),
                         ("\u2028", "\\u2028"), ("\u2029", "\\u2029")):
        text = text.replace(raw, escaped)
    return text


def esc(value: object) -> str:
    return html.escape("" if value is None else str(value), quote=True)


# -- header -------------------------------------------------------------------------------------


def _date(value: dt.datetime | None) -> str:
    return value.strftime("%Y-%m-%d %H:%M UTC") if value else "not recorded"


def header_html(overview: Overview) -> str:
    devices = "".join(
        f"<tr><td>{esc(d.name)}</td><td>{esc(d.arch or '–')}</td><td>{esc(d.cpu_model or '–')}</td>"
        f"<td class=num>{esc(d.cores if d.cores is not None else '–')}</td><td class=num>{d.n_runs:,}</td></tr>"
        for d in overview.devices
    )
    runs = ", ".join(f"{n:,} {esc(kind)} {esc(status)}" for (kind, status), n in overview.runs_by_kind_status.items())
    sources = ", ".join(f"{esc(source)} ({n:,})" for source, n in overview.sources.items())
    power = ", ".join(esc(p) for p in overview.power_sources) or "none recorded (no energy figures)"
    if overview.first_started:
        dates = f"{_date(overview.first_started)} – {_date(overview.last_started)}"
    else:
        dates = "not recorded (imported results carry no dates)"
    return f"""<header>
<h1>edgestats report: {esc(overview.db_name)}</h1>
<dl class=facts>
<dt>runs</dt><dd>{overview.n_runs:,}{f" ({runs})" if runs else ""}</dd>
<dt>devices</dt><dd>{len(overview.devices):,}</dd>
<dt>dates</dt><dd>{dates}</dd>
<dt>power sources</dt><dd>{power}</dd>
<dt>where from</dt><dd>{sources or "–"}</dd>
</dl>
<table class=devices><thead><tr><th>device</th><th>arch</th><th>CPU</th><th>cores</th><th>runs</th></tr></thead>
<tbody>{devices}</tbody></table>
</header>"""


# -- sections -----------------------------------------------------------------------------------


def table_html(caption: str, frame: pl.DataFrame) -> str:
    shown = frame.head(MAX_TABLE_ROWS)
    formatted = report_table(shown)
    align = right_aligned(shown, formatted)
    head = "".join(f"<th{' class=num' if right else ''}>{esc(c)}</th>" for c, right in zip(formatted.columns, align))
    body = "".join(
        "<tr>" + "".join(f"<td{' class=num' if right else ''}>{esc(cell)}</td>" for cell, right in zip(row, align)) + "</tr>"
        for row in formatted.iter_rows()
    )
    more = ""
    if frame.height > MAX_TABLE_ROWS:
        more = (f"<p class=note>First {MAX_TABLE_ROWS} of {frame.height:,} rows; all of them are in analysis.json "
                "and in the files of <code>--tables csv</code>.</p>")
    return f"<div class=table-wrap><table><caption>{esc(caption)}</caption><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>{more}"


def figure_html(section: Section, figure: Figure) -> str:
    chart_id = element_id("chart", section.key, figure.key)
    return (f'<figure><figcaption>{esc(figure.title)}</figcaption>'
            f'<div class="chart" id="{chart_id}" data-rendered="pending"></div></figure>')


def section_html(section: Section) -> str:
    parts = [f'<section id="{element_id(section.key)}"><h2>{esc(section.title)}</h2>',
             f"<p class=sentence>{esc(section.sentence)}</p>"]
    parts += [figure_html(section, f) for f in section.figures]
    parts += [table_html(caption, frame) for caption, frame in section.tables if frame.height]
    parts += [f"<p class=note>{esc(note)}</p>" for note in section.notes]
    parts.append("</section>")
    return "\n".join(parts)


def chart_specs(sections: list[Section]) -> dict[str, dict[str, Any]]:
    return {element_id("chart", s.key, f.key): f.spec for s in sections for f in s.figures}


def contents_html(sections: list[Section]) -> str:
    items = "".join(f'<li><a href="#{element_id(s.key)}">{esc(s.title)}</a></li>' for s in sections)
    return f"<nav><ol>{items}</ol></nav>"


# Draws every chart; a chart that fails says so in its box and on the console (the browser
# test fails on any console error).
LOADER_JS = """
(function () {
  var specs = JSON.parse(document.getElementById("edgestats-specs").textContent);
  var options = JSON.parse(document.getElementById("edgestats-embed-options").textContent);
  Object.keys(specs).forEach(function (id) {
    var box = document.getElementById(id);
    vegaEmbed(box, specs[id], options).then(function () {
      box.setAttribute("data-rendered", "true");
    }).catch(function (err) {
      box.setAttribute("data-rendered", "error");
      box.textContent = "This chart could not be drawn: " + err;
      console.error("edgestats: chart " + id + " failed:", err);
    });
  });
})();
"""

STYLE = """
body { font: 15px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; margin: 0 auto; max-width: 1180px;
       padding: 1.5em; color: #1d1d1f; }
h1 { font-size: 1.6em; margin-bottom: .3em; } h2 { margin-top: 2.2em; border-bottom: 1px solid #ddd; }
dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: .2em 1em; }
dl.facts dt { color: #555; } dl.facts dd { margin: 0; }
table { border-collapse: collapse; margin: .8em 0; font-size: .92em; }
th, td { padding: .25em .7em; border-bottom: 1px solid #e4e4e4; text-align: left; vertical-align: top; }
th { background: #f6f6f6; } caption { text-align: left; font-weight: 600; padding: .3em 0; } .num { text-align: right; font-variant-numeric: tabular-nums; }
.table-wrap { overflow-x: auto; }
figure { margin: 1.2em 0; } figcaption { font-weight: 600; margin-bottom: .4em; }
.chart { min-height: 60px; overflow-x: auto; }
p.sentence { font-size: 1.05em; } p.note, footer { color: #666; font-size: .9em; }
nav ol { columns: 2; }
"""


def render_page(overview: Overview, sections: list[Section], *, generated_at: dt.datetime | None = None) -> str:
    generated_at = generated_at or dt.datetime.now(dt.timezone.utc)
    body = "\n".join(section_html(s) for s in sections)
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
{contents_html(sections)}
<main>
{body}
</main>
<footer>Written by edgestats {esc(__version__)} on {generated_at.strftime("%Y-%m-%d %H:%M UTC")}.
Intervals are confidence intervals at the level given in each table's header; n is the number of
observations behind each figure. This page makes no network requests.</footer>
<script type="application/json" id="edgestats-specs">{script_json(chart_specs(sections))}</script>
<script type="application/json" id="edgestats-embed-options">{script_json(EMBED_OPTIONS)}</script>
<script>{vega_bundle()}</script>
<script>{LOADER_JS}</script>
</body>
</html>
"""
