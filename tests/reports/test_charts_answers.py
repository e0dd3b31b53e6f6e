"""answers' chart and section (reports/charts_answers.py, reports/sections/answers.py): one panel
per group with a rule at 1, each ratio's interval drawn, every data row carrying the page filter's
fields, and the section's sentences the analysis' own."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest
from answers_builders import make_answers_db

from edgestats.analysis import AnalysisOptions, run_analyses
from edgestats.reports import charts_answers
from edgestats.reports.sections import answers as section

FILTER_FIELDS = ("device", "framework", "runtime", "model")
pytestmark = pytest.mark.slow  # the module's DB: 24 runs written through the Store, about 3 s


@pytest.fixture(scope="module")
def result(tmp_path_factory):
    db: Path = make_answers_db(tmp_path_factory.mktemp("answers-chart") / "a.duckdb", runs=3)
    return run_analyses(db, AnalysisOptions(only="answers"))["answers"]


def layers_and_data(spec: dict) -> tuple[list[dict], list[dict]]:
    [rows] = spec["datasets"].values()
    return spec["spec"]["layer"], rows


def test_one_panel_per_group_with_a_rule_at_one_and_every_interval(result):
    frame = result.frames["answers"]
    spec = charts_answers.ratio_chart(frame).to_dict()
    assert spec["facet"]["field"] == "group" and spec["resolve"]["scale"]["y"] == "independent"
    layers, rows = layers_and_data(spec)
    assert layers[0]["mark"]["type"] == "rule" and layers[0]["encoding"]["x"] == {"datum": 1}
    assert (
        layers[1]["encoding"]["x"]["field"] == "bar_low"
        and layers[1]["encoding"]["x2"]["field"] == "bar_high"
    )
    assert layers[1]["encoding"]["x"]["scale"]["type"] == "log"
    assert {r["group"] for r in rows} == set(frame["group"].to_list()) and len(rows) == frame.height == 8
    for row in rows:
        assert all(row.get(field) for field in FILTER_FIELDS), row
        assert row["ratio"] >= 1 and 0 < row["bar_low"] <= row["ratio"] <= row["bar_high"]
        if not row["fastest"]:
            assert (row["bar_low"], row["bar_high"]) == (row["ratio_ci_low"], row["ratio_ci_high"])


def test_across_devices_panels_list_devices(result):
    spec = section.figures(result)[1][2]().to_dict()
    layers, rows = layers_and_data(spec)
    assert layers[2]["encoding"]["y"]["field"] == "device"
    assert {r["device"] for r in rows} == {"pi5", "vm"} and all(r["model"] and r["framework"] for r in rows)


def test_section_sentences_are_the_analysis_own(result):
    assert [key for key, _, _ in section.figures(result)] == ["ratios", "across_devices"]
    assert section.sentences(result) == [e["sentence"] for e in result.entries]
    assert section.sentence(result).startswith(
        "In 3 of 4 groups compared, the fastest candidate is significantly"
    )


def test_a_group_of_one_candidate_is_not_drawn_and_a_wide_interval_stops_at_an_arrowhead(result):
    frame = result.frames["answers"]
    lone = (
        frame.filter(pl.col("group") == frame["group"][0])
        .head(1)
        .with_columns(pl.lit("alone").alias("group"))
    )
    wide = (
        frame.filter(~pl.col("fastest"))
        .head(1)
        .with_columns(
            pl.lit("wide").alias("group"),
            pl.lit(1e-3).alias("ratio_ci_low"),
            pl.lit(4e4).alias("ratio_ci_high"),
        )
    )
    fastest = frame.filter(pl.col("fastest")).head(1).with_columns(pl.lit("wide").alias("group"))
    spec = charts_answers.ratio_chart(
        pl.concat([frame, lone, fastest, wide], how="vertical_relaxed")
    ).to_dict()
    layers, rows = layers_and_data(spec)
    assert "alone" not in {r["group"] for r in rows}
    [cut] = [r for r in rows if r["group"] == "wide" and not r["fastest"]]
    top = max(1.0, max(r["ratio"] for r in rows)) * charts_answers.REACH
    assert cut["beyond_low"] and cut["beyond_high"] and cut["bar_high"] == pytest.approx(top)
    assert cut["ratio_ci_low"] == 1e-3 and cut["ratio_ci_high"] == 4e4  # the tooltip keeps the whole interval
    arrows = [layer for layer in layers if layer["mark"].get("shape", "").startswith("triangle")]
    assert [a["encoding"]["x"]["field"] for a in arrows] == ["bar_low", "bar_high"]
    assert not any(r["beyond_high"] for r in rows if r["group"] != "wide")
