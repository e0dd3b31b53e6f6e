"""summary on hand-built frames and on a real DB: the run as the unit, imported runs, the latency
distribution. The phase breakdown is in test_breakdown.py."""

from __future__ import annotations

import json

import numpy as np
import polars as pl
import pyarrow as pa
import pytest
from analysis_builders import latencies_frame, runs_frame
from scipy import stats

from edgestats.analysis import AnalysisOptions, run_analyses
from edgestats.analysis.estimators.intervals import BootstrapSettings, order_statistic_ranks
from edgestats.analysis.summary.analysis import summarise
from edgestats.formatting import format_number
from edgestats.store.results import Store

SETTINGS = BootstrapSettings(n_resamples=999, bca_max_n=100, seed=3)
CONFIG = ["device", "framework", "model"]


def weighted_quantile(values: np.ndarray, weights: np.ndarray, q: float) -> float:
    """An independent weighted quantile: numpy's linear rule on the weighted mid-ranks (with equal
    weights, np.quantile itself)."""
    order = np.argsort(values)
    x, w = values[order], weights[order]
    mid = np.cumsum(w) - w / 2
    return float(np.interp(q, (mid - mid[0]) / (mid[-1] - mid[0]), x))


def metrics_of(entry: dict) -> dict:
    return {m["metric"]: m for m in entry["metrics"]}


def collected_run(latencies_ms: np.ndarray, *, rss_peak_bytes: float) -> dict:
    """A collected run's row at batch size 4, its median and mean from its own latencies."""
    return {
        "n_latencies": len(latencies_ms),
        "latency_median_ms": float(np.median(latencies_ms)),
        "latency_mean_ms": float(latencies_ms.mean()),
        "rss_peak_bytes": rss_peak_bytes,
        "batch_size": 4,
    }


def test_collected_runs_take_the_run_as_unit():
    """Each run gives its own median / p99 / mean; the configuration's interval is across runs
    (t on the log scale, df = runs - 1), not over the pooled latencies (which ignored run-to-run
    variance: tests/analysis/test_hierarchical.py measures how badly)."""
    rng = np.random.default_rng(0)
    a, b = rng.lognormal(1.0, 0.2, 150), rng.lognormal(1.0, 0.2, 90)
    runs = runs_frame([collected_run(a, rss_peak_bytes=2e8), collected_run(b, rss_peak_bytes=3e8)])
    result = summarise(runs, latencies_frame({0: a.tolist(), 1: b.tolist()}), by=CONFIG, settings=SETTINGS)
    (entry,) = result.to_json()
    assert (
        entry["n"] == 2 and entry["n_unit"] == "runs" and entry["n_latencies"] == 240 and entry["n_runs"] == 2
    )
    metrics = metrics_of(entry)
    median = metrics["latency_median_ms"]
    logs = np.log([np.median(a), np.median(b)])
    assert median["estimate"] == pytest.approx(np.exp(logs.mean()))
    assert (
        median["n"] == 2
        and median["n_unit"] == "runs"
        and median["method"].startswith("run-level t on the log scale")
    )
    low, high = stats.t.interval(0.95, 1, loc=logs.mean(), scale=stats.sem(logs))
    assert (median["ci_low"], median["ci_high"]) == pytest.approx((np.exp(low), np.exp(high)))
    # the typical run's p90: the geometric mean of the runs' own p90 (p99 needs 100 latencies a run:
    # run b's 90 leave it out, and the note says so)
    p90 = np.log([np.quantile(a, 0.9), np.quantile(b, 0.9)])
    assert metrics["latency_p90_typical_run_ms"]["estimate"] == pytest.approx(np.exp(p90.mean()))
    assert metrics["latency_p99_typical_run_ms"]["estimate"] == pytest.approx(np.quantile(a, 0.99))
    assert "1 run with fewer than 100 steady latencies left out of p99" in metrics["latency_p99_ms"]["note"]
    assert metrics["latency_p90_ms"]["method"].startswith("across processes: ")
    # mean latency: the mean of the runs' means; throughput = batch_size / it, its interval mapped from
    # the mean's
    mean = metrics["latency_mean_ms"]
    assert (
        mean["estimate"] == pytest.approx((a.mean() + b.mean()) / 2) and 0 < mean["ci_low"] < mean["ci_high"]
    )
    assert metrics["throughput_per_s"]["estimate"] == pytest.approx(4000 / mean["estimate"])
    assert metrics["throughput_per_s"]["ci_low"] == pytest.approx(4000 / mean["ci_high"])
    assert (
        metrics["rss_peak_bytes"]["estimate"] == pytest.approx(2.5e8) and metrics["rss_peak_bytes"]["n"] == 2
    )
    assert metrics["rss_peak_bytes"]["ci_low"] > 0  # a plain t interval: 2.5e8 ± 12.7 × 0.5e8, below 0
    energy = metrics["energy_per_inference_j"]
    assert energy["estimate"] is None and energy["note"].startswith(
        "not enough data: energy was not measured"
    )
    components = entry["variance_components"]
    assert (components["n_runs"], components["n_latencies"]) == (2, 240) and components[
        "between_run_var"
    ] >= 0
    assert entry["recommendation"]["runs"] is None or entry["recommendation"]["runs"] >= 2
    frame = result.frames["metrics"]
    assert {"metric", "estimate", "ci_low", "ci_high", "level", "n", "n_unit", *CONFIG} <= set(frame.columns)
    assert result.frames["variance"]["n_runs"].to_list() == [2]


