"""generation's depth fit (edgestats.analysis.generation.fit): decode time per token = a + b·depth,
its slope and intercept with their intervals (OLS, HC3 t on Bell-McCaffrey degrees of freedom)
against an independent statsmodels fit of the runs' mean inter-token latencies read straight from
the latencies table, with the degrees of freedom from tests/depth_fit_reference.py's trace
formula; those degrees of freedom against that formula and against the moments of the variance
estimate they approximate; the slope interval's coverage by simulation under multiplicative and
heteroscedastic additive run spread (vectorised: `hc3_fit` on thousands of sweeps at once); a
design with no run to measure a depth's spread; and what a sweep of one depth gets."""

from __future__ import annotations

import duckdb
import numpy as np
import pytest
import statsmodels.formula.api as smf
from depth_fit_reference import bell_mccaffrey_df, hc3_interval
from generation_builders import GenConfig, depth_sweep, make_generation_db
from scipy import stats

from edgestats.analysis import AnalysisOptions, run_analyses
from edgestats.analysis.generation.fit import fit_one, hc3_fit


@pytest.fixture(scope="module")
def swept(tmp_path_factory):
    db = tmp_path_factory.mktemp("depth") / "depth.duckdb"
    make_generation_db(db, depth_sweep(depths=(0, 128, 512, 1024)), runs_per_config=3, seed=11)
    return db, run_analyses(db, AnalysisOptions(only="generation"))["generation"]


def independent_fit(db, framework: str):
    """Each run's mean decode step (tokens >= 1) from the raw latencies, OLS on its context depth."""
    con = duckdb.connect(str(db), read_only=True)
    try:
        frame = con.execute(
            "SELECT r.context_depth AS depth, avg(l.latency_ns) / 1e6 AS step_ms FROM latencies l "
            "JOIN runs r USING (run_id) WHERE l.iteration >= 1 AND r.framework = ? "
            "GROUP BY l.run_id, r.context_depth",
            [framework],
        ).df()
    finally:
        con.close()
    fit = smf.ols("step_ms ~ depth", data=frame).fit(cov_type="HC3", use_t=True)
    return fit, hc3_interval(frame["depth"], frame["step_ms"]), len(frame)


@pytest.mark.parametrize("framework", ["pytorch", "llamacpp"])
def test_slope_and_intercept_equal_an_independent_statsmodels_fit(swept, framework):
    db, result = swept
    entry = next(e for e in result.entries if "slope" in e and e["group"]["framework"] == framework)
    fit, reference, n = independent_fit(db, framework)
    assert entry["n"] == n == 12 and entry["n_unit"] == "runs" and entry["depths"] == [0, 128, 512, 1024]
    assert entry["slope"]["estimate"] == pytest.approx(fit.params["depth"], rel=1e-9)
    assert entry["intercept"]["estimate"] == pytest.approx(fit.params["Intercept"], rel=1e-9)
    for key in ("slope", "intercept"):
        found = (entry[key]["estimate"], entry[key]["ci_low"], entry[key]["ci_high"])
        assert found == pytest.approx(reference[key], rel=1e-9)
    # wider than statsmodels' t on n - 2 = 10 degrees of freedom: HC3 rests on few high-leverage runs
    n_minus_2 = fit.conf_int(0.05).loc["depth"]
    assert entry["slope"]["ci_low"] < n_minus_2[0] and entry["slope"]["ci_high"] > n_minus_2[1]
    assert entry["r_squared"] == pytest.approx(fit.rsquared)
    truth = 0.02 if framework == "pytorch" else 0.008  # generation_builders.depth_sweep
    assert entry["slope"]["ci_low"] < truth < entry["slope"]["ci_high"]
    rows = result.frames["depth_fit"].filter(framework=framework)
    assert sorted(rows["term"]) == ["intercept_ms", "slope_ms_per_token"]


def test_the_band_and_points_feed_the_chart_only(swept):
    _, result = swept
    assert {"depth_points", "depth_band"} <= result.chart_only
    band = result.frames["depth_band"]
    assert (band["band_low"] <= band["fit"]).all() and (band["fit"] <= band["band_high"]).all()
    assert result.frames["depth_points"].height == 24


# -- the degrees of freedom -------------------------------------------------------------------

SMALL_DESIGN = np.array([0.0, 0.0, 128.0, 512.0, 512.0, 1024.0])


def test_bell_mccaffrey_df_equals_the_trace_formula_on_a_small_design():
    fit = hc3_fit(SMALL_DESIGN, np.arange(6.0))
    expected = [bell_mccaffrey_df(SMALL_DESIGN, c) for c in ([1, 0], [0, 1])]
    print(f"\nBell-McCaffrey df on {SMALL_DESIGN.tolist()}: {fit.df.round(3).tolist()} (n - 2 = 4)")
    assert fit.df == pytest.approx(expected, rel=1e-9)
    assert all(0 < df < 4 for df in fit.df), "fewer than n - 2: the high-leverage runs carry HC3"


