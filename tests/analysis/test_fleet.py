"""fleet: the between-unit SD's MLS interval by simulated coverage of a known truth, its point
estimate against statsmodels' MixedLM (REML) and the ANOVA formulas written here, each unit's
contrast against an OLS fit with unit dummies, and the step-down flags by simulation: a planted
slow unit found, an identical class's family-wise false-flag rate at most 5 %."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
import polars as pl
import pytest
import statsmodels.formula.api as smf
from analysis_builders import latencies_frame, runs_frame
from scipy import stats
from statsmodels.stats.multitest import multipletests
from statsmodels.tools.sm_exceptions import ConvergenceWarning

from edgestats.analysis import AnalysisData, AnalysisOptions
from edgestats.analysis.fleet import stats as st
from edgestats.analysis.fleet.analysis import analyse

LEVEL = 0.95


def simulate(rng, k: int, units: int, runs: int, sd_unit: float, sd_run: float, fewest: int | None = None):
    """k classes of log run medians (k, units, runs); with `fewest`, each unit keeps a random
    fewest..runs of its runs (the rest NaN: unbalanced)."""
    y = rng.normal(0.0, sd_unit, (k, units, 1)) + rng.normal(0.0, sd_run, (k, units, runs))
    if fewest is not None:
        kept = rng.integers(fewest, runs + 1, (k, units))
        y = np.where(np.arange(runs) < kept[..., None], y, np.nan)
    return y


# (units, runs per unit, fewest runs or None: balanced, between-unit SD, between-run SD) of log latency
SETTINGS = {
    "3 units x 5 runs": (3, 5, None, 0.03, 0.025),
    "8 units x 10 runs": (8, 10, None, 0.02, 0.03),
    "10 units x 2 runs": (10, 2, None, 0.01, 0.02),
    "5 units, 2-8 runs (unbalanced)": (5, 8, 2, 0.02, 0.03),
}


@pytest.mark.parametrize("setting", sorted(SETTINGS))
def test_between_unit_sd_interval_covers_the_truth_95_percent(setting):
    units, runs, fewest, sd_unit, sd_run = SETTINGS[setting]
    y = simulate(np.random.default_rng(35), 2000, units, runs, sd_unit, sd_run, fewest)
    low, high = st.mls_interval(st.unit_anova(y), LEVEL)
    assert np.all(low >= 0) and np.all(high >= low)
    # the SD's interval is the variance's square-rooted: covering one is covering the other
    covered = float(np.mean((np.sqrt(low) <= sd_unit) & (sd_unit <= np.sqrt(high))))
    assert 0.93 <= covered <= 0.97, f"{setting}: coverage {covered:.3f}"


def test_mls_interval_tends_to_the_exact_interval_when_runs_agree():
    """With no spread between runs, (S1 - S2)/n is S1/n, whose exact interval is chi-square's."""
    y = np.array([[1.0, 1.0, 1.0], [1.2, 1.2, 1.2], [0.9, 0.9, 0.9], [1.1, 1.1, 1.1]]) + 1e-9 * np.arange(3)
    anova = st.unit_anova(y)
    low, high = st.mls_interval(anova, LEVEL)
    s1, df1 = 3 * np.var(y.mean(axis=1), ddof=1), 3
    exact = (df1 * s1 / stats.chi2.ppf(0.975, df1) / 3, df1 * s1 / stats.chi2.ppf(0.025, df1) / 3)
    assert (float(low), float(high)) == pytest.approx(exact, rel=1e-4)


def test_between_unit_variance_equals_mixedlm_reml_on_balanced_runs():
    rng = np.random.default_rng(4)
    y = simulate(rng, 1, 5, 6, 0.05, 0.02)[0]
    unit = np.repeat(np.arange(5), 6)
    data = pd.DataFrame({"y": y.ravel(), "unit": unit.astype(str)})
    with warnings.catch_warnings():  # "on the boundary": its check of a variance near 0, not ours
        warnings.simplefilter("ignore", ConvergenceWarning)
        fit = smf.mixedlm("y ~ 1", data, groups=data["unit"]).fit(reml=True)
    anova = st.unit_anova(y)
    # REML equals the ANOVA estimate on balanced data when that is above 0; MixedLM's optimiser
    # stops within about 1e-4 of it
    assert float(anova.between_unit_var) == pytest.approx(float(fit.cov_re.iloc[0, 0]), rel=1e-3)
    assert float(anova.s2) == pytest.approx(float(fit.scale), rel=1e-3)


def test_unbalanced_estimate_is_the_unweighted_means_formula():
    groups = [np.array([1.0, 1.1, 0.95]), np.array([1.3, 1.25]), np.array([0.9, 0.8, 0.85, 0.88])]
    anova = st.unit_anova(st.padded(groups))
    sizes = np.array([len(g) for g in groups])
    msw = sum(((g - g.mean()) ** 2).sum() for g in groups) / (sizes.sum() - len(groups))
    harmonic = len(groups) / np.sum(1 / sizes)
    unweighted = harmonic * np.var([g.mean() for g in groups], ddof=1)
    assert float(anova.s2) == pytest.approx(msw)
    assert float(anova.between_unit_var) == pytest.approx((unweighted - msw) / harmonic)


