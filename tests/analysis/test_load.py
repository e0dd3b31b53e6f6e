"""Loading frames from a DB: SQL builders as strings, --where / --by checks, an outdated view."""

from __future__ import annotations

import json

import duckdb
import pytest
from json_compare import same_to_12_digits

from edgestats.analysis import ANALYSES, AnalysisInputError, AnalysisOptions, run_analyses
from edgestats.analysis.load.frames import Needs, check_where, filters_sql, latencies_sql, load_data, runs_sql


def test_sql_builders_return_strings():
    assert filters_sql({}) == "TRUE"
    assert (
        filters_sql({"framework": ["py'torch", "tf"]})
        == "CAST(\"framework\" AS VARCHAR) IN ('py''torch', 'tf')"
    )
    sql = runs_sql(["run_id", "cpu_total_mean_pct"], "(framework = 'x')", "TRUE", samples_cpu=False)
    assert 'CAST(NULL AS DOUBLE) AS "mean_power_w"' in sql and "status IN ('ok', 'diverged')" in sql
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
    with pytest.raises(
        AnalysisInputError, match=r"--by colour: not a run column; use one of .*framework.*batch_size"
    ):
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
    assert all(
        r.to_json()[0]["reason"].startswith("not enough data: no ok or diverged runs match")
        for r in nothing.values()
    )


def test_an_outdated_view_asks_for_migrate(results_db):
    con = duckdb.connect(str(results_db))
    con.execute("CREATE OR REPLACE VIEW run_summary AS SELECT run_id, status, kind FROM runs")
    con.close()
    with pytest.raises(AnalysisInputError, match="edgestats migrate"):
        run_analyses(results_db)


@pytest.mark.slow
def test_analysis_imports_no_framework_and_the_cli_no_analysis_stack():
    from test_import_boundaries import ANALYSIS, FRAMEWORKS, loaded_after

    assert not loaded_after("import edgestats.analysis") & FRAMEWORKS
    assert not loaded_after("import edgestats.cli.analyze") & (ANALYSIS | FRAMEWORKS)


def test_the_order_rows_are_stored_in_changes_no_analysis(tmp_path):
    """The same runs stored in another physical order (as a merged file, a lake or a glob of
    files store them) give the same JSON: every string, count and null the same, every float to
    12 significant digits. Only the last bits of floats may differ: DuckDB and polars sum floats
    in scan order, and float addition is not associative."""
    from builders import make_results_db, write_inference_run

    from edgestats.analysis import dumps
    from edgestats.store.results import CHILD_TABLES, ROW_TABLES, Store

    stored = make_results_db(tmp_path / "stored.duckdb", n_runs=5)
    with Store.open(stored) as store:  # a configuration of one run: its intervals resample its latencies
        device_id = store.con.execute("SELECT device_id FROM devices").fetchone()[0]
        write_inference_run(store, device_id, seed=99, model="resnet18", n_latencies=200)
    shuffled = tmp_path / "shuffled.duckdb"
    with Store.open(shuffled) as store:
        store.con.execute(f"ATTACH '{stored}' AS src (READ_ONLY)")
        store.con.execute("SELECT setseed(0.25)")
        for table in ROW_TABLES + CHILD_TABLES:
            store.con.execute(f"INSERT INTO {table} SELECT * FROM src.{table} ORDER BY random()")
        store.con.execute("DETACH src")
        assert store.con.execute("SELECT count(*) FROM latencies").fetchone()[0] == 5 * 50 + 200
    assert (
        same_to_12_digits(json.loads(dumps(run_analyses(shuffled))), json.loads(dumps(run_analyses(stored))))
        == []
    )
