"""The report folder: `edgestats analyze DB --out DIR` with images and tables, and the page's
safety: DB strings escaped in HTML and in the <script> JSON, nothing loaded from elsewhere."""

from __future__ import annotations

import html
import json
import re
import urllib.parse
from types import SimpleNamespace

import polars as pl
import pytest
from report_builders import EVIL_DEVICE, make_report_db, write_db_report
from typer.testing import CliRunner

from edgestats.analysis.estimators.tails import CONFIGURATION_TAILS, TYPICAL_RUN_TAILS
from edgestats.cli import app
from edgestats.reports.headline import headline_table
from edgestats.reports.page import CONTENT_SECURITY_POLICY, script_json
from edgestats.reports.page_tables import METRIC_ORDER, Footnotes, csv_link, page_table, pivot_names
from edgestats.reports.tables import to_csv
from edgestats.reports.units import label_of, number_cell

runner = CliRunner()


def test_script_json_cannot_end_the_script_block():
    text = script_json(
        {"name": "</script><script>alert(1)</script><!--", "line": "a\u2028b", "x": float("nan")}
    )
    assert "<" not in text and ">" not in text and "\u2028" not in text
    assert json.loads(text) == {
        "name": "</script><script>alert(1)</script><!--",
        "line": "a\u2028b",
        "x": None,
    }


