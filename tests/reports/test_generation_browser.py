"""The report's generation section in a real browser (Debian's Chromium, headless, through
playwright): a DB of generation runs of two runtimes at three context depths, with energy
(tests/generation_builders.py), analysed by every analysis and written as the CLI writes it.
Checked at 1400 and 390 px wide: every chart of the section draws (an SVG or canvas), its five
figures are there (rates, time to first token, inter-token quantiles, energy per token, the depth
fit), no chart is wider than its box at 390 px, and the console stays empty (no error, no warning,
no message at all). Screenshots are kept under test-artifacts/.

Cost: about 15 s (the analyses, the report, one Chromium page at two widths).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from generation_builders import depth_sweep, make_generation_db
from report_builders import write_db_report
from section_browser import open_section

from edgestats.analysis import run_analyses

pytestmark = [pytest.mark.browser, pytest.mark.xdist_group("browser")]


@pytest.fixture(scope="module")
def index(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("generation-page")
    db = folder / "results.duckdb"
    make_generation_db(db, depth_sweep(), runs_per_config=3, seed=2)
    files = write_db_report(db, folder / "report", run_analyses(db))
    assert files.chart_errors == []
    return files.index


@pytest.mark.parametrize("width", [1400, 390])
def test_generation_section_draws_every_chart_with_an_empty_console(browser, index, width):
    charts, _, console = open_section(browser, index, "generation", width)
    assert [c["id"].rsplit("-", 1)[-1] for c in charts] == ["rates", "ttft", "itl", "energy", "depth"]
    assert all(c["state"] == "true" and c["drawn"] for c in charts), charts
    if width == 390:
        assert [c["id"] for c in charts if c["wide"] > c["box"] + 1] == [], charts
    assert console == [], "\n".join(console)
