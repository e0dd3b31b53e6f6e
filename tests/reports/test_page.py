"""The report folder: `edgestats analyze DB --out DIR` with images and tables, and the page's
safety: DB strings escaped in HTML and in the <script> JSON, nothing loaded from elsewhere."""

from __future__ import annotations

import json
import re

from report_builders import EVIL_DEVICE, make_report_db, write_db_report
from typer.testing import CliRunner

from edgestats.cli import app
from edgestats.reports.page import CONTENT_SECURITY_POLICY, script_json

runner = CliRunner()


def test_script_json_cannot_end_the_script_block():
    text = script_json({"name": "</script><script>alert(1)</script><!--", "line": "a\u2028b", "x": float("nan")})
    assert "<" not in text and ">" not in text and "\u2028" not in text
    assert json.loads(text) == {"name": "</script><script>alert(1)</script><!--", "line": "a\u2028b", "x": None}


def test_analyze_out_writes_the_report_images_and_tables(tmp_path):
    db = make_report_db(tmp_path / "r.duckdb")
    out = tmp_path / "report"
    result = runner.invoke(app, ["analyze", str(db), "--out", str(out), "--png", "--svg", "--tables", "markdown", "--json"])
    assert result.exit_code == 0, result.output
    html = (out / "index.html").read_text()
    assert json.loads((out / "analysis.json").read_text()) == json.loads(result.stdout), "analysis.json is the --json document"
    pngs, svgs = sorted((out / "images").glob("*.png")), sorted((out / "images").glob("*.svg"))
    assert len(pngs) == len(svgs) >= 12 and all(p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" for p in pngs)
    assert "summary-latency.png" in {p.name for p in pngs} and "power-trace.png" in {p.name for p in pngs}
    summary = (out / "tables" / "summary-metrics.md").read_text()
    assert "[95 % CI]" in summary and re.search(r"\d \[\d[\d.,]* ?, \d", summary)
    # escaped in the header's HTML, and as \u003c in the chart data; never raw
    assert html.count(EVIL_DEVICE) == 0
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "\\u003cscript\\u003ealert(1)" in html
    assert f'content="{CONTENT_SECURITY_POLICY.replace(chr(39), "&#x27;")}"' in html
    markup = re.sub(r"<script([^>]*)>.*?</script>", r"<script\1></script>", html, flags=re.S)  # the page, not the JS
    assert not re.search(r'<(script|link|img|iframe)[^>]+(src|href)=', markup), "nothing is loaded from elsewhere"
    assert markup.count("<script") == 4
    assert len(html) < 3_000_000


def test_report_options_need_out(tmp_path):
    db = make_report_db(tmp_path / "r.duckdb", with_power=False)
    result = runner.invoke(app, ["analyze", str(db), "--png"])
    assert result.exit_code == 2 and "--out" in result.output
    result = runner.invoke(app, ["analyze", str(db), "--out", str(tmp_path / "o"), "--tables", "xlsx"])
    assert result.exit_code == 2 and "latex, markdown or csv" in result.output


def test_report_of_one_run_and_no_power(tmp_path):
    """A DB with a single inference run still gives a page: sections say what cannot be shown."""
    from edgestats.analysis import run_analyses

    db = make_report_db(tmp_path / "one.duckdb", n_inference_runs=1, device_names=("pi",), with_power=False)
    files = write_db_report(db, tmp_path / "out", run_analyses(db))
    html = files.index.read_text()
    assert files.chart_errors == []
    assert "No run in this DB has power samples" in html
    assert 'id="chart-summary-latency"' in html
