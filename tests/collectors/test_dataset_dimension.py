"""Datasets as a dimension (issue 15): one dataset name for collected and imported runs, the path
in its own column, the dataset's size recorded and importable, and a training sweep over
`dataset make --scale` sizes giving training / end-to-end time against dataset size with intervals.

The sweep uses test_training.py's MNIST sizes (800 training samples at scale 2, 200 held out) and
mnist_cnn for one epoch, twice per size, so that every size has a spread.
Cost: about 25 s of test time in make test's parallel lane (measured from a fresh clone on 2 cores)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from edgestats.cli import app
from edgestats.collectors.training import synthetic as dataset_make
from edgestats.collectors.training.datasets import open_dataset
from edgestats.collectors.training.rows import dataset_columns
from edgestats.contracts import dataset_name
from edgestats.imports.importer import import_results
from edgestats.store.results import Store

runner = CliRunner()
SCALES = ("0.5", "1", "2")
BASE_N = 400  # x0.5, x1, x2: 200, 400, 800 training samples


def query(db: Path, sql: str) -> list[dict]:
    with Store.open(db, read_only=True) as store:
        return store.frame(sql).to_dicts()


@pytest.mark.parametrize(
    "written, name",
    [
        ("MNIST", "mnist"),
        ("CIFAR-10", "cifar10"),
        (" Cifar_10 ", "cifar10"),
        ("Tiny ImageNet", "tinyimagenet"),
        ("ÄÖ", "äö"),
        ("", None),
        (None, None),
    ],
)
def test_one_rule_spells_a_dataset_name(written, name):
    assert dataset_name(written) == name


def test_a_collected_mnist_run_and_an_imported_mnist_row_share_one_dataset_value(tmp_path):
    """The collector's name (from the worker's description of --data) and the importer's name of
    'MNIST' are the same value, so the runs group together; the path has its own column."""
    data = tmp_path / "My MNIST copy"
    dataset_make.make_dataset("mnist", data, 60, n_test=20)
    collected = dataset_columns(open_dataset(data).describe())
    assert collected["dataset"] == "mnist" and collected["dataset_path"] == str(data.resolve())
    assert (collected["dataset_samples"], collected["dataset_test_samples"]) == (60, 20)
    assert (collected["dataset_image_h"], collected["dataset_image_w"], collected["dataset_image_c"]) == (
        28,
        28,
        1,
    )
    on_disk = sum(f.stat().st_size for f in data.iterdir() if "idx" in f.name)
    assert collected["dataset_bytes"] == on_disk

    table = tmp_path / "published.csv"
    table.write_text(
        "device,framework,Dataset,Train Samples,Dataset (GB),Training Time (s)\n"
        "Server-1,TensorFlow,MNIST,60000,0.05,100\n"
    )
    db = tmp_path / "r.duckdb"
    report = import_results(db, table, kind="training")
    assert report.columns["Train Samples"] == "dataset_samples" and report.columns["Dataset (GB)"].startswith(
        "dataset_bytes"
    )
    (row,) = query(
        db,
        "SELECT r.dataset, r.dataset_path, r.dataset_samples, r.dataset_bytes, r.config, t.dataset_samples "
        "AS summary_samples FROM runs r JOIN training_summary t USING (run_id)",
    )
    assert row["dataset"] == collected["dataset"] == "mnist" and row["dataset_path"] is None
    assert row["dataset_samples"] == row["summary_samples"] == 60000
    assert row["dataset_bytes"] == round(0.05 * 2**30)  # GB read as GiB, like every memory column
    assert json.loads(row["config"])["dataset_as_written"] == "MNIST"


def test_an_image_folder_is_named_by_its_folder(tmp_path):
    data = tmp_path / "Flowers-102"
    dataset_make.make_dataset("imagefolder", data, 20, n_test=10, size=(32, 24))
    described = dataset_columns(open_dataset(data).describe())
    assert described["dataset"] == "flowers102" and described["dataset_samples"] == 20
    assert described["dataset_image_h"] is None  # each file has its own size


def make_scaled_datasets(tmp_path: Path) -> list[str]:
    """MNIST-format datasets at each of SCALES; returns their `--data` options for collect."""
    dirs = []
    for scale in SCALES:
        out = tmp_path / f"mnist-x{scale}"
        made = runner.invoke(
            app,
            [
                "dataset",
                "make",
                "--format",
                "mnist",
                "--out",
                str(out),
                "--n",
                str(BASE_N),
                "--n-test",
                "100",
                "--scale",
                scale,
            ],
        )
        assert made.exit_code == 0, made.output
        dirs += ["--data", str(out)]
    return dirs


def check_time_grows_with_the_samples(db: Path, response: str) -> None:
    """The hyperparams analysis of `response` against dataset_samples: a slope, main effects and a
    proportionality, each with its interval."""
    analysed = runner.invoke(
        app,
        [
            "analyze",
            str(db),
            "--only",
            "hyperparams",
            "--response",
            response,
            "--factor",
            "dataset_samples",
            "--json",
        ],
    )
    assert analysed.exit_code == 0, analysed.output
    (entry,) = json.loads(analysed.stdout)["hyperparams"]
    assert entry["n"] == 6 and entry["group"] == {}
    slope = next(t for t in entry["terms"] if t["term"] == "dataset_samples")
    # time grows with the samples (4x from the smallest to the largest); the interval's lower
    # end is not asserted above 0: two runs per size on a shared 2-core machine can be noisy
    assert slope["ci_low"] < slope["estimate"] < slope["ci_high"] and slope["estimate"] > 0, slope
    effects = [e for e in entry["main_effects"] if e["factor"] == "dataset_samples"]
    assert [e["value"] for e in effects] == [200, 400, 800] and all(e["n"] == 2 for e in effects)
    assert all(e["ci_low"] <= e["estimate"] <= e["ci_high"] for e in effects)
    assert effects[0]["estimate"] < effects[-1]["estimate"]
    (per_sample,) = entry["proportionality"]
    assert per_sample["factor"] == "dataset_samples"
    assert per_sample["slope"]["ci_low"] < per_sample["slope"]["estimate"] < per_sample["slope"]["ci_high"]


@pytest.mark.frameworks  # trains in PyTorch workers
@pytest.mark.xdist_group("training")
def test_time_against_dataset_size_with_intervals(tmp_path):
    """Issue 15's check: a training sweep over `dataset make --scale` sizes gives end-to-end time
    against dataset size in the hyperparams analysis, with intervals."""
    dirs = make_scaled_datasets(tmp_path)
    db = tmp_path / "r.duckdb"
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
            *dirs,
            "--epochs",
            "1",
            "-b",
            "32",
            "--repeat",
            "2",
        ],
    )
    assert result.exit_code == 0, result.output
    runs = query(
        db,
        "SELECT dataset, dataset_path, dataset_samples, dataset_test_samples, dataset_bytes, training_time_s "
        "FROM training_summary ORDER BY dataset_samples",
    )
    assert len(runs) == 6 and {r["dataset"] for r in runs} == {"mnist"}
    assert [r["dataset_samples"] for r in runs] == [200, 200, 400, 400, 800, 800]
    assert len({r["dataset_path"] for r in runs}) == 3 and all(r["dataset_bytes"] > 0 for r in runs)

    for response in ("training_time_s", "e2e_s"):
        check_time_grows_with_the_samples(db, response)
