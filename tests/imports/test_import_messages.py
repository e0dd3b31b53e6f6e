"""edgestats import (issue 15): messages (an unknown --map target, a column that looks like a
measure, no measurement), long-format tables, thread counts left at the default, and the typed
view of the extra columns."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_asserts import one_line_error
from import_builders import SAMPLE, rows, write
from typer.testing import CliRunner

from edgestats.cli import app
from edgestats.errors import ImportFileError
from edgestats.imports.importer import import_results
from edgestats.store.results import Store

runner = CliRunner()

# -- issue 15: messages ---------------------------------------------------------------------------


def test_a_map_to_a_name_edgestats_cannot_import_is_an_error_listing_the_names(tmp_path):
    """Was: the column silently went to extra."""
    src = write(tmp_path / "t.csv", "device,framework,cpu_or_gpu,latency_ms\npi,pytorch,CPU,3\n")
    db = tmp_path / "r.duckdb"
    with pytest.raises(
        ImportFileError,
        match=r"--map 'cpu_or_gpu=processor': 'processor' is not a column edgestats "
        r"imports; use one of .*accelerator.*latency_ms",
    ):
        import_results(db, src, kind="inference", mappings=["cpu_or_gpu=processor"])
    assert not db.exists()
    import_results(db, src, kind="inference", mappings=["cpu_or_gpu=accelerator"])
    assert rows(db, "SELECT accelerator FROM run_summary") == [{"accelerator": "CPU"}]


def test_a_measure_under_another_name_is_reported_with_the_map_to_use(tmp_path):
    """Was: 'Total Training Time (min)' silently went to extra and training_time_s stayed NULL."""
    src = write(
        tmp_path / "t.csv",
        "device,framework,Total Training Time (min),Accuracy (%),frameworks_used\n"
        "jetson,pytorch,12.5,91.2,one\n",
    )
    report = import_results(tmp_path / "r.duckdb", src, kind="training")
    assert report.extra_columns == ["Total Training Time (min)", "frameworks_used"]
    assert report.notes == [
        "column 'Total Training Time (min)' looks like training_time_s but is kept as extra: "
        "if it is, import it with --map 'Total Training Time (min)=training_time_min'"
    ]
    mapped = import_results(
        tmp_path / "m.duckdb", src, kind="training", mappings=["Total Training Time (min)=training_time_min"]
    )
    assert mapped.notes == []
    assert rows(tmp_path / "m.duckdb", "SELECT training_time_s FROM training_summary") == [
        {"training_time_s": 750.0}
    ]


def test_a_file_without_measurements_is_refused_in_one_line(tmp_path):
    """Was: runs with no measurements, and no warning."""
    src = write(
        tmp_path / "t.csv",
        "device,framework,model,Inference Time (ms)\npi,pytorch,resnet,120\npi,tflite,resnet,80\n",
    )
    db = tmp_path / "r.duckdb"
    line = one_line_error(runner.invoke(app, ["import", str(db), str(src), "--kind", "inference"]))
    assert "no row carries a measurement" in line and "--long" in line
    assert "--map 'Inference Time (ms)=latency_ms'" in line
    assert not db.exists()


def test_rows_without_a_measurement_among_others_are_noted(tmp_path):
    src = write(
        tmp_path / "t.csv", "device,framework,latency_ms,status\npi,pytorch,3,\npi,tflite,,\npi,onnx,,error\n"
    )
    report = import_results(tmp_path / "r.duckdb", src, kind="inference")
    assert report.runs_added == 3 and any(
        "2 rows carry no measurement (rows 2, 3)" in n for n in report.notes
    )
    failed = write(tmp_path / "f.csv", "device,framework,latency_ms,status\npi,pytorch,,killed\n")
    assert import_results(tmp_path / "r.duckdb", failed, kind="inference").runs_added == 1, (
        "failed runs have no figures"
    )


def test_long_format_table_imports_into_the_canonical_measures(tmp_path):
    """pCAMP Table 3 as a phase breakdown, one row per phase: was imported as runs with no
    measurement and no warning."""
    src = write(
        tmp_path / "phases.csv",
        """
