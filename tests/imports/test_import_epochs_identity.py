"""edgestats import (issue 15): fractional epochs kept as given, and the import's identity (--map,
--device, --long) with --replace."""

from __future__ import annotations

import hashlib

import pytest
from cli_asserts import one_line_error
from import_builders import SAMPLE, rows, write
from typer.testing import CliRunner

from edgestats.cli import app
from edgestats.errors import ImportFileError
from edgestats.imports.importer import import_results

runner = CliRunner()

# -- issue 15: fractional epochs, epochs set and run, epoch time ---------------------------------

CAFFE_GPU = SAMPLE.parent / "dlaas_caffe_iterations_gpu.csv"


def test_fractional_epochs_are_stored_as_given_and_give_the_epoch_time(tmp_path):
    """DLaaS Table XIV gives '#Epochs (derived)' as iterations x batch / dataset size (10.67)."""
    db = tmp_path / "r.duckdb"
    report = import_results(db, CAFFE_GPU, kind="training")
    assert report.columns["#Epochs (derived)"] == "epochs_run"
    got = rows(
        db,
        "SELECT iterations, epochs, epochs_run, training_time_s, epoch_time_s FROM training_summary "
        "WHERE dataset = 'mnist' ORDER BY iterations",
    )
    assert got[0]["epochs_run"] == 10.67 and got[0]["epochs"] is None
    assert got[0]["epoch_time_s"] == pytest.approx(97.02 / 10.67)
    assert rows(db, "SELECT epochs_run FROM run_summary ORDER BY epochs_run LIMIT 1")[0]["epochs_run"] == 10.0


def test_a_fractional_epochs_column_goes_to_epochs_run_with_a_note(tmp_path):
    src = write(tmp_path / "e.csv", "framework,epochs,training_time_s\ncaffe,10.67,97.02\ncaffe,16,145.22\n")
    db = tmp_path / "r.duckdb"
    report = import_results(db, src, kind="training", device="gpu")  # was: "'10.67' is not a whole number"
    assert report.columns["epochs"] == "epochs_run"
    assert any("fractional epochs" in n and "row 1" in n for n in report.notes)
    got = rows(db, "SELECT epochs, epochs_run FROM runs ORDER BY epochs_run")
    assert got == [{"epochs": None, "epochs_run": 10.67}, {"epochs": None, "epochs_run": 16.0}]


def test_epochs_set_and_epochs_run_are_both_kept(tmp_path):
    src = write(
        tmp_path / "e.csv", "framework,epochs,epochs_run,training_time_s\ntf,20,7.5,300\ntf,20,20,800\n"
    )
    db = tmp_path / "r.duckdb"
    import_results(db, src, kind="training", device="pi")
    got = rows(db, "SELECT epochs, epochs_run, epoch_time_s FROM training_summary ORDER BY epochs_run")
    assert got == [
        {"epochs": 20, "epochs_run": 7.5, "epoch_time_s": 40.0},
        {"epochs": 20, "epochs_run": 20.0, "epoch_time_s": 40.0},
    ]
    # a reported per-epoch time wins over the derived one; without epochs_run the epochs set divide
    src2 = write(
        tmp_path / "f.csv", "framework,epochs,training_time_s,epoch_time_min\ntf,10,600,1.5\ntf,10,600,\n"
    )
    import_results(db, src2, kind="training", device="pi")
    got = rows(
        db, "SELECT epoch_time_s FROM training_summary WHERE source = 'import:f.csv' ORDER BY epoch_time_s"
    )
    assert got == [{"epoch_time_s": 60.0}, {"epoch_time_s": 90.0}]


@pytest.mark.parametrize(
    "text, match",
    [
        (
            "framework,epochs,epochs_run\ntf,10.5,10\n",
            r"row 1, column 'epochs': '10.5' is not a whole number, and column 'epochs_run'",
        ),
        ("framework,epochs_run\ntf,-1\n", r"row 1 .*'-1' is negative \(epochs_run"),
    ],
)
def test_epoch_columns_that_cannot_be_stored_are_refused(tmp_path, text, match):
    with pytest.raises(ImportFileError, match=match):
        import_results(tmp_path / "r.duckdb", write(tmp_path / "bad.csv", text), kind="training", device="x")


# -- issue 15: the import's identity includes --map and --device -------------------------------