def test_one_collected_run_says_its_interval_is_within_run_only():
    rng = np.random.default_rng(4)
    a = rng.lognormal(1.0, 0.2, 150)
    runs = runs_frame(
        [{"n_latencies": 150, "latency_median_ms": float(np.median(a)), "latency_mean_ms": float(a.mean())}]
    )
    (entry,) = summarise(runs, latencies_frame({0: a.tolist()}), by=CONFIG, settings=SETTINGS).to_json()
    median = metrics_of(entry)["latency_median_ms"]
    assert (
        median["estimate"] == pytest.approx(np.median(a))
        and median["n_unit"] == "latencies"
        and median["n"] == 150
    )
    pooled = np.sort(a)
    r, s = order_statistic_ranks(150, 0.5, 0.95)
    assert (median["ci_low"], median["ci_high"]) == (pooled[r - 1], pooled[s - 1])
    assert "one run: the interval covers within-run variance only" in median["note"]
    assert entry["recommendation"]["runs"] is None and "at least 2 runs" in entry["recommendation"]["note"]


def test_imported_runs_give_intervals_across_runs():
    runs = runs_frame(
        [
            {"latency_median_ms": v, "latency_mean_ms": v, "energy_per_inference_j": e}
            for v, e in [(10.0, 0.5), (12.0, 0.6), (11.0, 0.55), (13.5, 0.7)]
        ]
    )
    (entry,) = summarise(runs, None, by=CONFIG, settings=SETTINGS).to_json()
    metrics = metrics_of(entry)
    assert metrics["latency_median_ms"]["n_unit"] == "runs" and metrics["latency_median_ms"]["n"] == 4
    # the geometric mean of the runs' medians with the t interval of their logs, as collected runs
    logs = np.log([10.0, 12.0, 11.0, 13.5])
    low, high = stats.t.interval(0.95, 3, loc=logs.mean(), scale=stats.sem(logs))
    median = metrics["latency_median_ms"]
    assert median["estimate"] == pytest.approx(np.exp(logs.mean()))
    assert (median["ci_low"], median["ci_high"]) == pytest.approx((np.exp(low), np.exp(high)))
    assert metrics["latency_p90_ms"]["estimate"] is None and "tail" in metrics["latency_p90_ms"]["note"]
    assert metrics["energy_per_inference_j"]["estimate"] == pytest.approx(0.5875)
    assert metrics["energy_per_inference_j"]["ci_low"] < 0.5875 < metrics["energy_per_inference_j"]["ci_high"]


