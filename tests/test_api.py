"""The Python API (edgestats/api/, docs/python-api.md) gives what the CLI gives for the same options:
each result is checked against the CLI's JSON (typer's CliRunner) on real DBs written through the
Store or imported from sample_data, and its errors against the CLI's one-line messages."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest
from analysis_builders import import_sample
from builders import make_results_db
from typer.testing import CliRunner

import edgestats
from edgestats.analysis.load.frames import AnalysisInputError
from edgestats.cli import app
from edgestats.errors import DatabaseError, QueryError
from edgestats.exports.parquet import export_parquet
from edgestats.registry.analyses import analysis_names
from edgestats.reports.report import figures_for

runner = CliRunner()


def cli_json(*args: str) -> dict | list:
    result = runner.invoke(app, list(args))
    assert result.exit_code in (0, 1), result.output  # compare exits 1 on a regression
    return json.loads(result.stdout)


def cli_error(*args: str) -> str:
    result = runner.invoke(app, list(args))
    assert result.exit_code != 0, result.output
    return result.output


@pytest.fixture(scope="module")
def six_runs_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Three pytorch and three onnxruntime runs on one device, and a training run."""
    return make_results_db(tmp_path_factory.mktemp("api") / "six.duckdb", n_runs=6)


@pytest.fixture(scope="module")
def threads_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return import_sample(
        tmp_path_factory.mktemp("api") / "threads.duckdb", "dlaas_threads_server2.csv", "training"
    )


# -- analyze -------------------------------------------------------------------------------------


def test_every_analysis_matches_the_cli_json(six_runs_db):
    api = edgestats.open(six_runs_db).analyze(resamples=200, seed=3, level=0.9)
    assert list(api) == list(analysis_names())
    assert api.json() == cli_json(
        "analyze", str(six_runs_db), "--json", "--resamples", "200", "--seed", "3", "--level", "0.9"
    )
    assert api["summary"].available and not api["energy"].available and "energy" in api["energy"].reason


def test_one_analysis_with_groups_and_filters_matches_the_cli(six_runs_db):
    summary = edgestats.open(six_runs_db).analyze(
        "summary", by=["framework"], framework="onnxruntime", resamples=200, bca_max_n=50
    )
    expected = cli_json(
        "analyze",
        str(six_runs_db),
        "--only",
        "summary",
        "--by",
        "framework",
        "--framework",
        "onnxruntime",
        "--resamples",
        "200",
        "--bca-max-n",
        "50",
        "--json",
    )
    assert summary.json() == expected["summary"]
    assert set(summary.frame["framework"].to_list()) == {"onnxruntime"}
    assert isinstance(summary.frame, pl.DataFrame) and {"estimate", "ci_low", "ci_high", "level"} <= set(
        summary.frame.columns
    )
    assert list(summary.frames) == ["metrics", "distribution", "ecdf", "variance"]


def test_hyperparams_options_match_the_cli(threads_db):
    hyper = edgestats.open(threads_db).analyze(
        "hyperparams",
        response="training_time_s",
        factor="threads",
        by="framework",
        best="min",
        where="threads IS NOT NULL",
        linear="threads",
    )
    expected = cli_json(
        "analyze",
        str(threads_db),
        "--only",
        "hyperparams",
        "--response",
        "training_time_s",
        "--factor",
        "threads",
        "--by",
        "framework",
        "--best",
        "min",
        "--where",
        "threads IS NOT NULL",
        "--linear",
        "threads",
        "--json",
    )
    assert hyper.json() == expected["hyperparams"]
    caffe = next(e for e in hyper.json() if e["group"] == {"framework": "Caffe-CPU"})
    assert caffe["best"]["config"] == {"threads": 24}  # DLaaS Table XII: Caffe's fastest row, 543.92 s
    assert "threads" in hyper.sentence


@pytest.mark.parametrize(
    "options, flags",
    [
        ({"level": 1.5}, ["--level", "1.5"]),
        ({"only": "nope"}, ["--only", "nope"]),
        ({"by": "colour"}, ["--by", "colour"]),
        ({"where": "1; DROP TABLE runs"}, ["--where", "1; DROP TABLE runs"]),
        ({"noisy": "maybe"}, ["--noisy", "maybe"]),
        ({"resamples": 10}, ["--resamples", "10"]),
        ({"log": "threads", "linear": "threads"}, ["--log", "threads", "--linear", "threads"]),
    ],
)
def test_options_are_refused_with_the_cli_message(six_runs_db, options, flags):
    with pytest.raises(AnalysisInputError) as refused:
        edgestats.open(six_runs_db).analyze(**options)
    assert f"error: {refused.value}" in cli_error("analyze", str(six_runs_db), *flags)