@pytest.mark.slow
def test_analyze_out_writes_the_report_images_and_tables(tmp_path):
    db = make_report_db(tmp_path / "r.duckdb")
    out = tmp_path / "report"
    result = runner.invoke(
        app, ["analyze", str(db), "--out", str(out), "--png", "--svg", "--tables", "markdown", "--json"]
    )
    assert result.exit_code == 0, result.output
    html = (out / "index.html").read_text()
    assert json.loads((out / "analysis.json").read_text()) == json.loads(result.stdout), (
        "analysis.json is the --json document"
    )
    pngs, svgs = sorted((out / "images").glob("*.png")), sorted((out / "images").glob("*.svg"))
    assert len(pngs) == len(svgs) >= 12 and all(p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" for p in pngs)
    assert "summary-latency.png" in {p.name for p in pngs} and "power-trace.png" in {p.name for p in pngs}
    summary = (out / "tables" / "summary.md").read_text()
    assert "95 % confidence interval" in summary and re.search(r"\d \[\d[\d.,]* ?, \d", summary)
    # escaped in the header's HTML, and as \u003c in the chart data; never raw
    assert html.count(EVIL_DEVICE) == 0
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "\\u003cscript\\u003ealert(1)" in html
    assert f'content="{CONTENT_SECURITY_POLICY.replace(chr(39), "&#x27;")}"' in html
    markup = re.sub(
        r"<script([^>]*)>.*?</script>", r"<script\1></script>", html, flags=re.S
    )  # the page, not the JS
    assert not re.search(r"<(script|link|img|iframe)[^>]+(src|href)=", markup), (
        "nothing is loaded from elsewhere"
    )
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


# -- the page's tables: wide, with units, footnotes, CSV --------------------------------------------

NOTE = "not enough data: 1 runs (an interval needs at least 2)"


def metrics_frame() -> pl.DataFrame:
    """Two configurations x three metrics, long, as the summary analysis writes them."""
    rows = []
    for model, scale, n_runs in (("cnn9", 1.0, 3), ("squeezenet", 8.0, 1)):
        for metric, value in (
            ("latency_median_ms", 12.345),
            ("rss_peak_bytes", 77_873_152.0),
            ("energy_per_inference_j", None),
        ):
            interval = n_runs > 1 and value is not None
            rows.append(
                {
                    "device": "pi",
                    "framework": "onnxruntime",
                    "model": model,
                    "batch_size": 1,
                    "metric": metric,
                    "n_runs": n_runs,
                    "estimate": None if value is None else value * scale,
                    "ci_low": value * scale * 0.9 if interval else None,
                    "ci_high": value * scale * 1.1 if interval else None,
                    "level": 0.95,
                    "n": n_runs,
                    "n_unit": "runs",
                    "method": "t",
                    "note": "no power source" if value is None else (None if interval else NOTE),
                }
            )
    return pl.DataFrame(rows)


def visible_text(markup: str) -> str:
    return html.unescape(re.sub(r"<[^>]+>", " ", markup))


def test_units_and_labels_come_from_the_names():
    assert label_of("latency_median_ms") == "median latency (ms)"
    assert label_of("rss_peak_bytes") == "peak memory (MiB)"
    assert label_of("energy_per_inference_j") == "energy / inference (J)"
    assert label_of("fetch_stall_s") == "fetch stall (s)" and label_of("model") == "model"
    assert label_of("latency_p90_typical_run_ms") == "p90 of the typical run (ms)"
    assert label_of("latency_p99_typical_run_ms") == "p99 of the typical run (ms)"
    assert number_cell(77_873_152, "rss_peak_bytes") == "74.3", "memory in MiB, never raw bytes"


def test_the_typical_run_tails_follow_their_counterparts_in_the_csv_not_in_the_wide_table():
    """The wide summary table keeps the configuration's tails; the typical run's, a narrower
    question, stay in its CSV (and analysis.json), each after its across-processes counterpart."""
    names = [*TYPICAL_RUN_TAILS, "latency_mean_ms", *CONFIGURATION_TAILS, "latency_median_ms"]
    assert pivot_names(pl.DataFrame({"metric": names}), "metric") == [
        "latency_median_ms",
        "latency_p90_ms",
        "latency_p99_ms",
        "latency_mean_ms",
    ]
    assert [n for n in METRIC_ORDER if n.startswith("latency_p")] == [
        "latency_p90_ms",
        "latency_p90_typical_run_ms",
        "latency_p99_ms",
        "latency_p99_typical_run_ms",
    ]
    assert number_cell(1234.5, "latency_p99_ms") == "1,234"


def test_a_long_frame_is_pivoted_wide_with_intervals_inline():
    notes = Footnotes()
    table = page_table("summary-metrics", "summary: metrics", metrics_frame(), notes)
    assert table.columns == ["model", "runs", "median latency (ms)", "peak memory (MiB)"]
    assert len(table.rows) == 2, "one row per configuration, not per metric"
    assert "device pi" in table.common and "batch 1" in table.common, "one value in every row: said once"
    cnn9 = [visible_text(c.html).split() for c in table.rows[0]]
    assert cnn9[2] == ["12.3", "[11.1,", "13.6]"] and cnn9[3][0] == "74.3"
    assert table.absent and "energy / inference (J)" in table.absent[0], "a metric no row has gets no column"
    assert list(notes.numbers) == ["no power source", NOTE], "each distinct note once, numbered"
    assert 'href="#note-2"' in table.rows[1][2].html


def test_a_frame_that_pivoting_would_not_shorten_stays_long():
    frame = pl.DataFrame(
        {
            "metric": ["latency_median_ms", "rss_peak_bytes"],
            "best": ["a", "b"],
            "runner_up": ["b", "a"],
            "estimate": [2.0, 2 * 1024 * 1024.0],
            "ci_low": [1.0, 1024 * 1024.0],
            "ci_high": [3.0, 3 * 1024 * 1024.0],
            "level": [0.95, 0.95],
            "p_value": [0.01, 0.2],
        }
    )
    table = page_table("tradeoff-winners", "winners", frame, Footnotes())
    assert len(table.rows) == 2 and "estimate" in table.columns
    assert visible_text(table.rows[1][3].html).split() == ["2.00", "[1.00,", "3.00]"], (
        "the row's metric gives the unit: MiB"
    )
    assert visible_text(table.rows[1][0].html).strip() == "peak memory (MiB)"


def test_each_table_carries_its_csv_offline():
    frame = metrics_frame()
    table = page_table("summary-metrics", "summary: metrics", frame, Footnotes())
    link = csv_link(table)
    href = re.search(r'href="([^"]+)"', link).group(1)
    assert href.startswith("data:text/csv;charset=utf-8,") and 'download="summary-metrics.csv"' in link
    assert urllib.parse.unquote(href.split(",", 1)[1]) == to_csv(frame), (
        "the numbers as the analysis wrote them"
    )


def test_headline_table_one_row_per_configuration():
    distribution = pl.DataFrame(
        {
            "device": ["pi", "pi"],
            "framework": ["onnxruntime"] * 2,
            "model": ["cnn9", "squeezenet"],
            "batch_size": [1, 1],
            "n_runs": [3, 1],
            "n": [90, 1],
            "n_unit": ["latencies", "runs"],
            "note": [None, "imported: one figure per run"],
        }
    )
    notes = Footnotes()
    table = headline_table(
        SimpleNamespace(frames={"metrics": metrics_frame(), "distribution": distribution}), notes
    )
    assert table.columns == ["model", "median latency (ms)", "peak memory (MiB)", "runs × latencies"]
    assert [visible_text(c.html).split()[0] for c in table.rows[0]] == ["cnn9", "12.3", "74.3", "3"]
    assert visible_text(table.rows[0][-1].html).strip() == "3 × 30"
    assert "runs × latencies" in table.columns and "1 × –" in visible_text(table.rows[1][-1].html)
    assert "p99 latency (ms)" not in table.columns and "throughput (/s)" not in table.columns, (
        "not in the frame: no column"
    )
    assert headline_table(SimpleNamespace(frames={}), notes) is None


@pytest.mark.slow
def test_report_page_headline_first_tables_folded_notes_once(tmp_path):
    db = make_report_db(tmp_path / "one.duckdb", n_inference_runs=6, device_names=("pi",), with_power=False)
    from edgestats.analysis import run_analyses

    page = write_db_report(db, tmp_path / "out", run_analyses(db)).index.read_text()
    assert page.index('id="glance"') < page.index('id="summary"'), (
        "the headline table and main charts come first"
    )
    assert page.index('id="chart-summary-latency"') < page.index('id="summary"')
    assert 'id="table-headline"' in page and "runs × latencies" in page
    assert page.count("<details class=table>") >= 8, "every analysis table folded"
    text = visible_text(
        re.sub(r"<script.*?</script>|<figcaption>.*?</figcaption>", "", page, flags=re.S)
    )  # captions: the charts' own
    notes = re.findall(r'<li id="note-\d+">(.*?)</li>', page)
    assert len(notes) == len(set(notes)) and all(text.count(html.unescape(n)) == 1 for n in notes), (
        "each distinct note is printed once, as a numbered footnote"
    )


def test_missing_dates_blame_imports_only_when_every_run_was_imported():
    from edgestats.analysis.load.overview import Overview
    from edgestats.reports.page import header_html

    def dates_of(sources: dict[str, int]) -> str:
        overview = Overview("r.duckdb", [], {("inference", "ok"): 3}, None, None, [], sources)
        return re.search(r"<dt>dates</dt><dd>([^<]*)</dd>", header_html(overview)).group(1)

    assert dates_of({"import:bench.csv": 3}) == "not recorded (imported results carry no dates)"
    assert dates_of({"collect": 2, "import:bench.csv": 1}) == "not recorded"
