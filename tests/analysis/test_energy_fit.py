"""The time–energy fit and correlation over configurations (edgestats.analysis.energy.fit): equal to
statsmodels / scipy on configuration means computed here by hand, and covering the true slope by
simulation where runs of one configuration share its power draw."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
import statsmodels.api as sm
from analysis_builders import runs_frame
from scipy import stats

from edgestats.analysis.energy.analysis import energy
from edgestats.analysis.energy.fit import MEDIAN_NOTE, ols_line
from edgestats.analysis.estimators.intervals import t_quantile

CONFIG = ["device", "framework", "model"]
FRAMEWORKS = ("tensorflow", "pytorch", "mxnet", "caffe2", "tflite", "onnxruntime")


def unequal_runs(seed: int = 5) -> pl.DataFrame:
    """Two devices × six frameworks, 2–7 runs each; each configuration draws its own power (a
    shared effect of its runs), and each run's mean latency is above its median (skewed latencies)."""
    rng = np.random.default_rng(seed)
    rows = []
    for device, watts in (("FogNode", 30.0), ("Jetson TX2", 8.0)):
        for i, framework in enumerate(FRAMEWORKS):
            centre_ms, power_w = 20.0 + 15.0 * i, watts * (1 + 0.1 * rng.standard_normal())
            for _ in range(2 + (i * 5 + len(device)) % 6):
                median_ms = centre_ms * (1 + 0.03 * rng.standard_normal())
                mean_ms = median_ms * (1.02 + 0.05 * rng.random())
                rows.append(
                    {
                        "device": device,
                        "framework": framework,
                        "model": "alexnet",
                        "latency_median_ms": median_ms,
                        "latency_mean_ms": mean_ms,
                        "energy_per_inference_j": power_w
                        * mean_ms
                        / 1000
                        * (1 + 0.02 * rng.standard_normal()),
                    }
                )
    return runs_frame(rows)


