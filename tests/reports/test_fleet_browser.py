"""The report's fleet section in a real browser (Debian's Chromium, headless, through playwright):
a DB of a small fleet (tests/fleet_builders.py: class pi5 with one slow unit, class orin of
identical units), analysed by every analysis and written as the CLI writes it. Checked at 1400
and 390 px wide: the units chart and the components' interval chart draw (an SVG or canvas), none
is wider than its box at 390 px, the section says which unit was flagged, and the console stays
empty (no error, no warning, no message at all). Screenshots are kept under test-artifacts/.

Cost: about 10 s (the analyses, the report, one Chromium page at two widths).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from fleet_builders import make_fleet_db
from report_builders import write_db_report
from section_browser import open_section

from edgestats.analysis import run_analyses

pytestmark = [pytest.mark.browser, pytest.mark.xdist_group("browser")]


@pytest.fixture(scope="module")
def index(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("fleet-page")
    db = make_fleet_db(folder / "results.duckdb")
    files = write_db_report(db, folder / "report", run_analyses(db))
    assert files.chart_errors == []
    return files.index


@pytest.mark.parametrize("width", [1400, 390])
def test_fleet_section_draws_its_units_with_an_empty_console(browser, index, width):
    charts, text, console = open_section(browser, index, "fleet", width)
    # the units side by side, and the variance components in the report's interval chart
    assert [c["id"].rsplit("-", 1)[-1] for c in charts] == ["units", "components"], charts
    assert all(c["state"] == "true" and c["drawn"] for c in charts), charts
    if width == 390:
        assert [c["id"] for c in charts if c["wide"] > c["box"] + 1] == [], charts
    assert "pi5-03 ran 1.1" in text
    assert console == [], "\n".join(console)
