"""The report in a real browser: Debian's Chromium, headless, driven by playwright, with every
network request refused. Every chart must draw, nothing may reach the network or the console's
error channel, and a device named like a script must show as text.

Needs /usr/bin/chromium (`make system-deps` installs it) and playwright (the [dev] extra); its
own browser download is never used. The screenshot is kept under test-artifacts/.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from report_builders import EVIL_DEVICE, make_report_db, write_db_report

from edgestats.analysis import run_analyses

pytestmark = pytest.mark.browser
CHROMIUM = Path("/usr/bin/chromium")
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"
LOCAL_SCHEMES = ("file:", "data:", "blob:", "about:")


def open_in_browser(index: Path, screenshot: Path) -> dict:
    """Load the page offline and report what happened in it."""
    from playwright.sync_api import sync_playwright

    assert CHROMIUM.exists(), f"{CHROMIUM} is missing: run `make system-deps` (apt-get install chromium)"
    seen = {"requests": [], "blocked": [], "console_errors": [], "page_errors": [], "dialogs": []}
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), headless=True)
        try:
            context = browser.new_context(offline=True, viewport={"width": 1280, "height": 900})

            def route(r):
                if r.request.url.startswith(LOCAL_SCHEMES):
                    r.continue_()
                else:
                    seen["blocked"].append(r.request.url)
                    r.abort()

            context.route("**/*", route)
            page = context.new_page()
            page.on("request", lambda req: seen["requests"].append(req.url))
            page.on("console", lambda msg: msg.type == "error" and seen["console_errors"].append(msg.text))
            page.on("pageerror", lambda exc: seen["page_errors"].append(str(exc)))
            page.on("dialog", lambda dialog: (seen["dialogs"].append(dialog.message), dialog.dismiss()))
            page.goto(index.as_uri())
            page.wait_for_function(
                "Array.from(document.querySelectorAll('.chart')).every(e => e.dataset.rendered !== 'pending')",
                timeout=60_000)
            seen["charts"] = page.eval_on_selector_all(
                ".chart", "els => els.map(e => ({id: e.id, state: e.dataset.rendered, drawn: !!e.querySelector('svg, canvas')}))")
            seen["device_cells"] = page.eval_on_selector_all("table.devices td:first-child", "els => els.map(e => e.textContent)")
            seen["script_count"] = page.eval_on_selector_all("script", "els => els.length")
            screenshot.parent.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(screenshot), full_page=True)
        finally:
            browser.close()
    return seen


def test_report_renders_offline_in_chromium(tmp_path):
    db = make_report_db(tmp_path / "results.duckdb")
    files = write_db_report(db, tmp_path / "report", run_analyses(db))
    assert files.chart_errors == []
    screenshot = ARTIFACTS / "report.png"
    seen = open_in_browser(files.index, screenshot)
    print(f"screenshot: {screenshot}")

    assert len(seen["charts"]) >= 12, "one chart or more per analysis, plus the power trace"
    not_drawn = [c["id"] for c in seen["charts"] if c["state"] != "true" or not c["drawn"]]
    assert not not_drawn, f"charts without an SVG/canvas: {not_drawn}"
    assert seen["console_errors"] == [] and seen["page_errors"] == []
    assert seen["blocked"] == [], f"the page tried the network: {seen['blocked']}"
    assert all(url.startswith(LOCAL_SCHEMES) for url in seen["requests"]), seen["requests"]
    assert seen["dialogs"] == [], "a DB string ran as script"
    assert EVIL_DEVICE in seen["device_cells"], "the device name shows as text"
    assert seen["script_count"] == 4, "only the report's own scripts: specs, options, Vega bundle, loader"
    assert screenshot.stat().st_size > 10_000
