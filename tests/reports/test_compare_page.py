"""The chart of `compare --out` (reports/compare_page.py), read from its Vega-Lite spec: an interval
that reaches beyond its panel stops at the edge with an arrowhead (a triangle pointing out) and
its true end in the tooltip; an interval inside is drawn whole, with no arrowhead; no drawn end
is beyond the panel's reach; the overall ratio is in the page's sentence and table."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from edgestats.analysis.compare.comparison import Selection, compare_runs
from edgestats.reports.compare_page import REACH, chart_frame, overall_table, ratio_chart, sentence

A, B = Selection(Path("a.duckdb")), Selection(Path("b.duckdb"))


def runs_frame(medians_ms: dict[str, list[float]]) -> pl.DataFrame:
    rows = [
        {"model": model, "run_id": f"{model}-{j}", "run_idx": j, "latency_median_ms": m}
        for model, ms in medians_ms.items()
        for j, m in enumerate(ms)
    ]
    return pl.DataFrame(rows)


@pytest.fixture(scope="module")
def comparison():
    """cnn9: 3 tight runs a side, an interval of a few %; wild: 2 runs a side 50 times apart, an
    interval spanning many decades (Welch with 1 df), as 2 noisy runs give."""
    a = {"cnn9": [10.0, 10.2, 9.9], "wild": [1.0, 50.0]}
    b = {"cnn9": [10.5, 10.4, 10.6], "wild": [2.0, 0.05]}
    return compare_runs(A, B, runs_frame(a), runs_frame(b))


def layers(spec: dict) -> list[dict]:
    return spec["spec"]["layer"][0]["layer"]


def test_an_interval_beyond_the_panel_gets_an_arrowhead_at_the_edge(comparison):
    frame = chart_frame(comparison)
    rows = {r["config"]: r for r in frame.to_dicts()}
    wild, tight = rows["wild"], rows["cnn9"]
    low_edge = min(wild["estimate"], tight["estimate"], 1 / 1.05) / REACH
    high_edge = max(wild["estimate"], tight["estimate"], 1.05) * REACH
    assert wild["ci_low"] < low_edge and wild["ci_high"] > high_edge  # the truth goes on beyond
    assert wild["beyond_low"] and wild["beyond_high"]
    assert (wild["shown_low"], wild["shown_high"]) == pytest.approx((low_edge, high_edge), rel=1e-12)
    assert not tight["beyond_low"] and not tight["beyond_high"]
    assert (tight["shown_low"], tight["shown_high"]) == (tight["ci_low"], tight["ci_high"])

    spec = ratio_chart(frame, comparison.threshold).to_dict()
    rule = next(
        layer for layer in layers(spec) if layer["mark"]["type"] == "rule" and "x2" in layer["encoding"]
    )
    assert (rule["encoding"]["x"]["field"], rule["encoding"]["x2"]["field"]) == ("shown_low", "shown_high")
    heads = {
        layer["mark"]["shape"]: layer
        for layer in layers(spec)
        if layer["mark"]["type"] == "point" and "shape" in layer["mark"]
    }
    assert set(heads) == {"triangle-left", "triangle-right"}
    for shape, end in (("triangle-left", "low"), ("triangle-right", "high")):
        encoding = heads[shape]["encoding"]
        assert encoding["x"]["field"] == f"shown_{end}"
        # drawn (size 90) only where that end was cut; size 0 elsewhere
        assert encoding["size"] == {"condition": {"test": f"datum.beyond_{end}", "value": 90}, "value": 0}
        assert any(t["field"] == f"ci_{end}" for t in encoding["tooltip"])  # the true end, on hover
    [data] = [rows for rows in spec["datasets"].values() if "config" in rows[0]]  # (the other: the band)
    drawn = [r for r in data if r["beyond_high"]]
    assert [r["config"] for r in drawn] == ["wild"] and drawn[0]["shown_high"] < drawn[0]["ci_high"]
    # every x the chart draws lies within the panel's reach: nothing is left for the scale to clip
    for row in data:
        for field in ("estimate", "shown_low", "shown_high"):
            assert low_edge * (1 - 1e-12) <= row[field] <= high_edge * (1 + 1e-12)


def test_a_chart_of_intervals_inside_the_panel_has_no_arrowhead():
    a, b = {"cnn9": [10.0, 10.2, 9.9]}, {"cnn9": [10.5, 10.4, 10.6]}
    frame = chart_frame(compare_runs(A, B, runs_frame(a), runs_frame(b)))
    assert not frame["beyond_low"].any() and not frame["beyond_high"].any()
    assert frame["shown_low"].to_list() == frame["ci_low"].to_list()


def test_the_page_s_sentence_and_table_give_the_overall_ratio(comparison):
    [overall] = comparison.overall
    table = overall_table(comparison)
    assert table.to_dicts() == [
        {
            "metric": "median latency",
            "ratio": overall.estimate,
            "ci_low": overall.ci_low,
            "ci_high": overall.ci_high,
            "level": 0.95,
            "configurations": 2,
            "note": None,
        }
    ]
    assert "overall, the geometric mean of B/A over 2 configurations is" in sentence(comparison)