def test_reimport_with_another_mapping_is_refused_then_replaced(tmp_path):
    """Was: '0 runs added, 2 already in' and the wrong mapping stayed."""
    src = write(tmp_path / "t.csv", "board,framework,t1,t2\npi,pytorch,10,900\npi,tflite,8,700\n")
    db = tmp_path / "r.duckdb"
    first = import_results(db, src, kind="inference", mappings=["board=device", "t2=latency_ms"])
    assert first.runs_added == 2
    before = hashlib.sha256(db.read_bytes()).hexdigest()
    with pytest.raises(
        ImportFileError,
        match=r"already holds this file imported with another mapping .*2 runs with "
        r"--map 'board=device' --map 't2=latency_ms'.*--replace",
    ):
        import_results(db, src, kind="inference", mappings=["board=device", "t1=latency_ms"])
    assert hashlib.sha256(db.read_bytes()).hexdigest() == before
    again = import_results(
        db, src, kind="inference", mappings=["board=device", "t1=latency_ms"], replace=True
    )
    assert again.runs_added == 2 and again.runs_replaced == 2
    assert sorted(r["latency_ms"] for r in rows(db, "SELECT latency_ms FROM run_results")) == [8.0, 10.0]
    assert rows(db, "SELECT count(*) AS n FROM runs")[0]["n"] == 2
    # the same mapping again (in another order) is the same import
    same = import_results(db, src, kind="inference", mappings=["t1=latency_ms", "board=device"])
    assert same.runs_added == 0 and same.runs_already_present == 2


def test_reimport_with_another_device_is_refused_then_replaced(tmp_path):
    src = write(tmp_path / "t.csv", "framework,latency_ms\npytorch,10\n")
    db = tmp_path / "r.duckdb"
    import_results(db, src, kind="inference", device="pi 3")
    with pytest.raises(ImportFileError, match="--device 'pi 3'"):
        import_results(db, src, kind="inference", device="pi 4")
    import_results(db, src, kind="inference", device="pi 4", replace=True)
    assert rows(db, "SELECT device FROM run_summary") == [{"device": "pi 4"}]


def test_plain_reimport_keeps_the_run_ids_of_earlier_versions(tmp_path):
    """No --map and no --device: the run id is still (file hash, row), as edgestats gave it
    before, so a DB imported by an earlier version stays idempotent."""
    from edgestats.contracts import name_uuid

    db = tmp_path / "r.duckdb"
    import_results(db, SAMPLE, kind="training")
    digest = hashlib.sha256(SAMPLE.read_bytes()).hexdigest()
    ids = {r["run_id"] for r in rows(db, "SELECT CAST(run_id AS VARCHAR) AS run_id FROM runs")}
    assert str(name_uuid("import", digest, "1")) in ids


def test_replace_takes_away_an_earlier_version_of_the_file(tmp_path):
    src = write(tmp_path / "t.csv", "device,framework,latency_ms\npi,pytorch,10\npi,tflite,9\n")
    db = tmp_path / "r.duckdb"
    import_results(db, src, kind="inference")
    write(src, "device,framework,latency_ms\npi,pytorch,11\npi,tflite,9\n")  # a typo corrected
    kept = import_results(db, src, kind="inference")
    assert kept.runs_added == 2 and any("other content" in n and "--replace" in n for n in kept.notes)
    replaced = import_results(db, src, kind="inference", replace=True)
    assert replaced.runs_replaced == 4 and replaced.runs_added == 2
    assert sorted(r["latency_ms"] for r in rows(db, "SELECT latency_ms FROM run_results")) == [9.0, 11.0]


def test_replace_on_the_cli_says_what_it_did(tmp_path):
    db = tmp_path / "r.duckdb"
    src = write(tmp_path / "t.csv", "framework,latency_ms\npytorch,10\n")
    assert (
        runner.invoke(app, ["import", str(db), str(src), "--kind", "inference", "--device", "a"]).exit_code
        == 0
    )
    refused = one_line_error(
        runner.invoke(app, ["import", str(db), str(src), "--kind", "inference", "--device", "b"])
    )
    assert "--replace" in refused
    ok = runner.invoke(
        app, ["import", str(db), str(src), "--kind", "inference", "--device", "b", "--replace"]
    )
    assert (
        ok.exit_code == 0
        and "1 run added, 0 already in" in ok.output
        and "1 run of its earlier import replaced" in ok.output
    )