# -- charts --------------------------------------------------------------------------------------


def test_charts_are_the_reports_charts(six_runs_db):
    summary = edgestats.open(six_runs_db).analyze("summary", resamples=200)
    report = figures_for("summary", summary.result)
    assert summary.chart_keys() == [key for key, _, _ in report] == ["latency", "ecdf"]
    assert summary.chart().to_dict() == report[0][2]().to_dict()
    assert summary.chart("ecdf").to_dict() == summary.charts()["ecdf"].to_dict() == report[1][2]().to_dict()
    assert "vega-lite" in summary.chart().to_dict()["$schema"]
    html = summary._repr_html_()
    assert "<table" in html and summary.sentence.split(" ")[0] in html


def test_chart_errors_name_what_is_missing(six_runs_db):
    results = edgestats.open(six_runs_db)
    with pytest.raises(edgestats.ChartError, match="use one of latency, ecdf"):
        results.analyze("summary", resamples=200).chart("pie")
    with pytest.raises(edgestats.ChartError, match="no selected run has energy"):
        results.analyze("energy").chart()


# -- runs and sql --------------------------------------------------------------------------------


def test_runs_are_the_runs_analyze_uses(six_runs_db):
    results = edgestats.open(six_runs_db)
    runs = results.runs(framework=["pytorch", "onnxruntime"], kind="inference")
    assert runs.height == 6 and "run_idx" not in runs.columns
    ids = [
        r["run_id"]
        for r in cli_json(
            "sql",
            str(six_runs_db),
            "SELECT CAST(run_id AS VARCHAR) AS run_id FROM runs WHERE kind = 'inference'",
            "--format",
            "json",
        )
    ]
    assert sorted(runs["run_id"].to_list()) == sorted(ids)
    assert results.runs(where="framework = 'pytorch'")["framework"].unique().to_list() == ["pytorch"]
    assert results.runs().height == 7  # the training run too
    with pytest.raises(AnalysisInputError, match="--where"):
        results.runs(where="no_such_column = 1")


def test_sql_matches_the_cli_and_keeps_repeated_names(six_runs_db):
    query = "SELECT framework, count(*) AS n, 1 AS x, 2 AS x FROM run_summary GROUP BY ALL ORDER BY ALL"
    frame = edgestats.open(six_runs_db).sql(query)
    assert frame.columns == ["framework", "n", "x", "x_1"]
    rows = cli_json(
        "sql",
        str(six_runs_db),
        "SELECT framework, count(*) AS n FROM run_summary GROUP BY ALL ORDER BY ALL",
        "--format",
        "json",
    )
    assert frame.select("framework", "n").to_dicts() == rows


def test_sql_is_sandboxed(six_runs_db, tmp_path):
    results = edgestats.open(six_runs_db)
    with pytest.raises(QueryError, match="sandboxed"):
        results.sql(f"COPY runs TO '{tmp_path / 'out.csv'}'")
    with pytest.raises(QueryError):
        results.sql("DELETE FROM runs")
    assert not (tmp_path / "out.csv").exists() and results.runs().height == 7
    outside = tmp_path / "extra.csv"
    outside.write_text("a\n1\n2\n")
    with pytest.raises(QueryError):
        results.sql(f"SELECT * FROM read_csv('{outside}')")
    assert results.sql(f"SELECT sum(a) AS total FROM read_csv('{outside}')", read=[outside])[
        "total"
    ].to_list() == [3]


# -- compare -------------------------------------------------------------------------------------


@pytest.mark.slow
def test_compare_two_dbs_matches_the_cli(six_runs_db, tmp_path):
    after = make_results_db(tmp_path / "after.duckdb", n_runs=6, seed0=20)
    comparison = edgestats.open(six_runs_db).compare(other=edgestats.open(after), threshold=3)
    assert comparison.json() == cli_json(
        "compare", str(six_runs_db), str(after), "--threshold", "3", "--format", "json"
    )
    assert comparison.frame.height == sum(len(c["metrics"]) for c in comparison.json()["comparisons"]) > 0
    assert comparison.chart().to_dict()["facet"]["row"]["field"] == "quantity"
    assert edgestats.open(six_runs_db).compare(other=after, threshold=3).json() == comparison.json()


