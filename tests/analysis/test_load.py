"""Loading frames from a DB: SQL builders as strings, --where / --by checks, an outdated view."""

from __future__ import annotations

import duckdb
import pytest

from edgestats.analysis import ANALYSES, AnalysisInputError, AnalysisOptions, run_analyses
from edgestats.analysis.load import check_where, filters_sql, latencies_sql, load_data, Needs, runs_sql


def test_sql_builders_return_strings():
    assert filters_sql({}) == "TRUE"
    assert filters_sql({"framework": ["py'torch", "tf"]}) == "CAST(\"framework\" AS VARCHAR) IN ('py''torch', 'tf')"
    sql = runs_sql(["run_id", "cpu_total_mean_pct"], "(framework = 'x')", "TRUE", samples_cpu=False)
    assert "CAST(NULL AS DOUBLE) AS \"mean_power_w\"" in sql and "status IN ('ok', 'diverged')" in sql
    assert "WHERE NOT l.warmup" in latencies_sql("r")


@pytest.mark.parametrize("where", ["1; DROP TABLE runs", "framework = 'a') OR (1", "framework = "])
def test_where_must_be_one_expression(where):
    with pytest.raises(AnalysisInputError, match="--where"):
        check_where(where)


def test_where_and_filters_select_runs(results_db):
    data = load_data(results_db, where="framework = 'pytorch'", needs=Needs(latencies=True))
    assert data.runs["framework"].unique().to_list() == ["pytorch"] and data.runs.height == 2
    assert set(data.latencies["run_idx"].unique().to_list()) == {0, 1}
    assert load_data(results_db, filters={"framework": ["onnxruntime"]}).runs.height == 1
    with pytest.raises(AnalysisInputError, match="failed on run_summary"):
        load_data(results_db, where="no_such_column = 1")


def test_unknown_group_key_lists_the_valid_ones(results_db):
    with pytest.raises(AnalysisInputError, match=r"--by colour: not a run column; use one of .*framework.*batch_size"):
        run_analyses(results_db, AnalysisOptions(by=["colour"]))
    with pytest.raises(AnalysisInputError, match="--only"):
        run_analyses(results_db, AnalysisOptions(only="everything"))


def test_every_analysis_runs_on_a_real_db_and_says_why_when_it_cannot(results_db):
    results = run_analyses(results_db)
    assert list(results) == list(ANALYSES)
    assert results["summary"].available and results["breakdown"].available and results["tradeoff"].available
    assert not results["energy"].available
    assert "energy" in results["energy"].to_json()[0]["reason"]
    nothing = run_analyses(results_db, AnalysisOptions(where="framework = 'caffe'"))
    assert all(r.to_json()[0]["reason"].startswith("not enough data: no ok or diverged runs match") for r in nothing.values())


def test_an_outdated_view_asks_for_migrate(results_db):
    con = duckdb.connect(str(results_db))
    con.execute("CREATE OR REPLACE VIEW run_summary AS SELECT run_id, status, kind FROM runs")
    con.close()
    with pytest.raises(AnalysisInputError, match="edgestats migrate"):
        run_analyses(results_db)


def test_analysis_imports_no_framework_and_the_cli_no_analysis_stack():
    from test_import_boundaries import ANALYSIS, FRAMEWORKS, loaded_after

    assert not loaded_after("import edgestats.analysis") & FRAMEWORKS
    assert not loaded_after("import edgestats.cli.analyze") & (ANALYSIS | FRAMEWORKS)
