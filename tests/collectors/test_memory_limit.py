"""--memory-limit-mb: a batch size that does not fit is stored as an error with what the run
measured (phases, telemetry), and the smaller batch size of the same sweep still runs.
Cost: about 9 s of test time in make test's parallel lane (measured from a fresh clone on 2 cores)."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from edgestats.cli import app
from edgestats.collectors.training.synthetic import make_dataset
from edgestats.store.results import Store

runner = CliRunner()


@pytest.mark.frameworks  # trains in PyTorch workers
def test_batch_size_past_the_memory_limit_is_an_error_with_what_it_measured(tmp_path: Path):
    data = tmp_path / "mnist"
    make_dataset("mnist", data, 1000, n_test=100)
    db = tmp_path / "r.duckdb"
    # mnist_cnn's first conv layer at batch 1000 needs a 100 MB activation on top of ~450 MB of
    # PyTorch; batch 16 fits in 500 MiB with room to spare (peak RSS ~390 MB here)
    result = runner.invoke(
        app,
        [
            "collect",
            "--db",
            str(db),
            "--kind",
            "training",
            "-f",
            "pytorch",
            "-m",
            "mnist_cnn",
            "--data",
            str(data),
            "--epochs",
            "1",
            "--batch-size",
            "16",
            "--batch-size",
            "1000",
            "--learning-rate",
            "0.01",
            "--memory-limit-mb",
            "500",
            "--power",
            "none",
        ],
    )
    assert result.exit_code == 0, result.output
    with Store.open(db, read_only=True) as store:
        check_batch_1000_failed_with_what_it_measured(store)


def check_batch_1000_failed_with_what_it_measured(store: Store) -> None:
    """Batch 16 ran; batch 1000 is an error naming the limit, with its phases and RSS samples."""
    runs = {
        r["batch_size"]: r
        for r in store.frame(
            "SELECT batch_size, status, error_text, environment->>'memory_limit_bytes' AS limit_bytes "
            "FROM runs"
        ).to_dicts()
    }
    assert runs[16]["status"] == "ok"
    failed = runs[1000]
    assert failed["status"] == "error"
    assert failed["error_text"].startswith("out of memory under --memory-limit-mb 500")
    assert "can't allocate memory" in failed["error_text"]
    assert failed["limit_bytes"] == str(500 * 2**20)
    phases = [
        r[0]
        for r in store.con.execute(
            "SELECT phase FROM phases JOIN runs USING (run_id) WHERE batch_size = 1000 ORDER BY seq"
        ).fetchall()
    ]
    assert {"import", "load_dataset", "build_model"} <= set(phases)
    samples = store.con.execute(
        "SELECT count(*) FROM samples JOIN runs USING (run_id) "
        "WHERE batch_size = 1000 AND metric = 'rss_bytes'"
    ).fetchall()[0][0]
    assert samples >= 5


def test_memory_limit_below_one_mib_is_refused_before_any_run(tmp_path: Path):
    result = runner.invoke(
        app,
        [
            "collect",
            "--db",
            str(tmp_path / "r.duckdb"),
            "-f",
            "onnxruntime",
            "-m",
            "cnn9",
            "--memory-limit-mb",
            "0.5",
        ],
    )
    assert result.exit_code == 1 and "memory_limit_mb" in result.output and "at least 1" in result.output
    assert not (tmp_path / "r.duckdb").exists()