def test_compare_two_selections_matches_the_cli(six_runs_db):
    comparison = edgestats.open(six_runs_db).compare(
        a="framework = 'pytorch'", b="framework = 'onnxruntime'", where="kind = 'inference'", level=0.9
    )
    expected = cli_json(
        "compare",
        str(six_runs_db),
        "--a",
        "framework = 'pytorch'",
        "--b",
        "framework = 'onnxruntime'",
        "--where",
        "kind = 'inference'",
        "--level",
        "0.9",
        "--format",
        "json",
    )
    assert comparison.json() == expected
    assert bool(comparison.regressions) == expected["regression"]
    assert "against A" in comparison.sentence and "<table" in comparison._repr_html_()


def test_compare_refuses_what_the_cli_refuses(six_runs_db):
    results = edgestats.open(six_runs_db)
    with pytest.raises(AnalysisInputError, match="both a= and b="):
        results.compare(a="framework = 'pytorch'")
    with pytest.raises(AnalysisInputError) as refused:
        results.compare(a="framework = 'pytorch'", b="1; DROP TABLE runs")
    assert f"error: {refused.value}" in cli_error(
        "compare", str(six_runs_db), "--a", "framework = 'pytorch'", "--b", "1; DROP TABLE runs"
    )


# -- what open accepts ---------------------------------------------------------------------------


@pytest.mark.slow
def test_a_list_of_dbs_is_read_as_the_lake_of_its_files(six_runs_db, tmp_path):
    other = make_results_db(tmp_path / "other.duckdb", device_name="pi5", n_runs=2, seed0=40)
    with edgestats.open([six_runs_db, other]) as both:
        runs = both.runs()
        assert sorted(runs["device"].unique().to_list()) == ["jetson-nano", "pi5"] and runs.height == 7 + 3
        folder = tmp_path / "lake"
        folder.mkdir()
        for name, path in (("a.duckdb", six_runs_db), ("b.duckdb", other)):
            (folder / name).write_bytes(path.read_bytes())
        expected = cli_json(
            "analyze", str(folder / "*.duckdb"), "--only", "summary", "--resamples", "200", "--json"
        )
        assert both.analyze("summary", resamples=200).json() == expected["summary"]
        links = both.spec.parents[1]
        assert links.is_dir()
    assert not links.exists(), "closing removes the links made for the list"
    assert edgestats.open([six_runs_db, six_runs_db]).runs().height == 7, "a run in several files counts once"


def test_an_export_folder_and_a_glob_open_as_lakes(six_runs_db, tmp_path):
    export_parquet(six_runs_db, tmp_path / "export")
    lake_ids = sorted(edgestats.open(tmp_path / "export").runs()["run_id"].to_list())
    assert lake_ids == sorted(edgestats.open(six_runs_db).runs()["run_id"].to_list())
    assert edgestats.open(str(six_runs_db.parent / "six.*")).runs().height == 7


def test_open_reports_a_missing_db_at_once_with_the_cli_message(tmp_path):
    missing = tmp_path / "nope.duckdb"
    with pytest.raises(DatabaseError, match="no such file") as refused:
        edgestats.open(missing)
    assert f"error: {refused.value}" in cli_error("analyze", str(missing))
    with pytest.raises(DatabaseError, match="no such DB file"):
        edgestats.open([missing, missing])
    with pytest.raises(DatabaseError, match="no file matches"):
        edgestats.open(str(tmp_path / "*.duckdb"))


def test_importing_edgestats_stays_light():
    """`import edgestats` (every command, the measured worker) loads no API, polars or DuckDB; the
    API's names resolve on first use."""
    code = (
        "import sys, edgestats; heavy = sorted(m for m in sys.modules if m.split('.')[0] in "
        "('polars', 'duckdb', 'altair', 'pyarrow') or m.startswith('edgestats.api')); print(heavy); "
        "print(edgestats.open.__module__, 'open' in dir(edgestats))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], check=True, capture_output=True, text=True
    ).stdout.splitlines()
    assert out == ["[]", "edgestats.api.results True"]
    with pytest.raises(AttributeError, match="no attribute 'opne'"):
        edgestats.opne  # noqa: B018
