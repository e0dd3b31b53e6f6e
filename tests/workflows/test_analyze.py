"""The analyze and compare workflows called from Python, as the CLI calls them: the analyses with
the report folder and the devices the terminal lists first; B against A with its page."""

from __future__ import annotations

import json

import edgestats
from edgestats.analysis import AnalysisOptions
from edgestats.workflows.analyze import analyze
from edgestats.workflows.compare import compare
from edgestats.workflows.report import ReportRequest, write_analysis_report


def test_analyze_writes_the_report_and_names_the_collecting_devices(results_db, tmp_path):
    options = AnalysisOptions(only="summary", n_resamples=200)
    done = analyze(results_db, options, report=ReportRequest(tmp_path / "report"), collected=True)
    assert list(done.results) == ["summary"] and done.results["summary"].available
    assert done.report.index.is_file() and "summary" in json.loads(done.report.analysis_json.read_text())
    assert done.collected_devices == frozenset({"jetson-nano"})
    bare = analyze(results_db, options)
    assert bare.report is None and bare.collected_devices == frozenset()


def test_the_report_is_written_from_the_python_apis_results(results_db, tmp_path):
    """As docs/python-api.md says: the page `--out` writes, from what Results.analyze returned."""
    results = edgestats.open(results_db)
    analyses = results.analyze(resamples=200)
    files = write_analysis_report(results.spec, analyses.results, ReportRequest(tmp_path / "page"))
    assert files.index.is_file() and set(json.loads(files.analysis_json.read_text())) == set(analyses)


def test_compare_writes_its_page_when_given_a_folder(results_db, tmp_path):
    done = compare(
        results_db, a="framework = 'pytorch'", b="framework = 'onnxruntime'", out=tmp_path / "c", level=0.9
    )
    assert done.comparison.level == 0.9 and done.comparison.threshold == 0.05
    index, document = done.page
    assert index.is_file() and json.loads(document.read_text())["threshold"] == 0.05
    assert compare(results_db, a="framework = 'pytorch'", b="framework = 'onnxruntime'").page is None