def hand_means(runs: pl.DataFrame, device: str | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(mean latency, mean energy, runs) per configuration, by numpy over the rows."""
    rows = [r for r in runs.to_dicts() if device is None or r["device"] == device]
    configurations = sorted({(r["device"], r["framework"]) for r in rows})
    x, y, n = [], [], []
    for key in configurations:
        members = [r for r in rows if (r["device"], r["framework"]) == key]
        x.append(np.mean([r["latency_mean_ms"] for r in members]))
        y.append(np.mean([r["energy_per_inference_j"] for r in members]))
        n.append(len(members))
    return np.array(x), np.array(y), np.array(n)


@pytest.mark.parametrize("level", [0.95, 0.9])
def test_fit_equals_statsmodels_on_configuration_means(level):
    runs = unequal_runs()
    result = energy(runs, None, config=CONFIG, by=[], level=level)
    fits = {e["group"]["device"]: e for e in result.to_json() if e["part"] == "fit"}
    for device in ("FogNode", "Jetson TX2"):
        x, y, n_runs = hand_means(runs, device)
        assert len(set(n_runs)) > 2  # unequal run counts
        reference = sm.OLS(y, sm.add_constant(x)).fit()
        ci = reference.conf_int(alpha=1 - level)
        fit = fits[device]
        assert (fit["n"], fit["n_unit"], fit["n_runs"]) == (6, "configurations", int(n_runs.sum()))
        assert fit["model"] == "energy_per_inference_j ~ latency_mean_ms" and "note" not in fit
        for i, term in enumerate(fit["terms"]):
            assert term["term"] == ("intercept_j", "slope_j_per_ms")[i]
            assert (term["estimate"], term["ci_low"], term["ci_high"]) == pytest.approx(
                (reference.params[i], ci[i][0], ci[i][1]), rel=1e-9, abs=1e-15
            )
            assert term["p_value"] == pytest.approx(reference.pvalues[i], rel=1e-9, abs=1e-300)
        assert fit["r_squared"] == pytest.approx(reference.rsquared, rel=1e-9)
    slope = next(r for r in result.frames["fit"].to_dicts() if r["term"] == "slope_j_per_ms")
    assert slope["n"] == 6 and slope["n_unit"] == "configurations"


def test_correlation_over_configuration_means_of_mean_latency():
    runs = unequal_runs()
    (entry,) = [e for e in energy(runs, None, config=CONFIG, by=[]).to_json() if e["part"] == "correlation"]
    x, y, n_runs = hand_means(runs, None)
    pearson = stats.pearsonr(x, y)
    assert (entry["n"], entry["n_unit"], entry["n_runs"], entry["x"]) == (
        12,
        "configurations",
        int(n_runs.sum()),
        "latency_mean_ms",
    )
    assert (entry["pearson"]["estimate"], entry["pearson"]["ci_low"], entry["pearson"]["ci_high"]) == (
        pytest.approx((pearson.statistic, *pearson.confidence_interval()), rel=1e-9)
    )
    assert entry["spearman"]["estimate"] == pytest.approx(stats.spearmanr(x, y).statistic, rel=1e-9)


def test_points_are_the_fitted_configuration_means_and_the_band_is_that_fit():
    runs = unequal_runs()
    result = energy(runs, None, config=CONFIG, by=["device"], level=0.95)
    points, band = result.frames["points"], result.frames["band"]
    assert "run_idx" not in points.columns and "latency_median_ms" not in points.columns
    for device in ("FogNode", "Jetson TX2"):
        x, y, n_runs = hand_means(runs, device)
        mine = points.filter(pl.col("device") == device).sort("framework")
        assert mine["latency_mean_ms"].to_numpy() == pytest.approx(x, rel=1e-12)
        assert mine["energy_per_inference_j"].to_numpy() == pytest.approx(y, rel=1e-12)
        assert mine["n_runs"].to_list() == n_runs.tolist()
        rows = band.filter(pl.col("device") == device)
        prediction = sm.OLS(y, sm.add_constant(x)).fit().get_prediction(sm.add_constant(rows["x"].to_numpy()))
        reference = np.column_stack([prediction.predicted_mean, prediction.conf_int(alpha=0.05)])
        assert rows.height == 40 and rows.select("fit", "band_low", "band_high").to_numpy() == pytest.approx(
            reference, rel=1e-9, abs=1e-12
        )


def test_median_latency_only_where_no_run_has_a_mean():
    rows = [
        {"framework": f, "latency_median_ms": v, "energy_per_inference_j": v * 0.008 + 0.001 * (i % 2)}
        for i, (f, v) in enumerate((("a", 10.0), ("b", 20.0), ("c", 30.0), ("d", 45.0)))
    ]
    result = energy(runs_frame(rows), None, config=CONFIG, by=[])
    fit = next(e for e in result.to_json() if e["part"] == "fit")
    assert fit["x"] == "latency_median_ms" and fit["note"] == MEDIAN_NOTE and fit["n"] == 4
    assert "latency_median_ms" in result.frames["points"].columns
    some_mean = runs_frame([{**rows[0], "latency_mean_ms": 10.5}, *rows[1:]])
    fit = next(e for e in energy(some_mean, None, config=CONFIG, by=[]).to_json() if e["part"] == "fit")
    assert fit["x"] == "latency_mean_ms" and fit["reason"].startswith("not enough data: 1 configurations")
    assert fit["note"] == "3 run(s) with energy but no mean latency are left out"


def test_too_few_configurations_or_one_latency_or_an_exact_line():
    """Many runs of two configurations are still two points: no line, no band."""
    two = runs_frame(
        [
            {"framework": f, "latency_mean_ms": v * (1 + 0.01 * r), "energy_per_inference_j": v / 100}
            for f, v in (("a", 10.0), ("b", 12.0))
            for r in range(5)
        ]
    )
    flat = runs_frame(
        [
            {"framework": f, "latency_mean_ms": 10.0, "energy_per_inference_j": e}
            for f, e in zip("abc", (1, 2, 3))
        ]
    )
    for runs, reason in ((two, "2 configurations"), (flat, "every configuration has the same latency")):
        result = energy(runs, None, config=CONFIG, by=[])
        fit = next(e for e in result.to_json() if e["part"] == "fit")
        assert reason in fit["reason"] and result.frames["band"].height == 0
        assert {"device", "x", "fit", "band_low", "band_high", "level"} <= set(result.frames["band"].columns)
    exact = runs_frame(
        [
            {"framework": f, "latency_mean_ms": v, "energy_per_inference_j": v / 100}
            for f, v in zip("abc", (1, 2, 4))
        ]
    )
    fit = next(e for e in energy(exact, None, config=CONFIG, by=[]).to_json() if e["part"] == "fit")
    slope = fit["terms"][1]
    assert slope["estimate"] == pytest.approx(0.01) and slope["ci_low"] is None and slope["p_value"] is None
    assert fit["note"].startswith("the configurations lie exactly on a line")
    same_energy = runs_frame(
        [
            {"framework": f, "latency_mean_ms": v, "energy_per_inference_j": 0.1}
            for f, v in zip("abc", (1, 2, 4))
        ]
    )
    fit = next(e for e in energy(same_energy, None, config=CONFIG, by=[]).to_json() if e["part"] == "fit")
    assert fit["terms"][1]["estimate"] == pytest.approx(0, abs=1e-15) and fit["r_squared"] is None
    assert fit["note"].endswith("every configuration has the same energy: R² is undefined")


def test_line_core_equals_statsmodels_on_a_batch():
    rng = np.random.default_rng(3)
    x, y = rng.uniform(1, 50, (5, 7)), rng.normal(0, 1, (5, 7))
    fit = ols_line(x, y)
    for i in range(5):
        reference = sm.OLS(y[i], sm.add_constant(x[i])).fit()
        assert (fit.intercept[i], fit.slope[i]) == pytest.approx(tuple(reference.params), rel=1e-10)
        assert (fit.se_intercept[i], fit.se_slope[i]) == pytest.approx(tuple(reference.bse), rel=1e-10)
        assert fit.r_squared[i] == pytest.approx(reference.rsquared, rel=1e-10)


# -- coverage: runs of one configuration share its power draw ------------------------------------

N_DATASETS = 2000
RUNS_PER_CONFIGURATION = np.array([2, 3, 3, 4, 5, 6, 8, 10])  # 8 configurations, unequal runs
POWER_W = 8.0  # the true slope is POWER_W / 1000 J per ms
LATENCY_RANGE_MS = (20.0, 60.0)  # each configuration's true mean latency, uniform
RUN_LATENCY_SD = 0.03  # a run's mean latency, relative
RUN_ENERGY_SD = 0.03  # a run's energy at its latency, relative


def slope_coverage(configuration_power_sd: float, seed: int) -> dict[str, float]:
    """Coverage of the true slope by the 95 % interval: OLS over configuration means (new), OLS
    over runs as independent points (old), and WLS over means weighted by run count (rejected)."""
    rng = np.random.default_rng(seed)
    k, true_slope = len(RUNS_PER_CONFIGURATION), POWER_W / 1000
    latency_ms = rng.uniform(*LATENCY_RANGE_MS, (N_DATASETS, k))
    power_effect = configuration_power_sd * rng.standard_normal((N_DATASETS, k))  # shared by its runs
    of_run = np.repeat(np.arange(k), RUNS_PER_CONFIGURATION)
    run_ms = latency_ms[:, of_run] * (1 + RUN_LATENCY_SD * rng.standard_normal((N_DATASETS, len(of_run))))
    noise = 1 + RUN_ENERGY_SD * rng.standard_normal(run_ms.shape)
    run_j = true_slope * (1 + power_effect[:, of_run]) * run_ms * noise
    starts = np.r_[0, np.cumsum(RUNS_PER_CONFIGURATION)[:-1]]
    x = np.add.reduceat(run_ms, starts, axis=1) / RUNS_PER_CONFIGURATION
    y = np.add.reduceat(run_j, starts, axis=1) / RUNS_PER_CONFIGURATION

    def covered(fit_slope, se, df) -> float:
        return float(np.mean(np.abs(fit_slope - true_slope) <= t_quantile(0.95, df) * se))

    new, old = ols_line(x, y), ols_line(run_ms, run_j)
    w = RUNS_PER_CONFIGURATION.astype(float)
    x_bar, y_bar = (x * w).sum(1) / w.sum(), (y * w).sum(1) / w.sum()
    sxx = (w * (x - x_bar[:, None]) ** 2).sum(1)
    wls = (w * (x - x_bar[:, None]) * (y - y_bar[:, None])).sum(1) / sxx
    wls_residual = y - y_bar[:, None] - wls[:, None] * (x - x_bar[:, None])
    wls_se = np.sqrt((w * wls_residual**2).sum(1) / (k - 2) / sxx)
    return {
        "new": covered(new.slope, new.se_slope, new.df),
        "old": covered(old.slope, old.se_slope, old.df),
        "wls_by_runs": covered(wls, wls_se, k - 2),
    }


@pytest.mark.parametrize(("configuration_power_sd", "old_range"), [(0.10, (0.3, 0.75)), (0.0, (0.9, 0.98))])
def test_slope_interval_covers_the_true_slope(configuration_power_sd, old_range):
    """With each configuration's power 10 % off the common line (a random effect of its runs) the
    per-run fit counts that deviation once per run; over configuration means it covers 93–97 %."""
    coverage = slope_coverage(configuration_power_sd, seed=27)
    print(
        f"configuration power sd {configuration_power_sd:.0%}: slope coverage over configurations "
        f"{coverage['new']:.1%}, old over runs {coverage['old']:.1%}, WLS by run count "
        f"{coverage['wls_by_runs']:.1%} ({N_DATASETS} datasets)"
    )
    assert 0.93 <= coverage["new"] <= 0.97
    assert old_range[0] <= coverage["old"] <= old_range[1]
