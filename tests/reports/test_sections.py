"""Sections come from the analysis registry, and the report draws only what it is handed.

Adding an analysis is its module, one registry line and its section module: a fake entry added
to the registry here is run by analyse_data, accepted by --only, and drawn by the report with
its own title, sentence and chart (and the generic interval chart for a frame it does not draw).
"""

from __future__ import annotations

import sys
import types

import altair as alt
import polars as pl
import pytest
from analysis_builders import latencies_frame, runs_frame

from edgestats.analysis import AnalysisData, AnalysisOptions, analyse_data
from edgestats.analysis.core.result import AnalysisResult
from edgestats.analysis.load.overview import DeviceFacts, Overview
from edgestats.registry import analyses as registry
from edgestats.reports import write_report
from edgestats.reports.report import figures_for

PLUGIN = "edgestats_test_runcount_plugin"


def fake_plugin() -> types.ModuleType:
    """An analysis (runs per framework, with an interval-less count and a frame with intervals)
    and its section, in one module: what a contributor would write in two."""
    module = types.ModuleType(PLUGIN)

    def analyse(data: AnalysisData, options: AnalysisOptions) -> AnalysisResult:
        counts = data.runs.group_by("framework", maintain_order=True).agg(pl.len().alias("n_runs"))
        spread = counts.select(
            "framework",
            pl.col("n_runs").cast(pl.Float64).alias("estimate"),
            (pl.col("n_runs") - 0.5).cast(pl.Float64).alias("ci_low"),
            (pl.col("n_runs") + 0.5).cast(pl.Float64).alias("ci_high"),
            pl.lit(options.level).alias("level"),
            pl.col("n_runs").alias("n"),
        )
        entries = [
            {"group": {"framework": f}, "n": n, "n_unit": "runs", "level": options.level}
            for f, n in counts.iter_rows()
        ]
        return AnalysisResult("runcount", options.level, entries, {"counts": counts, "spread": spread})

    def figures(result):
        counts = result.frames["counts"]
        return [
            (
                "bars",
                "Runs per framework",
                lambda: alt.Chart(counts).mark_bar().encode(x="n_runs:Q", y="framework:N"),
            )
        ]

    def sentence(result):
        return f"The plug-in counted {int(result.frames['counts']['n_runs'].sum())} runs."

    module.analyse, module.figures, module.sentence, module.DRAWN = (
        analyse,
        figures,
        sentence,
        frozenset({"counts"}),
    )
    return module


@pytest.fixture
def with_plugin(monkeypatch):
    monkeypatch.setitem(sys.modules, PLUGIN, fake_plugin())
    entry = registry.AnalysisEntry(
        "runcount",
        "Runs per framework (a plug-in)",
        "runs per framework",
        f"{PLUGIN}:analyse",
        PLUGIN,
        "docs/cli/analyze.md#summary--per-configuration",
        needs=("latencies",),
    )
    monkeypatch.setattr(registry, "ANALYSES", (*registry.ANALYSES, entry))
    return entry


def small_data() -> AnalysisData:
    runs = runs_frame(
        [
            {
                "framework": f,
                "latency_median_ms": m,
                "latency_mean_ms": m,
                "n_latencies": 3,
                "rss_peak_bytes": 1e8,
                "rss_mean_bytes": 9e7,
            }
            for f, m in [("pytorch", 10.0), ("pytorch", 11.0), ("tflite", 7.0), ("tflite", 7.5)]
        ]
    )
    return AnalysisData(
        runs=runs,
        latencies=latencies_frame({i: [m, m + 0.5, m - 0.5] for i, m in enumerate([10.0, 11.0, 7.0, 7.5])}),
    )


def overview() -> Overview:
    return Overview(
        "made-by-hand.duckdb",
        [DeviceFacts("pi", "aarch64", None, 4, 4)],
        {("inference", "ok"): 4},
        None,
        None,
        [],
    )


def test_a_registry_entry_is_run_and_drawn_with_its_own_section(with_plugin, tmp_path):
    options = AnalysisOptions(n_resamples=200)
    assert options.selected[-1] == "runcount"
    assert AnalysisOptions(only="runcount").selected == ("runcount",)
    results = analyse_data(small_data(), options)
    assert list(results)[-1] == "runcount" and results["runcount"].frames["counts"]["n_runs"].to_list() == [
        2,
        2,
    ]
    assert [key for key, _, _ in figures_for("runcount", results["runcount"])] == ["bars", "spread"], (
        "its own chart, then the generic interval chart for the frame it does not draw"
    )

    files = write_report(tmp_path / "out", results, overview())
    html = files.index.read_text()
    assert files.chart_errors == []
    assert "Runs per framework (a plug-in)" in html and "The plug-in counted 4 runs." in html
    assert 'id="chart-runcount-bars"' in html and 'id="chart-runcount-spread"' in html
    assert '"runcount"' in (tmp_path / "out" / "analysis.json").read_text()


