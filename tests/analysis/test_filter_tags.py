"""Every row of the training analyses' frames (hyperparams, pipeline) and of their charts carries the
page filter's fields (device, framework, runtime, model) of the runs behind it: the value they
share, or their values joined ", " where they span several (edgestats.analysis.core.filter_tags). The
expected values are counted from the DB by SQL, apart from the analysis.

DB: tests/training_builders.py (inference cnn9/squeezenet, training mnist_cnn and lenet5, training
runtimes tensorflow or xla by iteration count)."""

from __future__ import annotations

from pathlib import Path

import duckdb
import polars as pl
import pytest
from training_builders import TRAINING_MODELS, make_training_models_db

from edgestats.analysis import run_analyses
from edgestats.analysis.core.filter_tags import FILTER_TAGS, filter_tags
from edgestats.analysis.core.options import AnalysisOptions
from edgestats.reports import charts_training

pytestmark = pytest.mark.slow  # the DB and four analyses: about 4 s

FRAMES = {
    "hyperparams": ("terms", "main_effects", "proportionality", "points", "vs_iterations"),
    "pipeline": ("workers", "reductions", "resources"),
}
CHARTS = {
    ("hyperparams", "main_effects"): charts_training.main_effects_chart,
    ("hyperparams", "vs_iterations"): charts_training.response_vs_iterations_chart,
    ("pipeline", "workers"): charts_training.workers_chart,
    ("pipeline", "resources"): charts_training.resources_chart,
}


@pytest.fixture(scope="module")
def db(tmp_path_factory) -> Path:
    return make_training_models_db(tmp_path_factory.mktemp("tags") / "results.duckdb")


@pytest.fixture(scope="module")
def results(db) -> dict:
    return {name: run_analyses(db, AnalysisOptions(only=name))[name] for name in FRAMES}


def joined_sql(db: Path, column: str, where: str, params: list) -> str | None:
    """The distinct values of `column` among the training runs matching `where`, sorted, ", "-joined."""
    with duckdb.connect(str(db), read_only=True) as con:
        return con.execute(
            f"SELECT string_agg(DISTINCT {column}, ', ' ORDER BY {column}) FROM ("
            "SELECT d.name AS device, r.* FROM runs r JOIN devices d USING (device_id)) "
            f"WHERE kind = 'training' AND {where}",
            params,
        ).fetchone()[0]


def test_filter_tags_name_the_shared_value_join_several_and_leave_absent_columns_out():
    runs = pl.DataFrame(
        {
            "device": ["pi5", "pi5", "pi5"],
            "framework": ["torch", None, "torch"],
            "runtime": [None, None, None],
            "model": ["resnet", "cnn9", "resnet"],
        },
        schema_overrides={"runtime": pl.String},
    )
    assert filter_tags(runs) == {
        "device": "pi5",
        "framework": "torch",
        "runtime": None,
        "model": "cnn9, resnet",
    }
    assert filter_tags(runs.drop("runtime"), skip={"device": "pi5"}) == {
        "framework": "torch",
        "model": "cnn9, resnet",
    }


def test_every_frame_row_carries_the_four_fields_one_model_each_by_default(results):
    for name, keys in FRAMES.items():
        for key in keys:
            frame = results[name].frames[key]
            assert frame.height, f"{name}.{key} is empty"
            missing = [c for c in FILTER_TAGS if c not in frame.columns]
            assert not missing, f"{name}.{key} lacks {missing}"
            assert set(frame["model"]) == set(TRAINING_MODELS), f"{name}.{key}: one model a row, both models"
            assert set(frame["device"]) == {"jetson-nano"} and set(frame["framework"]) == {"tensorflow"}


def test_runtimes_are_those_of_the_runs_behind_each_row(db, results):
    """A worker count's row pools every iteration count (both runtimes); a vs-iterations mean at
    1000 iterations is of xla runs only; a hyperparams group's fit pools both."""
    workers = results["pipeline"].frames["workers"]
    for row in workers.iter_rows(named=True):
        expected = joined_sql(
            db,
            "runtime",
            "device = ? AND storage = ? AND model = ? AND num_workers = ?",
            [row["device"], row["storage"], row["model"], row["num_workers"]],
        )
        assert row["runtime"] == expected == "tensorflow, xla"
    means = results["hyperparams"].frames["vs_iterations"]
    for row in means.iter_rows(named=True):
        expected = joined_sql(
            db, "runtime", "model = ? AND iterations = ?", [row["model"], row["iterations"]]
        )
        assert row["runtime"] == expected == ("xla" if row["iterations"] == 1000 else "tensorflow")
    terms = results["hyperparams"].frames["terms"]
    for row in terms.iter_rows(named=True):
        assert row["runtime"] == joined_sql(db, "runtime", "model = ?", [row["model"]])


def test_groups_that_span_models_carry_them_joined(db):
    """--by storage pools both training models in each group: the rows say so."""
    result = run_analyses(db, AnalysisOptions(only="pipeline", by=["storage"]))["pipeline"]
    for key in ("workers", "reductions"):
        frame = result.frames[key]
        assert set(frame["model"]) == {joined_sql(db, "model", "num_workers IS NOT NULL", [])}
        assert set(frame["model"]) == {"lenet5, mnist_cnn"}


def test_every_chart_data_row_carries_the_frame_fields(results):
    for (name, key), build in CHARTS.items():
        frame = results[name].frames[key]
        spec = build(frame).to_dict()
        rows = [row for dataset in spec["datasets"].values() for row in dataset]
        assert rows, f"{name}.{key}: no data rows"
        for row in rows:
            assert all(c in row for c in FILTER_TAGS), f"{name}.{key}: a row lacks a filter field: {row}"
        assert {r["model"] for r in rows} == set(frame["model"])


def test_a_series_name_leaves_out_a_filter_field_the_groups_determine(results):
    """A runtime that goes with each model would only repeat it in each series' name."""
    effects = (
        results["hyperparams"].frames["main_effects"].with_columns((pl.col("model") + "-rt").alias("runtime"))
    )
    spec = charts_training.main_effects_chart(effects).to_dict()
    groups = {row["group"] for dataset in spec["datasets"].values() for row in dataset}
    assert groups == set(TRAINING_MODELS)


def test_a_main_effect_at_a_level_of_a_filter_field_carries_that_level(db):
    """--factor model, one group of both models: a level's mean is of that model alone; a level of
    iterations pools both."""
    options = AnalysisOptions(
        only="hyperparams", response="training_time_s", factors=["model", "iterations"], by=["device"]
    )
    effects = run_analyses(db, options)["hyperparams"].frames["main_effects"]
    by_model = effects.filter(pl.col("factor") == "model")
    assert by_model["model"].to_list() == by_model["value"].cast(pl.String).to_list() == list(TRAINING_MODELS)
    pooled = effects.filter(pl.col("factor") == "iterations")
    assert (
        set(pooled["model"])
        == {joined_sql(db, "model", "iterations IS NOT NULL", [])}
        == {"lenet5, mnist_cnn"}
    )
