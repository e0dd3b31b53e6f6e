"""One report section opened in the browser tests' headless Chromium: its charts' states and sizes,
its text and every console message, with a screenshot under test-artifacts/."""

from __future__ import annotations

from pathlib import Path

ARTIFACTS = Path(__file__).resolve().parents[1] / "test-artifacts"
READY_JS = "Array.from(document.querySelectorAll('.chart')).every(e => e.dataset.rendered !== 'pending')"
CHARTS_JS = """() => Array.from(document.querySelectorAll('#SECTION .chart')).map(e => ({id: e.id,
  state: e.dataset.rendered, drawn: !!e.querySelector('svg, canvas'),
  wide: e.querySelector('svg, canvas') ? e.querySelector('svg, canvas').getBoundingClientRect().width : 0,
  box: e.getBoundingClientRect().width}))"""


def open_section(browser, index: Path, section: str, width: int) -> tuple[list[dict], str, list[str]]:
    """(the section's charts: id, state, drawn, wide, box; its text; the console's messages) of the
    page at `index` at `width` px, once every chart has rendered."""
    console: list[str] = []
    page = browser.new_page(viewport={"width": width, "height": 900})
    page.on("console", lambda msg: console.append(f"{msg.type}: {msg.text}"))
    page.on("pageerror", lambda exc: console.append(f"page error: {exc}"))
    page.goto(index.as_uri())
    page.wait_for_function(READY_JS, timeout=60_000)
    page.wait_for_timeout(300)
    charts = page.evaluate(CHARTS_JS.replace("SECTION", section))
    text = page.locator(f"#{section}").inner_text()
    ARTIFACTS.mkdir(exist_ok=True)
    page.locator(f"#{section}").screenshot(path=str(ARTIFACTS / f"report-{section}-{width}.png"))
    page.close()
    return charts, text, console
