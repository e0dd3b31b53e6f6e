"""The generation section and its charts (reports/sections/generation.py, reports/charts_generation.py)
on the analysis' live frames of a DB of known generation runs: which figures appear for which data,
every dot and rule carries its interval in its tooltip, an axis says "log" exactly when it is log,
configurations are labelled in words, and the sentence gives the fastest decode and the steepest
slope with their intervals."""

from __future__ import annotations

import json

import pytest
from generation_builders import GenConfig, depth_sweep, make_generation_db

from edgestats.analysis import AnalysisOptions, run_analyses
from edgestats.reports import charts_generation
from edgestats.reports.sections import generation as section


@pytest.fixture(scope="module")
def swept(tmp_path_factory):
    db = tmp_path_factory.mktemp("gen-section") / "g.duckdb"
    make_generation_db(db, depth_sweep(depths=(0, 256)), runs_per_config=3, seed=9)
    return run_analyses(db, AnalysisOptions(only="generation"))["generation"]


def layers(spec: dict) -> list[dict]:
    out = [spec] if "mark" in spec else []
    for key in ("layer", "spec"):
        part = spec.get(key)
        for child in part if isinstance(part, list) else [part] if part else []:
            out += layers(child)
    return out


def test_every_figure_is_there_and_says_its_interval(swept):
    specs = {key: build().to_dict() for key, _, build in section.figures(swept)}
    assert list(specs) == ["rates", "ttft", "itl", "energy", "depth"]
    for key, spec in specs.items():
        for layer in layers(spec):
            encoding, mark = layer["encoding"], layer["mark"]
            mark = mark if isinstance(mark, str) else mark["type"]
            assert "tooltip" in encoding, f"{key}: a {mark} without a tooltip"
            if key != "depth":
                assert any("interval" in t["field"] for t in encoding["tooltip"]), key
            titles = [
                e.get("title") or "" for e in (encoding.get("x"), encoding.get("y")) if isinstance(e, dict)
            ]
            is_log = any(
                (e.get("scale") or {}).get("type") == "log" for e in encoding.values() if isinstance(e, dict)
            )
            assert is_log == any("log" in t for t in titles) or not any(titles), (key, titles)
    text = json.dumps(specs["rates"], ensure_ascii=False)
    assert "depth 256 · pytorch" in text and "depth 0 · llamacpp" in text  # words, not "256 · pytorch"
    assert "ci_low" in text and "bar_low" in text
    assert "band_low" in json.dumps(specs["depth"])


def test_the_sentence_gives_the_fastest_decode_and_the_steepest_slope(swept):
    text = section.sentence(swept)
    assert text.startswith("The fastest decode is ") and "(depth 0 · llamacpp, 95 % interval" in text
    assert "steepest depth fit (pytorch)" in text and "µs to a decode step" in text


def test_no_energy_and_one_depth_leave_those_figures_out(tmp_path):
    db = tmp_path / "plain.duckdb"
    make_generation_db(db, [GenConfig(), GenConfig(prompt_tokens=8)], runs_per_config=2)
    result = run_analyses(db, AnalysisOptions(only="generation", where="prompt_tokens = 32"))["generation"]
    assert [key for key, _, _ in section.figures(result)] == ["rates", "ttft", "itl", "energy"]


def test_a_label_names_each_number_and_drops_a_runtime_the_framework_tells():
    row = {"framework": "llamacpp", "runtime": "cpu", "prompt_tokens": 16, "context_depth": 512}
    assert charts_generation.config_label(row, ["framework", "prompt_tokens", "context_depth"]) == (
        "prompt 16 · depth 512 · llamacpp"
    )