def test_imported_tails_are_the_typical_runs_from_what_each_run_reported():
    """A benchmark tool's own p90 per run (run_results, 0007): the typical run's p90 is their
    geometric mean with the log-t interval across runs; a run that printed none is left out and
    counted in the note; the configuration's p90 across processes stays null (it needs the runs'
    latencies) and its note gives the range of the runs' p90; with no run reporting one both are
    unknown."""
    p90 = [10.9, 13.1, None, 12.0, 14.2]
    runs = runs_frame(
        [
            {"latency_median_ms": 10.0 + i, "latency_mean_ms": 10.0 + i, "latency_p90_ms": v}
            for i, v in enumerate(p90)
        ]
    )
    (entry,) = summarise(runs, None, by=CONFIG, settings=SETTINGS).to_json()
    typical = metrics_of(entry)["latency_p90_typical_run_ms"]
    logs = np.log([v for v in p90 if v is not None])
    low, high = stats.t.interval(0.95, 3, loc=logs.mean(), scale=stats.sem(logs))
    assert typical["estimate"] == pytest.approx(np.exp(logs.mean()))
    assert (typical["ci_low"], typical["ci_high"]) == pytest.approx((np.exp(low), np.exp(high)))
    assert (
        typical["n"] == 4 and typical["n_unit"] == "runs" and typical["method"].startswith("the typical run")
    )
    assert "each run's own p90" in typical["note"] and "1 run without one left out" in typical["note"]
    across = metrics_of(entry)["latency_p90_ms"]
    assert across["estimate"] is None and across["ci_low"] is None and "10.9–14.2 ms" in across["note"]
    assert metrics_of(entry)["latency_p99_ms"]["estimate"] is None
    assert metrics_of(entry)["latency_p99_typical_run_ms"]["estimate"] is None


def test_one_run_with_one_latency_is_reported_without_an_interval():
    runs = runs_frame([{"n_latencies": 1, "latency_median_ms": 5.0, "latency_mean_ms": 5.0}])
    result = summarise(runs, latencies_frame({0: [5.0]}), by=CONFIG)
    text = json.dumps(result.to_json(), allow_nan=False)
    metrics = metrics_of(result.to_json()[0])
    assert metrics["latency_median_ms"]["estimate"] == 5.0 and metrics["latency_median_ms"]["ci_low"] is None
    assert "not enough data" in metrics["latency_median_ms"]["note"] and "NaN" not in text


def test_summary_without_latencies_says_so():
    result = summarise(runs_frame([{"kind": "training", "training_time_s": 10.0}]), None, by=CONFIG)
    assert not result.available and result.to_json()[0]["reason"].startswith("not enough data")


def test_summary_on_a_real_db(results_db):
    result = run_analyses(results_db, AnalysisOptions(only="summary", seed=1))["summary"]
    entries = result.to_json()
    assert {e["group"]["framework"] for e in entries} == {"pytorch", "onnxruntime"}
    pytorch = next(e for e in entries if e["group"]["framework"] == "pytorch")
    assert pytorch["n"] == 2 and pytorch["n_latencies"] == 90  # 2 runs × 45 steady (5 warm-up left out)
    again = run_analyses(results_db, AnalysisOptions(only="summary", seed=1))["summary"].to_json()
    assert again == entries


# -- the latency distribution (box plot and ECDF frames) ------------------------------------------

BOX = {
    "min_ms": 0.0,
    "q01_ms": 0.01,
    "q05_ms": 0.05,
    "q25_ms": 0.25,
    "median_ms": 0.5,
    "q75_ms": 0.75,
    "q95_ms": 0.95,
    "q99_ms": 0.99,
    "max_ms": 1.0,
}


def _write_latencies(
    store: Store, device, model: str, steady_ms: list[float], warmup_ms: list[float]
) -> None:
    values = [*warmup_ms, *steady_ms]
    store.write_run(
        {
            "device_id": device,
            "kind": "inference",
            "status": "ok",
            "framework": "pytorch",
            "model": model,
            "batch_size": 1,
            "threads": 2,
            "iterations": len(values),
        },
        latencies=pa.table(
            {
                "iteration": pa.array(range(len(values)), pa.int32()),
                "warmup": [i < len(warmup_ms) for i in range(len(values))],
                "start_ns": [i * 10_000_000 for i in range(len(values))],
                "latency_ns": [int(round(v * 1e6)) for v in values],
            }
        ),
    )