def test_each_unit_against_the_others_equals_an_ols_contrast():
    """The first step's contrast of each unit (no unit flagged in an identical class) against
    statsmodels' OLS with a mean per unit: unit i's mean less the others' average."""
    rng = np.random.default_rng(7)
    y = simulate(rng, 1, 4, 5, 0.0, 0.03)[0]
    contrasts = st.unit_contrasts(y, LEVEL)
    assert not contrasts.flagged.any()
    data = pd.DataFrame({"y": y.ravel(), "unit": np.repeat(np.arange(4), 5).astype(str)})
    fit = smf.ols("y ~ C(unit) - 1", data).fit()
    p = []
    for i in range(4):
        weights = np.full(4, -1 / 3)
        weights[i] = 1.0
        test = fit.t_test(weights)
        low, high = test.conf_int(alpha=1 - LEVEL)[0]
        assert contrasts.ratio[i] == pytest.approx(math.exp(float(test.effect[0])))
        assert (contrasts.ci_low[i], contrasts.ci_high[i]) == pytest.approx((math.exp(low), math.exp(high)))
        p.append(float(test.pvalue))
    assert contrasts.p_value == pytest.approx(p)
    assert contrasts.p_holm == pytest.approx(multipletests(p, method="holm")[1])


def test_a_planted_slow_unit_is_found_and_an_identical_class_flags_none():
    rng = np.random.default_rng(10)
    false_flags, found, others = [], [], []
    for units in (4, 5, 6):
        identical = simulate(rng, 10_000, units, 5, 0.0, 0.025)
        false_flags.append(st.unit_contrasts(identical, LEVEL).flagged.any(axis=-1))
        planted = simulate(rng, 2000, units, 5, 0.0, 0.025)
        planted[:, 0] += math.log(1.10)
        verdicts = st.verdicts(st.unit_contrasts(planted, LEVEL))
        found.append(verdicts[:, 0] == st.SLOWER)
        others.append((verdicts[:, 1:] != st.LIKE_CLASS).any(axis=-1))
    assert np.mean(found) >= 0.99
    assert np.mean(false_flags) <= 0.05, f"family-wise false-flag rate {np.mean(false_flags):.3f}"
    assert np.mean(others) <= 0.06, f"another unit flagged beside the planted one: {np.mean(others):.3f}"


# -- the analysis on runs ------------------------------------------------------------------------


def fleet_runs(rng, slow_unit: str | None, units: int = 5, runs: int = 5, latencies: int = 40):
    """Runs of one class (pi5) of `units` units, each run's latencies around its own median."""
    rows, per_run = [], {}
    for u in range(units):
        name = f"pi5-{u + 1:02d}"
        for _ in range(runs):
            median = 10.0 * (1.10 if name == slow_unit else 1.0) * math.exp(rng.normal(0, 0.02))
            values = median * np.exp(rng.normal(0, 0.05, latencies))
            per_run[len(rows)] = values.tolist()
            rows.append({"device": name, "latency_median_ms": float(np.median(values))})
    frame = runs_frame(rows).with_columns(n_latencies=latencies, device_class=pl.lit("pi5"))
    return AnalysisData(runs=frame, latencies=latencies_frame(per_run))


def test_the_analysis_flags_the_planted_unit_in_words():
    result = analyse(fleet_runs(np.random.default_rng(3), "pi5-03"), AnalysisOptions())
    (entry,) = result.entries
    assert entry["group"]["device_class"] == "pi5" and entry["units"] == 5
    verdicts = {r["device"]: r["verdict"] for r in entry["unit_ratios"]}
    assert verdicts == {f"pi5-{u:02d}": (st.SLOWER if u == 3 else st.LIKE_CLASS) for u in range(1, 6)}
    slow = next(r for r in entry["unit_ratios"] if r["device"] == "pi5-03")
    assert (
        slow["verdict_text"].startswith("pi5-03 ran 1.1")
        and "as long as its class: slower" in slow["verdict_text"]
    )
    assert slow["verdict_text"] in entry["sentence"]
    between = entry["components"][0]
    assert between["metric"] == "between_unit_sd_pct" and 0 <= between["ci_low"] <= between["estimate"]
    units = result.frames["units"]
    assert units.height == 5 and set(units["device"]) == set(verdicts)


def test_an_identical_class_flags_no_unit():
    result = analyse(fleet_runs(np.random.default_rng(5), None), AnalysisOptions())
    (entry,) = result.entries
    assert all(r["verdict"] == st.LIKE_CLASS for r in entry["unit_ratios"])
    assert "no unit differs from its class" in entry["sentence"]


def test_runs_without_a_device_class_say_how_to_give_one():
    runs = runs_frame([{"device": "pi", "latency_median_ms": 3.0}] * 3)
    result = analyse(AnalysisData(runs=runs), AnalysisOptions())
    assert not result.available
    (reason,) = [e["reason"] for e in result.entries]
    assert "device class" in reason and "--device-class" in reason and "\n" not in reason


def test_a_class_of_one_unit_says_why():
    data = fleet_runs(np.random.default_rng(1), None, units=1)
    result = analyse(data, AnalysisOptions())
    assert not result.available and "1 unit of class pi5" in result.entries[0]["reason"]


def test_units_of_one_run_each_are_not_called_like_their_class():
    result = analyse(fleet_runs(np.random.default_rng(2), "pi5-03", runs=1), AnalysisOptions())
    (entry,) = result.entries
    assert all(r["p_holm"] is None and not r["flagged"] for r in entry["unit_ratios"])
    assert "no unit could be tested" in entry["sentence"] and "at least 2 runs" in entry["sentence"]
    assert entry["components"][0]["estimate"] is None and "one run" in entry["components"][0]["note"]