def test_bell_mccaffrey_df_match_the_moments_of_hc3s_variance():
    """Satterthwaite's df is 2 E[V]² / Var[V] of the variance estimate V under equal normal
    spreads: measured on 200,000 simulated samples of the small design, within 3 %."""
    rng = np.random.default_rng(3)
    fit = hc3_fit(SMALL_DESIGN, rng.normal(0.0, 1.0, (200_000, SMALL_DESIGN.size)))
    variance = fit.se**2
    moments = 2 * variance.mean(axis=0) ** 2 / variance.var(axis=0)
    print(f"\nmoment df {moments.round(3).tolist()} against {fit.df.round(3).tolist()}")
    assert moments == pytest.approx(fit.df, rel=0.03)


# -- coverage: the slope's 95 % interval over simulated sweeps ------------------------------------

A_MS, B_MS, SIMS = 10.0, 0.02, 2000  # binomial SE of a 95 % coverage: 0.5 points
POWERS = (0.0, 128.0, 256.0, 512.0, 1024.0, 2048.0)
EVEN = (0.0, 256.0, 512.0, 768.0, 1024.0, 1280.0)
SETTINGS = {  # name: depths, runs per depth, noise
    "run factor exp(N(0, 0.15²)), 4 depths x 3 runs": ((0.0, 128.0, 512.0, 1024.0), 3, "factor"),
    "run factor exp(N(0, 0.15²)), 4 depths x 5 runs": ((0.0, 128.0, 512.0, 1024.0), 5, "factor"),
    "additive, sd 0.2 + 3 ms x depth / deepest, 6 depths x 2 runs": (POWERS, 2, "growing"),
    "additive, sd 0.2 + 3 ms x depth / deepest, 6 even depths x 2 runs": (EVEN, 2, "growing"),
}


def simulated_coverage(depths, runs: int, noise: str, seed: int = 5) -> tuple[float, float, float]:
    """Coverage of the true slope by the 95 % interval over SIMS sweeps, with these degrees of
    freedom and with n - 2 (before), and the slope's df."""
    rng = np.random.default_rng(seed)
    x = np.repeat(np.asarray(depths), runs)
    mean = A_MS + B_MS * x
    draws = rng.normal(0.0, 1.0, (SIMS, x.size))
    times = mean * np.exp(0.15 * draws) if noise == "factor" else mean + draws * (0.2 + 3 * x / x.max())
    fit = hc3_fit(x, times)
    low, high = fit.interval(0.95)
    now = np.mean((low[:, 1] <= B_MS) & (B_MS <= high[:, 1]))
    before = np.mean(np.abs(fit.params[:, 1] - B_MS) <= stats.t.ppf(0.975, x.size - 2) * fit.se[:, 1])
    return float(now), float(before), float(fit.df[1])


@pytest.mark.parametrize("setting", list(SETTINGS))
def test_slope_interval_covers_at_its_level_with_unequal_spread(setting):
    now, before, df = simulated_coverage(*SETTINGS[setting])
    print(f"\n{setting}: covers {now:.1%} on {df:.1f} df; {before:.1%} on n - 2")
    assert 0.93 <= now <= 0.97


def test_with_equal_additive_spread_it_is_at_or_a_little_above_its_level():
    """The price of the small-sample df: equal spreads, where n - 2 was right, cover a little more."""
    rng = np.random.default_rng(5)
    x = np.repeat([0.0, 128.0, 512.0, 1024.0], 3)
    low, high = hc3_fit(x, A_MS + B_MS * x + rng.normal(0.0, 1.5, (SIMS, x.size))).interval(0.95)
    covered = np.mean((low[:, 1] <= B_MS) & (B_MS <= high[:, 1]))
    print(f"\nequal additive spread, 4 depths x 3 runs: covers {covered:.1%}")
    assert 0.93 <= covered <= 0.98


def test_a_depth_with_its_only_run_at_one_of_two_depths_has_no_interval_and_says_why():
    """Three runs at 0, 0 and 128: the line runs through the one at 128 (leverage 1), so nothing
    measures the spread of runs there; HC3 would divide 0 by 0."""
    terms, fit = fit_one(np.array([0.0, 0.0, 128.0]), np.array([10.0, 10.4, 12.9]), 0.95)
    slope = terms["slope_ms_per_token"]
    assert slope.estimate == pytest.approx((12.9 - 10.2) / 128)
    assert slope.ci_low is None and slope.ci_high is None
    assert "only run at context depth 128" in slope.note and fit.why_none == slope.note
    assert terms["intercept_ms"].ci_low is None


def test_one_depth_has_no_fit_and_says_why(tmp_path):
    db = tmp_path / "one.duckdb"
    make_generation_db(db, [GenConfig(prompt_tokens=16), GenConfig(prompt_tokens=64)], runs_per_config=3)
    result = run_analyses(db, AnalysisOptions(only="generation"))["generation"]
    assert "depth_fit" not in result.frames
    assert not any("slope" in e for e in result.entries)
    assert any("2 or more context depths" in n for n in result.notes)
