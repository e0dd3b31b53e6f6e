"""pipeline on collected batches (scipy's bootstrap as the reference) and on the Jetson study's
stall figures imported with the real importer; resources against scipy's Spearman."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from analysis_builders import import_sample, runs_frame
from scipy import stats

from edgestats.analysis import AnalysisOptions, run_analyses
from edgestats.analysis.estimators.intervals import BootstrapSettings
from edgestats.analysis.estimators.ratios import WELCH_LOG_METHOD
from edgestats.analysis.pipeline.analysis import pipeline
from edgestats.store.results import Store


def reductions(entries):
    return {
        (e["group"]["device"], e["group"].get("storage"), e["metric"], e["from_workers"], e["to_workers"]): e[
            "reduction_factor"
        ]
        for e in entries
        if e["part"] == "reduction"
    }


def test_jetson_study_pipelining_cuts_stalls(tmp_path):
    """Seed 003: going from 0 to 1 worker cuts the NX's SD-card stall from 502 s to 18.4 s (the
    paper rounds it to 26×) and the AGX's E2E time about in half; a second worker helps the HDD."""
    db = import_sample(tmp_path / "j.duckdb", "jetson_pipeline_stalls.csv", "training")
    entries = run_analyses(db, AnalysisOptions(only="pipeline"))["pipeline"].to_json()
    found = reductions(entries)
    sd = found[("Xavier NX", "SD", "stall_s", 0, 1)]
    assert sd["estimate"] == pytest.approx(502 / 18.4) and sd["n_unit"] == "runs"
    assert sd["ci_low"] is None and "not enough data" in sd["note"]  # one published figure per cell
    assert all(found[("Xavier AGX", s, "stall_s", 0, 1)]["estimate"] > 20 for s in ("HDD", "SD", "SSD"))
    assert found[("Xavier AGX", "HDD", "e2e_s", 0, 1)]["estimate"] == pytest.approx(605 / 308)
    assert found[("Xavier NX", "HDD", "stall_s", 1, 2)]["estimate"] == pytest.approx(173.8 / 18.9)
    assert ("Xavier NX", "SD", "stall_s", 1, 2) not in found  # no 2-worker figure given for the SD card
    workers = [
        e
        for e in entries
        if e["part"] == "workers" and e["group"] == {"device": "Xavier NX", "storage": "HDD"}
    ]
    assert [w["num_workers"] for w in workers] == [0, 1, 2]
    assert [w["stall_median_s"]["estimate"] for w in workers] == [704, 173.8, 18.9]


