"""energy and tradeoff against scipy / statsmodels on hand-built frames, degenerate input included."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
import statsmodels.api as sm
from analysis_builders import latencies_frame, runs_frame
from scipy import stats
from statsmodels.stats.multitest import multipletests

from edgestats.analysis.energy.analysis import energy
from edgestats.analysis.estimators.intervals import BootstrapSettings
from edgestats.analysis.tradeoff.analysis import tradeoff
from edgestats.analysis.tradeoff.points import pareto_mask

CONFIG = ["device", "framework", "model"]
SETTINGS = BootstrapSettings(n_resamples=999, bca_max_n=100, seed=2)


def energy_runs():
    """Two devices × four frameworks × two repeats; energy grows with latency (pCAMP Insight 3)."""
    rng = np.random.default_rng(8)
    rows = []
    for device, watts in (("FogNode", 30.0), ("Jetson TX2", 8.0)):
        for framework, latency in (
            ("tensorflow", 27.0),
            ("pytorch", 38.0),
            ("mxnet", 35.0),
            ("caffe2", 108.0),
        ):
            for _ in range(2):
                ms = latency * (1 + 0.03 * rng.standard_normal())
                rows.append(
                    {
                        "device": device,
                        "framework": framework,
                        "model": "alexnet",
                        "latency_median_ms": ms,
                        "latency_mean_ms": ms,
                        "energy_per_inference_j": watts * ms / 1000 * (1 + 0.05 * rng.standard_normal()),
                    }
                )
    return runs_frame(rows)


def test_time_energy_correlation_and_fit_match_scipy_and_statsmodels():
    """Both over configurations (each one's mean over runs); more in test_energy_fit.py."""
    runs = energy_runs()
    result = energy(runs, None, config=CONFIG, by=["device"])
    parts = {(e["part"], e["group"]["device"]): e for e in result.to_json()}
    fog = parts[("correlation", "FogNode")]
    means = (
        runs.group_by("device", "framework")
        .agg(pl.col("latency_mean_ms").mean(), pl.col("energy_per_inference_j").mean())
        .sort("framework")
    )
    fog_means = means.filter(pl.col("device") == "FogNode")
    reference = stats.pearsonr(fog_means["latency_mean_ms"], fog_means["energy_per_inference_j"])
    assert fog["n"] == 4 and fog["n_unit"] == "configurations" and fog["x"] == "latency_mean_ms"
    assert fog["pearson"]["estimate"] == pytest.approx(reference.statistic)
    assert (fog["pearson"]["ci_low"], fog["pearson"]["ci_high"]) == pytest.approx(
        tuple(reference.confidence_interval())
    )
    rho = stats.spearmanr(fog_means["latency_mean_ms"], fog_means["energy_per_inference_j"]).statistic
    assert fog["spearman"]["estimate"] == pytest.approx(rho) and rho > 0  # slower is hungrier (Insight 3)
    fit = parts[("fit", "Jetson TX2")]
    jetson = means.filter(pl.col("device") == "Jetson TX2")
    ols = sm.OLS(
        jetson["energy_per_inference_j"].to_numpy(), sm.add_constant(jetson["latency_mean_ms"].to_numpy())
    ).fit()
    slope = next(t for t in fit["terms"] if t["term"] == "slope_j_per_ms")
    assert (fit["n"], fit["n_unit"], fit["n_runs"]) == (4, "configurations", 8)
    assert slope["estimate"] == pytest.approx(ols.params[1]) and slope["ci_low"] == pytest.approx(
        ols.conf_int()[1][0]
    )
    assert slope["estimate"] == pytest.approx(0.008, rel=0.1)  # ≈ 8 W: J per ms of latency
    assert fit["r_squared"] == pytest.approx(ols.rsquared)
    assert {"correlation", "fit", "points"} <= set(result.frames)


def statsmodels_band(points: pl.DataFrame, grid: np.ndarray, level: float) -> np.ndarray:
    """Independent reference: statsmodels' mean-response interval at the band's own x points."""
    model = sm.OLS(
        points["energy_per_inference_j"].to_numpy(), sm.add_constant(points["latency_mean_ms"].to_numpy())
    ).fit()
    prediction = model.get_prediction(sm.add_constant(grid, has_constant="add"))
    return np.column_stack([prediction.predicted_mean, prediction.conf_int(alpha=1 - level)])


@pytest.mark.parametrize("level", [0.95, 0.9])
def test_band_matches_statsmodels_prediction_per_fit_group(level):
    """The time-energy chart's line and band are computed here, through the very points it draws:
    one per configuration (its means over runs)."""
    runs = energy_runs()
    result = energy(runs, None, config=CONFIG, by=[], level=level)
    points, band = result.frames["points"], result.frames["band"]
    assert points.height == 8 and points["n_runs"].to_list() == [2] * 8
    assert band["device"].unique(maintain_order=True).to_list() == [
        "FogNode",
        "Jetson TX2",
    ]  # fit per device by default
    assert band["level"].to_list() == [level] * band.height
    for device in ("FogNode", "Jetson TX2"):
        sub, rows = points.filter(pl.col("device") == device), band.filter(pl.col("device") == device)
        assert rows.height == 40
        assert (rows["x"].min(), rows["x"].max()) == pytest.approx(
            (sub["latency_mean_ms"].min(), sub["latency_mean_ms"].max())
        )
        reference = statsmodels_band(sub, rows["x"].to_numpy(), level)
        assert rows.select("fit", "band_low", "band_high").to_numpy() == pytest.approx(
            reference, rel=1e-9, abs=1e-12
        )


def test_a_run_without_either_figure_is_left_out():
    missing = runs_frame(
        [
            {"framework": f, "latency_mean_ms": v, "energy_per_inference_j": e}
            for f, v, e in (
                ("a", 10.0, 0.1),
                ("b", 11.0, None),
                ("c", 12.0, 0.12),
                ("d", None, 0.2),
                ("e", 13.0, 0.135),
            )
        ]
    )
    result = energy(missing, None, config=CONFIG, by=[])
    points = result.frames["points"]
    assert points["framework"].to_list() == ["a", "c", "e"]  # configurations with both figures
    assert result.frames["band"].height == 40 and result.frames["band"]["fit"].is_not_nan().all()
    fit = next(e for e in result.to_json() if e["part"] == "fit")
    assert fit["note"] == "1 run(s) with energy but no mean latency are left out"


def test_null_energy_is_not_enough_data_never_zero():
    runs = runs_frame(
        [
            {
                "latency_median_ms": 10.0,
                "energy_unavailable_reason": "no power source was recorded for this run",
            }
        ]
    )
    phase_energy = pl.DataFrame(
        {
            "run_idx": [0],
            "phase": ["load_model"],
            "seq": [1],
            "duration_s": [2.0],
            "energy_j": [None],
            "energy_ci_low_j": [None],
            "energy_ci_high_j": [None],
            "mean_power_w": [None],
            "source": [None],
            "energy_unavailable_reason": ["no power source was recorded for this run"],
        },
        schema_overrides={
            "energy_j": pl.Float64,
            "energy_ci_low_j": pl.Float64,
            "energy_ci_high_j": pl.Float64,
            "mean_power_w": pl.Float64,
            "source": pl.String,
        },
    )
    result = energy(runs, phase_energy, config=CONFIG, by=[])
    (entry,) = result.to_json()
    assert not result.available and entry["reason"].startswith(
        "not enough data: no selected run has energy measured"
    )


def test_energy_per_phase_with_t_intervals_and_mean_power():
    runs = runs_frame([{"latency_median_ms": 10.0, "energy_per_inference_j": e} for e in (0.30, 0.32, 0.31)])
    load = [12.0, 13.0, 12.5]
    steady = [3.0, 3.3, 3.1]
    phase_energy = pl.DataFrame(
        {
            "run_idx": [0, 1, 2] * 2,
            "phase": ["load_model"] * 3 + ["steady"] * 3,
            "seq": [1] * 3 + [8] * 3,
            "duration_s": [1.0] * 3 + [0.1] * 3,
            "energy_j": load + steady,
            "energy_ci_low_j": [None] * 6,
            "energy_ci_high_j": [None] * 6,
            "mean_power_w": [None] * 6,
            "source": ["rapl"] * 6,
            "energy_unavailable_reason": [None] * 6,
        },
        schema_overrides={
            "energy_ci_low_j": pl.Float64,
            "energy_ci_high_j": pl.Float64,
            "mean_power_w": pl.Float64,
            "energy_unavailable_reason": pl.String,
        },
    )
    result = energy(runs, phase_energy, config=CONFIG, by=[])
    (profile,) = [e for e in result.to_json() if e["part"] == "phases"]
    phases = {p["phase"]: p for p in profile["phases"]}
    # energy is positive: the t interval is made on the log scale (delta method), m·exp(±t·sem/m)
    half = stats.t.ppf(0.975, 2) * stats.sem(load) / np.mean(load)
    low, high = np.mean(load) * np.exp(-half), np.mean(load) * np.exp(half)
    assert (
        phases["load_model"]["energy_j"]["ci_low"],
        phases["load_model"]["energy_j"]["ci_high"],
    ) == pytest.approx((low, high))
    # pCAMP Figure 3: loading draws less power than inference, though it takes longer
    assert phases["load_model"]["mean_power_w"]["estimate"] == pytest.approx(12.5)
    assert phases["steady"]["mean_power_w"]["estimate"] == pytest.approx(31.33333, rel=1e-4)


def test_pareto_mask_by_hand():
    latency = np.array([10.0, 20.0, 15.0, 30.0, 10.0])
    memory = np.array([500.0, 100.0, 600.0, 100.0, 500.0])
    assert pareto_mask(latency, memory).tolist() == [True, True, False, False, True]


def winners_runs() -> tuple[list[dict], dict[int, list[float]]]:
    """Three frameworks × two models × three runs of 40 latencies on one device: mxnet fastest,
    pytorch smallest, tensorflow slow and big. Returns the run rows and each run's latencies."""
    rng = np.random.default_rng(11)
    rows, per_run = [], {}
    for model in ("alexnet", "squeezenet"):
        for framework, centre, memory in (
            ("mxnet", 29.0, 900e6),
            ("tensorflow", 53.0, 2100e6),
            ("pytorch", 53.5, 450e6),
        ):
            for _ in range(3):
                values = rng.lognormal(np.log(centre), 0.05, 40)
                per_run[len(rows)] = values.tolist()
                rows.append(
                    {
                        "device": "MacBook",
                        "framework": framework,
                        "model": model,
                        "n_latencies": 40,
                        "latency_median_ms": float(np.median(values)),
                        "latency_mean_ms": float(values.mean()),
                        "rss_peak_bytes": memory * (1 + 0.02 * rng.standard_normal()),
                    }
                )
    return rows, per_run


def alexnet_run_medians(rows: list[dict], per_run: dict[int, list[float]], framework: str) -> list[float]:
    return [
        np.median(per_run[i])
        for i, r in enumerate(rows)
        if r["model"] == "alexnet" and r["framework"] == framework
    ]


def test_winners_are_tested_rank_based_and_holm_corrected():
    rows, per_run = winners_runs()
    runs = runs_frame(rows)
    result = tradeoff(
        runs, latencies_frame(per_run), config=CONFIG, strata=["device", "model"], settings=SETTINGS
    )
    winners = [e for e in result.to_json() if e["part"] == "winners"]
    alexnet = next(e for e in winners if e["group"]["model"] == "alexnet")
    metrics = {m["metric"]: m for m in alexnet["metrics"]}
    latency = metrics["latency_median_ms"]
    # the run is the unit: each run's median latency (pooling the 3 × 40 latencies made them
    # look independent and gave a tiny p for 3 runs a side)
    assert latency["best"]["candidate"] == {"framework": "mxnet"} and latency["n_unit"] == "runs"
    best = alexnet_run_medians(rows, per_run, "mxnet")
    second = alexnet_run_medians(rows, per_run, latency["runner_up"]["candidate"]["framework"])
    assert latency["p_value"] == pytest.approx(stats.mannwhitneyu(best, second).pvalue)
    assert latency["p_value"] == pytest.approx(0.1)  # the smallest two-sided p of 3 vs 3 runs
    assert latency["prob_superiority"] == pytest.approx(1.0)
    assert latency["best"]["estimate"] == pytest.approx(np.exp(np.mean(np.log(best))))
    assert 0 < latency["best"]["ci_low"] < latency["best"]["estimate"] < latency["best"]["ci_high"]
    assert latency["best"]["n"] == 3 and latency["best"]["n_unit"] == "runs"
    memory = metrics["rss_peak_bytes"]
    assert memory["best"]["candidate"] == {"framework": "pytorch"} and memory["n_unit"] == "runs"
    # Holm across the whole table (2 strata × 2 metrics)
    tests = [m for e in winners for m in e["metrics"] if m["p_value"] is not None]
    expected = multipletests([m["p_value"] for m in tests], method="holm")[1]
    assert [m["p_holm"] for m in tests] == pytest.approx(list(expected))
    # mxnet wins latency, pytorch memory: no single winner (pCAMP: "no obvious single winners")
    assert alexnet["single_winner"] is None and alexnet["note"].startswith("no single winner")
    pareto = result.frames["pareto"]
    points = list(zip(pareto["latency_median_ms"], pareto["rss_peak_bytes"]))
    dominated = [any(a <= x and b <= y and (a, b) != (x, y) for a, b in points) for x, y in points]
    assert pareto["pareto"].to_list() == [not d for d in dominated]  # brute force agrees
    assert set(pareto.filter(pl.col("pareto"))["framework"]) == {
        "mxnet",
        "pytorch",
    }  # tensorflow: slow and big


def test_tradeoff_with_one_candidate_or_one_run_per_candidate():
    one = runs_frame([{"latency_median_ms": 5.0, "rss_peak_bytes": 1e8}])
    (entry, *_rest) = [
        e
        for e in tradeoff(one, None, config=CONFIG, strata=["device"]).to_json()
        if e.get("part") == "winners"
    ]
    assert entry["reason"].startswith("not enough data")
    two = runs_frame(
        [{"framework": f, "latency_median_ms": v, "rss_peak_bytes": 1e8} for f, v in (("a", 5.0), ("b", 6.0))]
    )
    (entry,) = [
        e for e in tradeoff(two, None, config=CONFIG, strata=["device"]).to_json() if e["part"] == "winners"
    ]
    latency = entry["metrics"][0]
    assert latency["best"]["candidate"] == {"framework": "a"} and latency["p_value"] is None
    assert "each side needs at least 2" in latency["note"]


def test_pareto_points_carry_summary_s_intervals(results_db):
    """Each point's latency and memory intervals are the ones summary gives the configuration."""
    from edgestats.analysis import AnalysisOptions, run_analyses

    results = run_analyses(results_db, AnalysisOptions(seed=2))
    pareto = results["tradeoff"].frames["pareto"]
    metrics = results["summary"].frames["metrics"]
    assert pareto.height >= 2
    for row in pareto.to_dicts():
        for metric in ("latency_median_ms", "rss_peak_bytes"):
            (summary,) = metrics.filter(
                (pl.col("framework") == row["framework"]) & (pl.col("metric") == metric)
            ).to_dicts()
            assert row[metric] == pytest.approx(summary["estimate"])
            assert (row[f"{metric}_ci_low"], row[f"{metric}_ci_high"]) == pytest.approx(
                (summary["ci_low"], summary["ci_high"])
            )
            if row[f"{metric}_ci_low"] is not None:
                assert row[f"{metric}_ci_low"] <= row[metric] <= row[f"{metric}_ci_high"]
    assert pareto["latency_median_ms_ci_low"].is_not_null().all()
    front = next(e for e in results["tradeoff"].to_json() if e["part"] == "pareto")["pareto"]
    assert all("latency_median_ms_ci_low" in point for point in front)


def test_pareto_point_of_one_run_has_no_memory_interval():
    runs = runs_frame(
        [
            {"framework": f, "latency_median_ms": v, "latency_mean_ms": v, "rss_peak_bytes": m}
            for f, v, m in [("pytorch", 10.0, 2e8), ("tflite", 12.0, 1e8)]
        ]
    )
    pareto = tradeoff(runs, None, config=["framework"], strata=["device"]).frames["pareto"]
    assert (
        pareto["rss_peak_bytes_ci_low"].is_null().all() and pareto["latency_median_ms_ci_low"].is_null().all()
    )
    assert pareto["pareto"].to_list() == [True, True]