device,framework,model,phase,value,unit
Jetson TX2,PyTorch,alexnet,import,0.77,s
Jetson TX2,PyTorch,alexnet,load model,9.50,s
Jetson TX2,PyTorch,alexnet,total,14.17,s
Jetson TX2,PyTorch,squeezenet,import,740,ms
Jetson TX2,PyTorch,squeezenet,load model,6.20,s
Jetson TX2,PyTorch,squeezenet,total,10.41,s
""",
    )
    db = tmp_path / "r.duckdb"
    with pytest.raises(ImportFileError, match="no row carries a measurement.*--long"):
        import_results(db, src, kind="inference")
    with pytest.raises(ImportFileError, match="none of its metrics is a measure.*--map METRIC=DST"):
        import_results(db, src, kind="inference", long=True)
    report = import_results(
        db, src, kind="inference", long=True, mappings=["load model=load_time_s", "total=total_time_s"]
    )
    assert report.rows == 2 and report.runs_added == 2
    got = rows(
        db,
        "SELECT r.model, r.extra, res.load_time_s, res.total_time_s "
        "FROM runs r JOIN run_results res USING (run_id) ORDER BY r.model",
    )
    assert [(g["model"], g["load_time_s"], g["total_time_s"]) for g in got] == [
        ("alexnet", 9.5, 14.17),
        ("squeezenet", 6.2, 10.41),
    ]
    # a phase with no canonical name stays in extra, under its name and unit
    assert json.loads(got[1]["extra"]) == {"import (s)": None, "import (ms)": "740"}


def test_long_format_with_metric_names_that_carry_units(tmp_path):
    src = write(
        tmp_path / "m.csv",
        "device,model,metric,value\npi,resnet,latency_us,1500\npi,resnet,mem_max_gib,0.5\n"
        "pi,mobilenet,latency_us,700\n",
    )
    db = tmp_path / "r.duckdb"
    import_results(db, src, kind="inference", long=True)
    got = rows(db, "SELECT model, latency_median_ms, rss_peak_bytes FROM run_summary ORDER BY model")
    assert got == [
        {"model": "mobilenet", "latency_median_ms": pytest.approx(0.7), "rss_peak_bytes": None},
        {"model": "resnet", "latency_median_ms": pytest.approx(1.5), "rss_peak_bytes": 0.5 * 2**30},
    ]
    twice = write(
        tmp_path / "t.csv", "device,model,metric,value\npi,resnet,latency_ms,1\npi,resnet,latency_ms,2\n"
    )
    with pytest.raises(ImportFileError, match=r"rows 1, 2 give 'latency_ms' for the same run"):
        import_results(db, twice, kind="inference", long=True)
    with pytest.raises(ImportFileError, match="--long needs a column naming the metric"):
        import_results(
            db, write(tmp_path / "w.csv", "device,latency_ms\npi,3\n"), kind="inference", long=True
        )


# -- issue 15: thread counts a table leaves at the framework's default ----------------------------


def test_unset_or_default_threads_are_null_with_a_note(tmp_path):
    """Was: "'unset' is not a number"."""
    src = write(
        tmp_path / "t.csv",
        "device,framework,#THREADS,Training Time (s)\ns2,caffe,4,617.59\ns2,caffe,unset,785.22\n"
        "s2,torch,Default,7577.45\ns2,torch,,7000\n",
    )
    db = tmp_path / "r.duckdb"
    report = import_results(db, src, kind="training")
    assert report.notes == [
        "column '#THREADS' is empty or 'Default' or 'unset' in 3 rows (rows 2, 3, 4): threads stored "
        "as NULL (the framework's own default), the words kept in extra as threads_as_written"
    ]
    got = rows(
        db, "SELECT r.threads, r.extra FROM runs r JOIN run_results USING (run_id) ORDER BY training_time_s"
    )
    assert [g["threads"] for g in got] == [4, None, None, None]
    assert json.loads(got[1]["extra"]) == {"threads_as_written": "unset"}
    with pytest.raises(ImportFileError, match="'many' is not a number"):
        import_results(
            db,
            write(tmp_path / "b.csv", "device,framework,threads,latency_ms\ns2,caffe,many,3\n"),
            kind="inference",
        )


# -- issue 15: extra columns are typed and queryable ---------------------------------------------


def test_extra_columns_are_typed_columns_of_the_view_run_extra(tmp_path):
    """Was: extras only as JSON text, so `cpu_or_gpu` could not be grouped or filtered on and a GPU
    count was text."""
    src = write(
        tmp_path / "t.csv",
        """
