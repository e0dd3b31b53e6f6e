"""The report page in a real browser, as a reader uses it: the answers first, a filter that
filters every chart and table and the header's counts, and a page that fits a phone.

One DB (two devices, three inference runtimes, two inference models, 4 runs each, plus training
runs of a third model), its report written once with its environment, then opened in Debian's
Chromium through playwright at 390, 800, 1400 and 1920 px wide. Checked:
- at 1400 × 900 the first screen holds every answer (each group's row ends above 900 px), and
  the answers come before "At a glance" and before any chart;
- filtering model = one of the two inference models leaves no chart data row (read from the
  Vega views) and no visible table row or answer of another model, and the header's counts of
  configurations, runs and devices equal those counted from the DB by SQL;
- at 390 px the document is no wider than the viewport outside the tables' and charts' own
  scroll boxes, and every chart fits its box (drawn again narrower, not scrolled);
- the contents list's items never overlap, at each width;
- no console message at all, at any width.
Screenshots at 390 and 1400 px are kept under test-artifacts/.
"""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest
from report_builders import make_report_db

from edgestats.analysis import run_analyses
from edgestats.analysis.load.environment import load_environment
from edgestats.analysis.load.overview import load_overview
from edgestats.analysis.load.power_trace import load_power_trace
from edgestats.reports import write_report

pytestmark = [pytest.mark.browser, pytest.mark.xdist_group("browser")]
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"
WIDTHS = (390, 800, 1400, 1920)
SCREEN_HEIGHT = 900
MODELS = ("cnn9", "squeezenet")  # the inference models of make_report_db; training adds mnist_cnn
ALL_MODELS = (*MODELS, "mnist_cnn")

READY_JS = "Array.from(document.querySelectorAll('.chart')).every(e => e.dataset.rendered !== 'pending')"
# Every data row of every shown chart's Vega view: {chart id: [rows]} (Vega's own fields left out);
# a chart the filter leaves with no rows is hidden as drawn, so its view is not read.
VIEW_ROWS_JS = """() => Object.fromEntries(Object.entries(window.edgestatsViews)
  .filter(([id]) => !document.getElementById(id).closest('[hidden]')).map(([id, e]) =>
  [id, e.datasets.flatMap(d => e.view.data(d).map(r => Object.fromEntries(Object.entries(r))))]))"""
# Elements shown (not hidden by the filter, not inside a hidden or closed ancestor) that carry a model.
SHOWN_MODELS_JS = """() => Array.from(document.querySelectorAll('[data-f-model]'))
  .filter(e => !e.closest('[hidden]')).map(e => ({model: e.dataset.fModel, text: e.textContent}))"""
COUNTS_JS = """() => ['count-configs', 'count-runs', 'count-devices']
  .map(id => Number(document.getElementById(id).textContent.replace(/,/g, '')))"""
# Elements whose right edge passes the viewport, outside a box that scrolls sideways on its own.
OUTSIDE_JS = """() => { const w = document.documentElement.clientWidth;
  const scrolls = e => ['auto', 'scroll'].includes(getComputedStyle(e).overflowX);
  return Array.from(document.querySelectorAll('body *')).filter(e => {
    const r = e.getBoundingClientRect(); if (r.width === 0 || r.right <= w + 1) return false;
    for (let p = e.parentElement; p; p = p.parentElement) if (scrolls(p)) return false;
    return true; }).slice(0, 10).map(e => e.tagName + '#' + e.id + '.' + e.className + ' ' +
      Math.round(e.getBoundingClientRect().right)); }"""
CHART_FIT_JS = """() => { document.querySelectorAll('details.table').forEach(d => d.open = true);
  return Array.from(document.querySelectorAll('.chart')).map(e => {
  const s = e.querySelector('svg'); return [e.id, s ? s.getBoundingClientRect().width : 0, e.clientWidth]; })
  .filter(([, drawn, room]) => drawn > room + 1); }"""
# Pairs of contents items whose boxes intersect, and items whose text spills out of their box.
NAV_JS = """() => { const items = Array.from(document.querySelectorAll('nav li')),
    boxes = items.map(li => li.getBoundingClientRect()), out = [];
  boxes.forEach((a, i) => boxes.slice(i + 1).forEach((b, j) => { if (a.left < b.right - 0.5 &&
    b.left < a.right - 0.5 && a.top < b.bottom - 0.5 && b.top < a.bottom - 0.5)
    out.push([items[i].textContent, items[i + 1 + j].textContent]); }));
  items.forEach(li => { const a = li.querySelector('a').getBoundingClientRect();
    const r = li.getBoundingClientRect();
    if (a.right > r.right + 0.5 || a.bottom > r.bottom + 0.5) out.push([li.textContent, 'spills']); });
  return {n: items.length, out}; }"""
FIRST_SCREEN_JS = """() => ({
  rows: Array.from(document.querySelectorAll('table.answers tbody tr'))
    .map(r => [r.cells[0].textContent, r.getBoundingClientRect().bottom]),
  answers: document.getElementById('answers').getBoundingClientRect().top,
  glance: document.getElementById('glance').getBoundingClientRect().top,
  firstChart: Math.min(...Array.from(document.querySelectorAll('.chart'))
    .map(e => e.getBoundingClientRect().top))})"""


