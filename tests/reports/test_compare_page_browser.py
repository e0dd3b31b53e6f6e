"""The page of `compare --out` in a real browser (Debian's Chromium, headless, offline, driven by
playwright): with one interval far beyond its panel and noisy runs, the chart draws with no
console message, the two arrowheads of the cut interval are drawn inside the plot beside the
estimates' dots, and the warning banner comes first; with every interval inside, no arrowhead is
drawn and the console stays empty too.

Needs /usr/bin/chromium (`make system-deps`) and playwright (the [dev] extra).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from compare_builders import make_db
from typer.testing import CliRunner

from edgestats.cli import app

pytestmark = [pytest.mark.browser, pytest.mark.xdist_group("browser")]
CHROMIUM = Path("/usr/bin/chromium")
BUSY = "other processes used 85 % of 4 CPUs (> 10 %)"
CONFIGS = {("pytorch", "cnn9"): 10.0, ("pytorch", "squeezenet"): 40.0}
# Each symbol mark of the chart (dots and arrowheads): its shape's path and where it sits in its plot.
SYMBOLS_JS = """() => Array.from(document.querySelectorAll('.chart svg g.mark-symbol.role-mark path'))
  .map(p => { const plot = p.closest('g.mark-group.cell').querySelector('path.background');
    const box = p.getBoundingClientRect(), frame = plot.getBoundingClientRect();
    return {d: p.getAttribute('d'), x: box.x + box.width / 2, width: box.width,
            left: frame.x, right: frame.x + frame.width}; })"""
RENDERED_JS = "Array.from(document.querySelectorAll('.chart')).every(e => e.dataset.rendered !== 'pending')"


def open_page(index: Path) -> dict:
    """Load the page offline at 1400 px; its console, chart states, visible symbols and headings."""
    from playwright.sync_api import sync_playwright

    assert CHROMIUM.exists(), f"{CHROMIUM} is missing: run `make system-deps` (apt-get install chromium)"
    seen: dict = {"console": []}
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), headless=True)
        try:
            context = browser.new_context(offline=True, viewport={"width": 1400, "height": 900})
            page = context.new_page()
            page.on("console", lambda msg: seen["console"].append(f"{msg.type}: {msg.text}"))
            page.on("pageerror", lambda exc: seen["console"].append(f"page error: {exc}"))
            page.goto(index.as_uri())
            page.wait_for_function(RENDERED_JS, timeout=60_000)
            seen["states"] = page.eval_on_selector_all(".chart", "els => els.map(e => e.dataset.rendered)")
            seen["symbols"] = [s for s in page.evaluate(SYMBOLS_JS) if s["width"] > 0]  # size 0: not drawn
            seen["headings"] = page.eval_on_selector_all("main h2", "els => els.map(e => e.textContent)")
        finally:
            browser.close()
    return seen


def compare_page(folder: Path, spreads: dict[str, float], noise: dict[str, str]) -> Path:
    before = make_db(folder / "a.duckdb", CONFIGS, n_runs=2, spreads=spreads, noise=noise)
    after = make_db(folder / "b.duckdb", CONFIGS, n_runs=2, spreads=spreads, noise=noise, seed=3)
    out = folder / "page"
    result = CliRunner().invoke(
        app, ["compare", str(before), str(after), "--out", str(out), "--format", "json"]
    )
    assert result.exit_code in (0, 1), result.output
    return out / "index.html"


def test_the_page_draws_arrowheads_where_an_interval_leaves_the_panel(tmp_path: Path) -> None:
    # squeezenet: 2 noisy runs a side, 2 log-SDs apart: an interval decades wide
    seen = open_page(compare_page(tmp_path, {"squeezenet": 2.0}, {"squeezenet": BUSY}))
    assert seen["console"] == []
    assert seen["states"] == ["true"] * len(seen["states"]) and seen["states"]
    # two dots (one per configuration) and the cut interval's two arrowheads, every one inside its plot
    symbols = seen["symbols"]
    assert len(symbols) == 4, symbols
    assert len({s["d"] for s in symbols}) == 3  # a dot, a left and a right triangle
    assert all(s["left"] - 1 <= s["x"] <= s["right"] + 1 for s in symbols), symbols
    assert seen["headings"][:2] == ["Warning: the result may be unstable", "Compare: B against A"]


def test_a_page_with_no_cut_interval_draws_no_arrowhead_and_logs_nothing(tmp_path: Path) -> None:
    """The arrowhead layers are empty of drawn marks here: Vega must not warn about them."""
    seen = open_page(compare_page(tmp_path, {}, {}))
    assert seen["console"] == []
    assert seen["states"] == ["true"] * len(seen["states"]) and seen["states"]
    assert len(seen["symbols"]) == 2, seen["symbols"]  # the two dots only
    assert "Warning: the result may be unstable" not in seen["headings"]