device,framework,CPU or GPU,GPU count,Peak clock (MHz),table,training_time_s
s1,TensorFlow,GPU,2,"1,380",XIV,100
s1,TensorFlow,CPU,0,,XIV,900
s1,Caffe,GPU,1,900,n/a,120
""",
    )
    db = tmp_path / "r.duckdb"
    report = import_results(db, src, kind="training")
    assert report.extra_view == {
        "CPU or GPU": "cpu_or_gpu VARCHAR",
        "GPU count": "gpu_count DOUBLE",
        "Peak clock (MHz)": "peak_clock_mhz DOUBLE",
        "table": "extra_table VARCHAR",
    }
    with Store.open(db, read_only=True) as store:
        types = dict(
            store.con.execute(
                "SELECT column_name, data_type FROM duckdb_columns() WHERE table_name = 'run_extra'"
            ).fetchall()
        )
        assert types == {
            "run_id": "UUID",
            "cpu_or_gpu": "VARCHAR",
            "gpu_count": "DOUBLE",
            "peak_clock_mhz": "DOUBLE",
            "extra_table": "VARCHAR",
        }
        got = store.con.execute(
            "SELECT x.cpu_or_gpu, sum(x.gpu_count), max(x.peak_clock_mhz) FROM run_summary s "
            "JOIN run_extra x USING (run_id) GROUP BY ALL ORDER BY 1"
        ).fetchall()
    assert got == [("CPU", 0.0, None), ("GPU", 3.0, 1380.0)]
    # a later import adds its keys; runs without a key have NULL there, and every run has a row
    import_results(db, SAMPLE, kind="training")
    got = rows(db, "SELECT count(*) AS n, count(cpu_or_gpu) AS c FROM run_extra")
    assert got == [{"n": 8, "c": 3}]


def test_run_extra_values_lists_each_key_as_written(tmp_path):
    src = write(
        tmp_path / "t.csv", 'device,framework,latency_ms,firmware,"size, MB"\npi,tflite,3,v1.2,"1,024"\n'
    )
    db = tmp_path / "r.duckdb"
    import_results(db, src, kind="inference")
    got = rows(db, "SELECT key, value, value_num FROM run_extra_values ORDER BY key")
    assert got == [
        {"key": "firmware", "value": "v1.2", "value_num": None},
        {"key": "size, MB", "value": "1,024", "value_num": 1024.0},
    ]


def analyze_hyperparams(db: Path, *options: str) -> list[dict]:
    """`edgestats analyze DB --only hyperparams OPTIONS --json`, which must succeed: its entries."""
    result = runner.invoke(app, ["analyze", str(db), "--only", "hyperparams", *options, "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)["hyperparams"]


def test_extra_columns_work_in_analyze_by_where_factor_and_response(tmp_path):
    """Was: `--by cpu_or_gpu` gave 'not a run column' and `--where "extra->>'cpu_or_gpu' = 'CPU'"`
    a binder error; users mislabelled columns (CPU/GPU into runtime) to analyse them."""
    src = write(
        tmp_path / "t.csv",
        """
device,framework,CPU or GPU,GPU count,iterations,epochs_run,training_time_s,Peak clock (MHz)
s1,TensorFlow,GPU,1,1000,2.5,100,900
s1,TensorFlow,GPU,2,2000,5,190,900
s1,TensorFlow,GPU,4,3000,7.5,310,900
s1,TensorFlow,CPU,0,1000,2.5,900,"1,380"
s1,TensorFlow,CPU,0,2000,5,1800,"1,380"
s1,TensorFlow,CPU,0,3000,7.5,2700,"1,380"
""",
    )
    db = tmp_path / "r.duckdb"
    import_results(db, src, kind="training")
    entries = analyze_hyperparams(
        db, "--response", "training_time_s", "--factor", "iterations", "--by", "cpu_or_gpu"
    )
    groups = {json.dumps(e["group"]): e for e in entries}
    assert set(groups) == {'{"cpu_or_gpu": "CPU"}', '{"cpu_or_gpu": "GPU"}'}
    assert groups['{"cpu_or_gpu": "CPU"}']["n"] == 3 and groups['{"cpu_or_gpu": "CPU"}']["r_squared"] > 0.9999
    # --where on a typed extra (DOUBLE: a comparison with a number works) and one as text
    [entry] = analyze_hyperparams(
        db,
        "--response",
        "epoch_time_s",
        "--factor",
        "gpu_count",
        "--where",
        "gpu_count > 0 AND cpu_or_gpu = 'GPU' AND peak_clock_mhz < 1000",
        "--best",
        "min",
    )
    assert entry["n"] == 3
    # epoch time derived from the epochs run (fractional): 100/2.5, 190/5, 310/7.5 s per epoch
    assert entry["best"]["config"] == {"gpu_count": 2.0} and entry["best"]["value"] == pytest.approx(190 / 5)
    # a DB made by merge has no view run_extra, yet analyze still sees the extra columns
    merged = tmp_path / "m.duckdb"
    assert runner.invoke(app, ["merge", str(merged), str(db)]).exit_code == 0
    entries = analyze_hyperparams(
        merged, "--response", "training_time_s", "--factor", "iterations", "--where", "cpu_or_gpu = 'CPU'"
    )
    assert [e["n"] for e in entries] == [3]


def test_the_cli_prints_the_notes_and_where_the_extras_went(tmp_path):
    src = write(
        tmp_path / "t.csv",
        "device,framework,threads,Total Training Time (min),CPU or GPU,training_time_s\n"
        "s2,caffe,unset,12.5,GPU,700\n",
    )
    result = runner.invoke(app, ["import", str(tmp_path / "r.duckdb"), str(src), "--kind", "training"])
    assert result.exit_code == 0, result.output
    assert (
        "queryable in view run_extra as: total_training_time_min DOUBLE, cpu_or_gpu VARCHAR" in result.output
    )
    assert "note: column 'threads' is 'unset' in 1 row" in result.output
    assert "note: column 'Total Training Time (min)' looks like" not in result.output, (
        "training_time_s is given"
    )