def test_only_a_registered_name_is_accepted():
    from edgestats.analysis import AnalysisInputError

    with pytest.raises(AnalysisInputError, match="--only 'runcount'"):
        AnalysisOptions(only="runcount").check()


def test_write_report_needs_no_db_file(tmp_path, monkeypatch):
    """The page is drawn from what it is handed: no DB path, and opening one would fail."""
    import duckdb

    from edgestats.store.results import Store

    def refuse(*args, **kwargs):
        raise AssertionError("write_report opened a DB")

    results = analyse_data(small_data(), AnalysisOptions(only="summary", n_resamples=200))
    monkeypatch.setattr(Store, "open", refuse)
    monkeypatch.setattr(duckdb, "connect", refuse)
    files = write_report(tmp_path / "out", results, overview(), None, tables="csv")
    html = files.index.read_text()
    assert files.chart_errors == [] and "made-by-hand.duckdb" in html
    assert 'id="chart-summary-latency"' in html and "No run in this DB has power samples" in html
    assert files.tables and not list(tmp_path.rglob("*.duckdb"))


# -- captions and labels say what is drawn (issue 14) ---------------------------------------------


def test_a_missing_runtime_is_left_out_of_a_candidate_name_not_shown_as_none():
    from edgestats.analysis.tradeoff.analysis import tradeoff

    runs = runs_frame(
        [
            {
                "device": d,
                "framework": f,
                "runtime": rt,
                "latency_median_ms": m,
                "latency_mean_ms": m,
                "n_latencies": 3,
            }
            for d, f, rt, m in [
                ("FogNode", "TensorFlow", None, 27.0),
                ("FogNode", "MXNet", None, 35.0),
                ("vm", "tflite", "tflite", 22.0),
                ("vm", "pytorch", "torch-eager", 20.0),
            ]
        ]
    )
    winners = tradeoff(runs, None, config=["framework", "runtime"], strata=["device"]).frames["winners"]
    names = set(winners["best"]) | set(winners["runner_up"])
    assert names and not any("None" in n for n in names), names
    assert "tflite" in names and "pytorch / torch-eager" in names, (
        "repeats are left out, distinct values kept"
    )


def summary_result(strip: str) -> types.SimpleNamespace:
    """summary's frames where every median has an interval ("none"), or some ("half"), or none ("all")."""
    results = analyse_data(small_data(), AnalysisOptions(only="summary", n_resamples=200))
    metrics = results["summary"].frames["metrics"]
    medians = pl.col("metric") == "latency_median_ms"
    lose = {"none": pl.lit(False), "half": medians & (pl.col("framework") == "tflite"), "all": medians}[strip]
    metrics = metrics.with_columns(
        *(pl.when(lose).then(None).otherwise(pl.col(c)).alias(c) for c in ("ci_low", "ci_high")),
        pl.when(lose).then(pl.lit("not enough data: 1 runs")).otherwise(pl.col("note")).alias("note"),
    )
    return types.SimpleNamespace(frames={**results["summary"].frames, "metrics": metrics})


def test_captions_say_when_intervals_are_missing_and_why():
    from edgestats.reports.sections import summary

    titles = {
        strip: dict((k, t) for k, t, _ in summary.figures(summary_result(strip)))["latency"]
        for strip in ("none", "half", "all")
    }
    assert titles["none"].endswith("with its interval (dark bar)")
    assert "1 of 2 have none: not enough data: 1 runs" in titles["half"]
    assert (
        "no intervals drawn: not enough data: 1 runs" in titles["all"]
        and "with its interval" not in titles["all"]
    )


@pytest.mark.browser
def test_a_report_of_published_tables_logs_no_vega_warning(tmp_path):
    """Imported one-figure-per-run tables (no intervals, no p90, one-value ECDFs) once gave 17
    "Infinite extent" warnings in the browser console; every chart must draw without one."""
    from analysis_builders import import_sample
    from report_builders import write_db_report

    from edgestats.analysis import run_analyses

    db = import_sample(
        import_sample(tmp_path / "p.duckdb", "pcamp_inference.csv", "inference"),
        "dlaas_tf_mnist_cpu.csv",
        "training",
    )
    files = write_db_report(db, tmp_path / "report", run_analyses(db))
    from playwright.sync_api import sync_playwright

    messages = []
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path="/usr/bin/chromium", headless=True)
        context = browser.new_context(offline=True)
        context.route(
            "**/*",
            lambda r: (
                r.continue_()
                if r.request.url.startswith(("file:", "data:", "blob:", "about:"))
                else r.abort()
            ),
        )
        page = context.new_page()
        page.on("console", lambda msg: msg.type in ("warning", "error") and messages.append(msg.text))
        page.goto(files.index.as_uri())
        page.wait_for_function(
            "Array.from(document.querySelectorAll('.chart')).every(e => e.dataset.rendered !== 'pending')",
            timeout=60_000,
        )
        states = page.eval_on_selector_all(".chart", "els => els.map(e => e.dataset.rendered)")
        browser.close()
    assert files.chart_errors == [] and states and set(states) == {"true"}
    assert messages == [], messages
