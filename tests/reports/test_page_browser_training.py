"""The page's filter reaches the training analyses' charts and tables (hyperparams, pipeline), in a
real browser: their rows carry device, framework, runtime and model like every other figure's.

DB: tests/training_builders.py (inference runs of cnn9 and squeezenet; training runs of mnist_cnn
and lenet5 on the same device, on runtime tensorflow or xla by iteration count), its report
written once and opened in Debian's Chromium through playwright at 1400 px. Checked:
- every data row of the training charts carries the four fields;
- filtering model = each of the four models leaves no chart data row and no shown table row of
  another: an inference model hides every training chart, a training model keeps its own rows
  only (the other training model's are gone);
- a row pooled over runtimes ("tensorflow, xla") is offered as its members in the drop-down, not as
  the joined text, and is hidden when one runtime is chosen (the means at 1000 iterations, all xla
  runs, stay);
- no console message.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from training_builders import INFERENCE_MODELS, TRAINING_MODELS, TRAINING_RUNTIMES, make_training_models_db

from edgestats.analysis import run_analyses
from edgestats.analysis.load.environment import load_environment
from edgestats.analysis.load.overview import load_overview
from edgestats.analysis.load.power_trace import load_power_trace
from edgestats.reports import write_report

pytestmark = [pytest.mark.browser, pytest.mark.xdist_group("browser")]
MODELS = (*INFERENCE_MODELS, *TRAINING_MODELS)
FIELDS = ("device", "framework", "runtime", "model")
TRAINING_CHARTS = ("chart-hyperparams-", "chart-pipeline-")

READY_JS = "Array.from(document.querySelectorAll('.chart')).every(e => e.dataset.rendered !== 'pending')"
# Every data row of every chart's Vega view, and whether the chart's figure is shown.
VIEWS_JS = """() => Object.fromEntries(Object.entries(window.edgestatsViews).map(([id, e]) =>
  [id, {shown: !document.getElementById(id).closest('[hidden]'),
        rows: e.datasets.flatMap(d => e.view.data(d).map(r => Object.fromEntries(Object.entries(r))))}]))"""
# The training sections' table rows shown (not hidden by the filter), with their model.
TRAINING_ROWS_JS = """() => ['hyperparams', 'pipeline'].flatMap(id => {
  const section = document.getElementById(id);
  if (!section) throw new Error('no section #' + id);
  return Array.from(section.querySelectorAll('tbody tr')).filter(r => !r.closest('[hidden]'))
    .map(r => ({model: r.dataset.fModel, runtime: r.dataset.fRuntime, text: r.textContent}));
})"""
OPTIONS_JS = "k => Array.from(document.querySelectorAll('#filter-' + k + ' option')).map(o => o.value)"


def training(charts: dict) -> dict:
    return {cid: chart for cid, chart in charts.items() if cid.startswith(TRAINING_CHARTS)}


@pytest.fixture(scope="module")
def index(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("training-page")
    db = make_training_models_db(folder / "results.duckdb")
    files = write_report(
        folder / "report",
        run_analyses(db),
        load_overview(db),
        load_power_trace(db),
        environment=load_environment(db),
    )
    assert files.chart_errors == []
    return files.index


def open_page(browser, index: Path, console: list[str]):
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    page.on("console", lambda msg: console.append(f"{msg.type}: {msg.text}"))
    page.on("pageerror", lambda exc: console.append(f"page error: {exc}"))
    page.goto(index.as_uri())
    page.wait_for_function(READY_JS, timeout=60_000)
    page.wait_for_timeout(300)
    return page


def choose(page, key: str, value: str) -> tuple[dict, list[dict]]:
    page.select_option(f"#filter-{key}", value)
    page.wait_for_timeout(500)
    return page.evaluate(VIEWS_JS), page.evaluate(TRAINING_ROWS_JS)


def test_every_training_chart_row_carries_the_filter_fields(index, browser, console):
    page = open_page(browser, index, console)
    charts, rows = training(page.evaluate(VIEWS_JS)), page.evaluate(TRAINING_ROWS_JS)
    page.close()
    assert len(charts) >= 6, f"training charts drawn: {sorted(charts)}"
    lacking = {cid: r for cid, c in charts.items() for r in c["rows"] if not all(f in r for f in FIELDS)}
    assert not lacking, f"training chart rows without a filter field: {lacking}"
    assert {r["model"] for c in charts.values() for r in c["rows"]} == set(TRAINING_MODELS)
    assert rows and all(r["model"] in TRAINING_MODELS for r in rows), "every training table row has its model"


@pytest.mark.parametrize("model", MODELS)
def test_a_model_filter_leaves_no_training_mark_or_row_of_another(index, browser, console, model):
    page = open_page(browser, index, console)
    charts, rows = choose(page, "model", model)
    page.close()
    others = [m for m in MODELS if m != model]
    left = {
        cid: r for cid, c in charts.items() if c["shown"] for r in c["rows"] if r.get("model", model) != model
    }
    assert not left, f"chart data of another model after filtering {model}: {left}"
    drawn = {cid: c["rows"] for cid, c in training(charts).items() if c["shown"]}
    if model in INFERENCE_MODELS:
        assert drawn == {} and rows == [], (
            f"training charts or rows left under model {model}: {sorted(drawn)}"
        )
        return
    assert len(drawn) >= 6 and all(r["model"] == model for rs in drawn.values() for r in rs)
    assert rows and all(r["model"] == model for r in rows)
    assert not [r["text"] for r in rows if any(o in r["text"] for o in others)]


def test_a_row_pooled_over_runtimes_is_offered_by_member_and_hidden_by_either(index, browser, console):
    page = open_page(browser, index, console)
    options = page.evaluate(OPTIONS_JS, "runtime")
    pooled = [r for c in training(page.evaluate(VIEWS_JS)).values() for r in c["rows"] if "," in r["runtime"]]
    charts, rows = choose(page, "runtime", "xla")
    page.close()
    assert pooled, "the DB should give figure rows pooled over both training runtimes"
    assert set(TRAINING_RUNTIMES) <= set(options) and not [o for o in options if "," in o]
    left = {
        cid: r
        for cid, c in charts.items()
        if c["shown"]
        for r in c["rows"]
        if r.get("runtime", "xla") != "xla"
    }
    assert not left, f"chart data of another or several runtimes after filtering xla: {left}"
    means = charts["chart-hyperparams-vs-iterations"]
    assert means["shown"] and means["rows"] and {r["iterations"] for r in means["rows"]} == {1000}
    assert all(r["runtime"] == "xla" for r in rows)


def test_no_console_message(index, browser, console):
    """Last: every page opened above wrote into `console`."""
    open_page(browser, index, console).close()
    assert console == [], "\n".join(console)
