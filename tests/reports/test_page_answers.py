"""The answers' tables at the top of the page, from an answers result's frames: one row per
group, the fastest with its figure, each other candidate on a line with its ratio [interval],
verdict, Holm p and runs; filter fields on rows and lines; DB strings escaped; an inconclusive
reason lettered and said once; and the answers before "At a glance" and any chart."""

from __future__ import annotations

import re
from types import SimpleNamespace

import polars as pl
import pytest

from edgestats.analysis.load.overview import Overview
from edgestats.reports.page import Section, render_page
from edgestats.reports.page_answers import answers_html
from edgestats.reports.page_tables import Footnotes

WHY = "one run measures no spread between runs; collect at least 3 runs per configuration"


def candidate(device, model, framework, fastest, estimate, ratio, verdict, text, p=None, low=None, high=None):
    return {
        "device": device,
        "model": model,
        "framework": framework,
        "runtime": framework,
        "candidate": framework,
        "group": f"{device} / {model}",
        "fastest": fastest,
        "metric": "latency_median_ms",
        "estimate": estimate,
        "ci_low": estimate * 0.9,
        "ci_high": estimate * 1.1,
        "note": None,
        "ratio": ratio,
        "ratio_ci_low": low,
        "ratio_ci_high": high,
        "p_holm": p,
        "verdict": verdict,
        "verdict_text": text,
        "n_runs": 3,
        "level": 0.95,
    }


def result() -> SimpleNamespace:
    rows = [
        candidate("<b>pi5</b>", "cnn9", "tflite", True, 1.26, 1.0, "fastest", "fastest"),
        candidate(
            "<b>pi5</b>", "cnn9", "pytorch", False, 1.5, 1.19, "slower", "1.19× slower [1.16, 1.22]", 2e-6
        ),
        candidate(
            "<b>pi5</b>", "cnn9", "onnxruntime", False, 1.7, 1.35, "inconclusive", f"inconclusive: {WHY}"
        ),
        candidate("vm", "squeezenet", "onnxruntime", True, 5.6, 1.0, "fastest", "fastest"),
    ]
    across = [
        {
            **candidate(d, "cnn9", "tflite", d == "vm", e, r, v, t),
            "group": "cnn9 / tflite",
            "candidate": "tflite",
        }
        for d, e, r, v, t in (
            ("vm", 1.0, 1.0, "fastest", "fastest"),
            ("<b>pi5</b>", 1.26, 1.26, "inconclusive", f"inconclusive: {WHY}"),
        )
    ]
    return SimpleNamespace(frames={"answers": pl.DataFrame(rows), "across_devices": pl.DataFrame(across)})


def test_one_row_per_group_each_other_candidate_a_line():
    markup = answers_html(result(), Footnotes())
    body = re.search(r'id="table-answers-answers">(.*?)</table>', markup, re.S).group(1)
    rows = re.findall(r"<tr data-f-device=[^>]*>(.*?)</tr>", body, re.S)
    assert len(rows) == 2, "two groups"
    first = rows[0]
    assert "&lt;b&gt;pi5&lt;/b&gt; / cnn9" in first and "<b>pi5</b>" not in markup, "DB strings escaped"
    assert first.count("<li") == 2 and "tflite" in first and "1.26" in first
    assert "1.19× slower [1.16, 1.22]" in first and "p_holm &lt; 0.001" in first and "runs 3 vs 3" in first
    assert "1.35× as long: inconclusive</span><sup class=why>a</sup>" in first
    assert 'data-f-framework="pytorch" data-f-runtime="pytorch"' in first, "a line carries its own fields"
    assert "the only one measured" in rows[1]
    assert markup.count(WHY) == 1, "the reason is said once, under the tables"


def test_across_devices_names_the_fastest_device_and_the_others():
    markup = answers_html(result(), Footnotes())
    body = re.search(r'id="table-answers-across_devices">(.*?)</table>', markup, re.S).group(1)
    (row,) = re.findall(r"<tr data-f-model[^>]*>(.*?)</tr>", body, re.S)
    assert "<td class=fastest>vm</td>" in row and 'data-f-device="&lt;b&gt;pi5&lt;/b&gt;"' in row


@pytest.mark.slow  # the page inlines the Vega bundle: built once per test session, 2-3 s
def test_the_answers_come_first():
    overview = Overview("x.duckdb", [], {}, None, None, [])
    figure = SimpleNamespace(key="ratios", title="ratios", spec={}, secondary=False)
    sections = [Section("summary", "Summary", "s."), Section("answers", "Answers", "a.", [figure])]
    page = render_page(overview, sections, answers=result())
    assert page.index('id="answers"') < page.index('id="table-answers-answers"') < page.index('id="summary"')
    assert page.index('id="table-answers-across_devices"') < page.index('id="chart-answers-ratios"')
    assert re.search(r'<nav><ol><li><a href="#answers">', page), "first in the contents"