def write_training(db, stalls_by_workers: dict[int, list[list[int]]]) -> None:
    """One run per (workers, repeat): epochs of 4 batches whose stall_ns are given."""
    with Store.open(db) as store:
        device = store.register_device({"name": "Xavier NX"})
        for workers, runs in stalls_by_workers.items():
            for epochs in runs:
                batches = {
                    "epoch": [],
                    "batch": [],
                    "fetch_ns": [],
                    "stall_ns": [],
                    "compute_ns": [],
                    "e2e_ns": [],
                }
                for epoch, stall in enumerate(epochs):
                    for batch in range(4):
                        batches["epoch"].append(epoch)
                        batches["batch"].append(batch)
                        batches["stall_ns"].append(stall // 4)
                        batches["fetch_ns"].append(stall // 4 + 1000)
                        batches["compute_ns"].append(5_000_000)
                        batches["e2e_ns"].append(5_000_000 + stall // 4)
                table = pa.table(
                    {
                        k: pa.array(v, pa.int32() if k in ("epoch", "batch") else pa.int64())
                        for k, v in batches.items()
                    }
                )
                store.write_run(
                    {
                        "device_id": device,
                        "kind": "training",
                        "status": "ok",
                        "framework": "pytorch",
                        "storage": "SSD",
                        "num_workers": workers,
                        "batch_size": 32,
                    },
                    batches=table,
                )


def test_collected_epochs_give_intervals_over_epochs(tmp_path):
    """4 runs of 3 epochs: 12 epochs a worker count, enough to resample (from 10)."""
    rng = np.random.default_rng(3)
    data = {
        w: [list((rng.normal(centre, centre * 0.1, 3) * 1e9).astype(np.int64)) for _ in range(4)]
        for w, centre in ((0, 40.0), (1, 4.0), (2, 3.8))
    }
    db = tmp_path / "t.duckdb"
    write_training(db, data)
    options = AnalysisOptions(only="pipeline", n_resamples=999, seed=9)
    entries = run_analyses(db, options)["pipeline"].to_json()
    zero = next(e for e in entries if e["part"] == "workers" and e["num_workers"] == 0)
    stalls_0 = np.array([s // 4 * 4 for run in data[0] for s in run]) / 1e9
    assert zero["n"] == 12 and zero["n_unit"] == "epochs" and zero["n_runs"] == 4
    assert zero["stall_median_s"]["estimate"] == pytest.approx(np.median(stalls_0))
    ratio = reductions(entries)[("Xavier NX", "SSD", "stall_s", 0, 1)]
    stalls_1 = np.array([s // 4 * 4 for run in data[1] for s in run]) / 1e9
    reference = stats.bootstrap(
        (np.sort(stalls_0), np.sort(stalls_1)),
        lambda a, b, axis=-1: np.median(a, axis=axis) / np.median(b, axis=axis),
        vectorized=True,
        n_resamples=999,
        method="BCa",
        rng=options.settings.rng("mratio:pipeline|device=Xavier NX|storage=SSD|0->1|stall_s"),
    )
    assert ratio["estimate"] == pytest.approx(np.median(stalls_0) / np.median(stalls_1))
    assert (ratio["ci_low"], ratio["ci_high"]) == pytest.approx(tuple(reference.confidence_interval))
    assert ratio["ci_low"] > 5  # pipelining helps, and the interval says so


def test_few_runs_are_not_resampled_geometric_means_and_welch():
    """Three imported runs at 0 workers, two at 1: no bootstrap of 2-3 values (it would be their
    range). Each median is the geometric mean with the log-scale t interval, the reduction the
    ratio of the two with Welch's t interval of the logs, both against scipy."""
    stalls = {0: [40.0, 46.0, 43.0], 1: [4.1, 4.6]}
    runs = runs_frame(
        [
            {"kind": "training", "storage": "SD", "num_workers": w, "fetch_stall_s": v, "e2e_s": 100 + v}
            for w, values in stalls.items()
            for v in values
        ]
    )
    entries = pipeline(runs, None, level=0.95, settings=BootstrapSettings()).to_json()
    zero = next(e for e in entries if e["part"] == "workers" and e["num_workers"] == 0)["stall_median_s"]
    logs = np.log(stalls[0])
    low, high = stats.t.interval(0.95, 2, loc=logs.mean(), scale=stats.sem(logs))
    assert (zero["estimate"], zero["ci_low"], zero["ci_high"]) == pytest.approx(
        (np.exp(logs.mean()), np.exp(low), np.exp(high))
    )
    assert zero["n_unit"] == "runs" and zero["method"] == "t of log values (geometric mean)"
    one = next(e for e in entries if e["part"] == "workers" and e["num_workers"] == 1)["stall_median_s"]
    assert "two values" in one["note"]
    (ratio,) = [
        e["reduction_factor"] for e in entries if e["part"] == "reduction" and e["metric"] == "stall_s"
    ]
    welch = stats.ttest_ind(np.log(stalls[0]), np.log(stalls[1]), equal_var=False).confidence_interval(0.95)
    assert ratio["estimate"] == pytest.approx(zero["estimate"] / one["estimate"])
    assert (ratio["ci_low"], ratio["ci_high"]) == pytest.approx((np.exp(welch.low), np.exp(welch.high)))
    assert ratio["method"] == WELCH_LOG_METHOD


def test_resources_vs_batch_size_match_scipy_spearman():
    # DLaaS Table XXII, Caffe: CPU use falls and memory rises as the batch size grows
    runs = runs_frame(
        [
            {
                "kind": "training",
                "framework": "Caffe",
                "batch_size": b,
                "cpu_total_mean_pct": cpu,
                "rss_mean_bytes": mem * 1048576.0,
                "rss_peak_bytes": peak * 1048576.0,
            }
            for b, cpu, mem, peak in (
                (64, 49.31, 462.92, 484.38),
                (640, 49.34, 559.03, 584.04),
                (6400, 44.80, 1546.65, 1597.41),
                (60000, 40.86, 10395.47, 11009.01),
            )
        ]
    )
    result = pipeline(runs, None, level=0.95, settings=BootstrapSettings())
    found = {e["y"]: e["spearman"] for e in result.to_json() if e["part"] == "resources"}
    assert found["cpu_total_mean_pct"]["estimate"] == pytest.approx(
        stats.spearmanr([64, 640, 6400, 60000], [49.31, 49.34, 44.80, 40.86]).statistic
    )
    assert found["cpu_total_mean_pct"]["estimate"] < 0
    assert found["mem_mean_mb"]["estimate"] == 1.0 and found["mem_mean_mb"]["ci_low"] is None
    assert "perfect correlation" in found["mem_mean_mb"]["note"]


def test_no_pipeline_data_is_one_reason():
    result = pipeline(runs_frame([{"latency_median_ms": 3.0}]), None)
    assert not result.available and "fetch-stall" in result.to_json()[0]["reason"]