def test_distribution_matches_numpy_quantiles_of_the_steady_latencies(tmp_path):
    rng = np.random.default_rng(11)
    a1, a2, b = (np.round(rng.lognormal(1.0, 0.4, n), 6) for n in (37, 23, 5))
    db = tmp_path / "dist.duckdb"
    with Store.open(db) as store:
        device = store.register_device({"name": "pi"})
        _write_latencies(store, device, "squeezenet", a1.tolist(), warmup_ms=[500.0, 400.0])
        _write_latencies(store, device, "squeezenet", a2.tolist(), warmup_ms=[300.0])
        _write_latencies(store, device, "cnn9", b.tolist(), warmup_ms=[])
    result = run_analyses(db, AnalysisOptions(only="summary"))["summary"]
    frame = result.frames["distribution"]
    assert frame["model"].to_list() == ["cnn9", "squeezenet"]  # the metrics frame's group order
    for model, values in {"squeezenet": np.concatenate([a1, a2]), "cnn9": b}.items():
        row = frame.filter(pl.col("model") == model).row(0, named=True)
        assert row["n"] == len(values) and row["n_unit"] == "latencies"  # warm-up left out
        expected = np.quantile(values, list(BOX.values()))
        assert [row[c] for c in BOX] == pytest.approx(expected, rel=1e-9, abs=1e-9)
        ecdf = result.frames["ecdf"].filter(pl.col("model") == model).sort("p")
        assert ecdf.height == 51 and ecdf["p"].to_list() == pytest.approx(np.linspace(0, 1, 51))
        assert ecdf["latency_ms"].to_list() == pytest.approx(
            np.quantile(values, np.linspace(0, 1, 51)), rel=1e-9
        )
        entry = next(e for e in result.to_json() if e["group"]["model"] == model)
        # the box describes the pooled sample; the median's estimate is the run-level one: the
        # same for one run, the geometric mean of the runs' medians for several
        runs_of_model = {"squeezenet": [a1, a2], "cnn9": [b]}[model]
        for column, metric, q in (
            ("median_ms", "latency_median_ms", 0.5),
            ("q99_ms", "latency_p99_typical_run_ms", 0.99),
        ):
            expected = np.exp(np.mean([np.log(np.quantile(run, q)) for run in runs_of_model]))
            assert metrics_of(entry)[metric]["estimate"] == pytest.approx(expected, rel=1e-9)
            if len(runs_of_model) == 1:
                assert entry["distribution"][column] == pytest.approx(metrics_of(entry)[metric]["estimate"])
        # no run has 100 latencies: the p99 across processes is the sample quantile of the runs'
        # equal-weight mixture, without an interval, marked
        p99 = metrics_of(entry)["latency_p99_ms"]
        weights = np.concatenate([np.full(len(run), 1 / len(run)) for run in runs_of_model])
        assert p99["estimate"] == pytest.approx(
            weighted_quantile(np.concatenate(runs_of_model), weights, 0.99)
        )
        assert p99["ci_low"] is None and p99["note"].startswith("too few latencies for p99")


@pytest.mark.parametrize("values", [[4.25], [3.0] * 40], ids=["one latency", "all equal"])
def test_distribution_of_degenerate_samples_is_flat(values):
    runs = runs_frame(
        [{"n_latencies": len(values), "latency_median_ms": values[0], "latency_mean_ms": values[0]}]
    )
    result = summarise(runs, latencies_frame({0: values}), by=CONFIG)
    (row,) = result.frames["distribution"].to_dicts()
    assert row["n"] == len(values) and all(row[c] == values[0] for c in BOX)
    assert set(result.frames["ecdf"]["latency_ms"]) == {values[0]}
    json.dumps(result.to_json(), allow_nan=False)