def build_db(path: Path) -> Path:
    """make_report_db's two devices, with the facts and versions a collect records."""
    make_report_db(path, device_names=("jetson-nano", "pi5"), with_power=False)
    with duckdb.connect(str(path)) as con:
        con.execute(
            "UPDATE devices SET cpu_model = 'Cortex-A76', mem_total_bytes = 8 * 1024 ^ 3, "
            "os = 'Debian GNU/Linux 12', kernel = '6.6.31+rpt-rpi-2712' WHERE name = 'pi5'"
        )
        con.execute(
            "UPDATE devices SET cpu_model = 'Cortex-A57', gpu = 'Maxwell 128', os = 'Ubuntu 18.04', "
            "kernel = '4.9.253-tegra' WHERE name = 'jetson-nano'"
        )
        con.execute(
            "UPDATE runs SET framework_version = CASE framework WHEN 'pytorch' THEN '2.5.1' "
            "WHEN 'onnxruntime' THEN '1.20.1' WHEN 'tflite' THEN '2.18.0' ELSE '2.18.0' END"
        )
    return path


def expected_counts(db: Path, model: str) -> list[int]:
    """Configurations, runs and devices of `model`, counted by SQL (the header's definition)."""
    with duckdb.connect(str(db), read_only=True) as con:
        return list(
            con.execute(
                "SELECT count(DISTINCT (r.kind, d.name, r.framework, r.runtime, r.model, r.batch_size, "
                "r.threads, r.precision)), count(*), count(DISTINCT d.name) "
                "FROM runs r JOIN devices d USING (device_id) WHERE r.model = ?",
                [model],
            ).fetchone()
        )


@pytest.fixture(scope="module")
def report(tmp_path_factory) -> tuple[Path, Path, dict]:
    folder = tmp_path_factory.mktemp("page")
    db = build_db(folder / "results.duckdb")
    results = run_analyses(db)
    files = write_report(
        folder / "report",
        results,
        load_overview(db),
        load_power_trace(db),
        environment=load_environment(db),
    )
    assert files.chart_errors == []
    return db, files.index, results


def open_page(browser, index: Path, width: int, console: list[str]):
    page = browser.new_page(viewport={"width": width, "height": SCREEN_HEIGHT})
    page.on("console", lambda msg: console.append(f"{width} px {msg.type}: {msg.text}"))
    page.on("pageerror", lambda exc: console.append(f"{width} px page error: {exc}"))
    page.goto(index.as_uri())
    page.wait_for_function(READY_JS, timeout=60_000)
    page.wait_for_timeout(300)
    return page


def test_answers_fill_the_first_screen_before_any_chart(report, browser, console):
    _, index, results = report
    page = open_page(browser, index, 1400, console)
    seen = page.evaluate(FIRST_SCREEN_JS)
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "page-1400.png"))
    page.close()
    groups = {e["group_text"] for e in results["answers"].entries}
    assert len(seen["rows"]) == len(groups) >= 4, "one row per group, within and across devices"
    assert {text for text, _ in seen["rows"]} == groups
    late = [text for text, bottom in seen["rows"] if bottom > SCREEN_HEIGHT]
    assert not late, f"answers below the first 1400 x 900 screen: {late}"
    assert seen["answers"] < seen["glance"] and seen["answers"] < seen["firstChart"]


@pytest.mark.parametrize("model", MODELS)
def test_a_model_filter_leaves_no_mark_row_or_count_of_another(report, browser, console, model):
    db, index, _ = report
    page = open_page(browser, index, 1400, console)
    before = page.evaluate(VIEW_ROWS_JS)
    page.select_option("#filter-model", model)
    page.wait_for_timeout(500)
    after, shown, counts = (
        page.evaluate(VIEW_ROWS_JS),
        page.evaluate(SHOWN_MODELS_JS),
        page.evaluate(COUNTS_JS),
    )
    page.close()
    others = [m for m in ALL_MODELS if m != model]
    with_model = [cid for cid, rows in before.items() if any(r.get("model") in MODELS for r in rows)]
    assert len(with_model) >= 6, f"the charts' data rows carry the model: only {with_model}"
    left = {
        cid: row
        for cid, rows in after.items()
        for row in rows
        if row.get("model", model) != model or any(o in str(row) for o in others)
    }
    assert not left, f"chart data of another model after filtering {model}: {left}"
    assert sum(map(len, after.values())) < sum(map(len, before.values()))
    assert shown and all(s["model"] == model for s in shown), "only rows and answers of the model"
    assert not [s["text"] for s in shown if any(o in s["text"] for o in others)]
    assert counts == expected_counts(db, model), "the header counts what the filter shows"


@pytest.mark.parametrize("width", WIDTHS)
def test_the_page_fits_the_width_and_its_contents_never_overlap(report, browser, console, width):
    _, index, _ = report
    page = open_page(browser, index, width, console)
    nav = page.evaluate(NAV_JS)
    scroll_width = page.evaluate("document.documentElement.scrollWidth")
    outside, unfit = page.evaluate(OUTSIDE_JS), page.evaluate(CHART_FIT_JS)
    if width in (390, 1400):
        page.screenshot(path=str(ARTIFACTS / f"page-{width}-full.png"), full_page=True)
    page.close()
    assert nav["n"] >= 8 and nav["out"] == [], f"{width} px: contents items overlap: {nav['out']}"
    assert scroll_width <= width, f"{width} px: the page is {scroll_width} px wide"
    assert outside == [], f"{width} px: wider than the viewport outside a scroll box: {outside}"
    assert unfit == [], f"{width} px: charts wider than their box: {unfit}"


def test_no_console_message_at_any_width(report, browser, console):
    """Last: every page opened above wrote into `console`; one more at each width, resized too."""
    _, index, _ = report
    for width in WIDTHS:
        open_page(browser, index, width, console).close()
    page = open_page(browser, index, 1400, console)
    page.set_viewport_size({"width": 390, "height": SCREEN_HEIGHT})
    page.wait_for_timeout(1500)
    page.wait_for_function(READY_JS, timeout=60_000)
    unfit = page.evaluate(CHART_FIT_JS)
    page.close()
    assert unfit == [], f"after resizing to 390 px, charts wider than their box: {unfit}"
    assert console == [], "\n".join(console)