def test_distribution_of_imported_runs_is_across_their_medians():
    medians = [10.0, 12.0, 11.0, 13.5]
    runs = runs_frame(
        [{"latency_median_ms": v, "latency_mean_ms": v} for v in medians]
        + [
            {"model": "cnn9", "n_latencies": 3, "latency_median_ms": 2.0, "latency_mean_ms": 2.0},
            {"model": "cnn9", "latency_median_ms": 50.0, "latency_mean_ms": 50.0},
        ]
    )
    result = summarise(runs, latencies_frame({4: [1.0, 2.0, 3.0]}), by=CONFIG, settings=SETTINGS)
    rows = {r["model"]: r for r in result.frames["distribution"].to_dicts()}
    imported = rows["squeezenet"]
    assert imported["n"] == 4 and imported["n_unit"] == "runs" and "imported" in imported["note"]
    assert [imported[c] for c in BOX] == pytest.approx(np.quantile(medians, list(BOX.values())))
    mixed = rows["cnn9"]  # pooled latencies only; the run without rows is left out, as the median does
    assert mixed["n"] == 3 and mixed["n_unit"] == "latencies" and mixed["max_ms"] == 3.0
    assert "1 run without per-inference rows left out" in mixed["note"]


# -- split runs (edgestats/analysis/estimators/modality.py) ------------------------------------------------


def imported(medians: list[float], model: str = "squeezenet") -> list[dict]:
    return [{"model": model, "latency_median_ms": v, "latency_mean_ms": v} for v in medians]


def test_clustered_runs_are_flagged_with_their_clusters_and_a_note():
    rng = np.random.default_rng(8)
    medians = np.concatenate([8.1 * np.exp(rng.normal(0, 0.003, 7)), 8.8 * np.exp(rng.normal(0, 0.003, 3))])
    steady = 8.0 * np.exp(rng.normal(0, 0.01, 10))
    runs = runs_frame(imported(medians.round(4).tolist()) + imported(steady.round(4).tolist(), "cnn9"))
    result = summarise(runs, None, by=CONFIG, settings=SETTINGS)
    entries = {e["group"]["model"]: e for e in result.to_json()}
    split = entries["squeezenet"]
    assert split["multimodal"] is True and split["multimodal_p_value"] < 0.05
    assert [c["n_runs"] for c in split["clusters"]] == [7, 3]
    assert [round(c["centre"], 1) for c in split["clusters"]] == [8.1, 8.8]
    assert entries["cnn9"]["multimodal"] is False and "clusters" not in entries["cnn9"]
    (note,) = result.notes
    slow, fast = (format_number(c["centre"]) for c in split["clusters"])
    assert note.startswith("(device dev, framework pytorch, model squeezenet) runs form 2 clusters: ")
    assert f"7 at {slow} ms, 3 at {fast} ms" in note


def test_too_few_runs_are_not_tested():
    (entry,) = summarise(runs_frame(imported([8.0, 8.2, 8.1])), None, by=CONFIG).to_json()
    assert entry["multimodal"] is False and entry["multimodal_p_value"] is None


def test_cluster_notes_are_capped(monkeypatch):
    """A stub of modality's interface: every configuration split; five notes, then a count."""
    from edgestats.analysis.estimators.modality import Modality
    from edgestats.analysis.summary import analysis as summary

    clusters = [{"n_runs": 4, "centre": 8.1}, {"n_runs": 3, "centre": 8.8}]
    monkeypatch.setattr(
        summary,
        "run_modality_batch",
        lambda medians: [Modality(True, 0.01, clusters, "stub", None) for _ in medians],
    )
    rows = [row for m in range(7) for row in imported([8.0, 8.1], f"m{m}")]
    result = summarise(runs_frame(rows), None, by=CONFIG)
    assert all(e["multimodal"] and e["clusters"] == clusters for e in result.to_json())
    assert len(result.notes) == summary.MAX_CLUSTER_NOTES + 1
    assert result.notes[0].endswith(
        "runs form 2 clusters: 4 at 8.10 ms, 3 at 8.80 ms; its figures average over processes in "
        "different states"
    )
    assert result.notes[-1] == "2 more configurations with clustered runs (--json has them)"
