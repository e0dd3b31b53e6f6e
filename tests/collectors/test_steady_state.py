"""Steady state by change-point detection (collectors/steady_state.py): the broken-stick fit against
numpy's least squares, the trend test against scipy, and the verdicts on seeded synthetic series
(drift then flat, steps, drift throughout, heavy-tailed noise, spikes). --warmup auto and what a
run stores: test_warmup_auto.py."""

from __future__ import annotations

import math

import numpy as np
import pytest
from latency_series import BASE_NS, ar1_flat, series, with_spikes
from scipy import stats

from edgestats.collectors.steady_state import (
    JUMP_PENALTY,
    MIN_LATENCIES,
    PENALTY,
    _rss_constant,
    _rss_hinge,
    _rss_line,
    best_break,
    detect,
    lag1_autocorrelation,
    noise_autocorrelation,
    prefix_sums,
    suffix_trend,
    t_quantile,
)

# -- the fit against an independent computation -------------------------------------------------


def lstsq_rss(design: np.ndarray, z: np.ndarray) -> float:
    beta = np.linalg.lstsq(design, z, rcond=None)[0]
    return float(((z - design @ beta) ** 2).sum())


def test_broken_stick_costs_equal_numpy_least_squares():
    """Each candidate break's RSS from the cumulative sums equals numpy's lstsq on the same design:
    the continuous hinge c + b·min(j - k, 0), and a free line before k with a constant after it."""
    rng = np.random.default_rng(7)
    for m in (10, 37, 120):
        z = rng.normal(0, 0.05, m) + np.where(np.arange(m) < m // 3, 0.2, 0.0)
        sums = prefix_sums(z.tolist())
        j = np.arange(m, dtype=float)
        for k in range(1, m - 4):
            hinge = np.column_stack([np.ones(m), np.minimum(j - k, 0.0)])
            assert _rss_hinge(sums, k) == pytest.approx(lstsq_rss(hinge, z), rel=1e-9, abs=1e-12)
            before = (j < k).astype(float)
            jump = np.column_stack([before, before * j, 1 - before])
            head, total = sums[k], sums[m]
            ours = _rss_line(k, *head) + _rss_constant(m - k, total[2] - head[2], total[3] - head[3])
            assert ours == pytest.approx(lstsq_rss(jump, z), rel=1e-9, abs=1e-12)


def test_the_chosen_break_is_the_brute_force_minimum():
    """best_break = the argmin, over every k, of the penalised Gaussian criterion m·log(RSS) with the
    RSS from numpy's lstsq (k = 0: the constant alone)."""
    rng = np.random.default_rng(8)
    chosen = set()
    for _ in range(60):
        m = int(rng.integers(12, 80))
        k_true = int(rng.integers(1, m // 2))
        z = rng.normal(0, 0.02, m) + np.where(np.arange(m) < k_true, rng.uniform(0, 0.1), 0.0)
        min_steady = max(5, math.ceil(m / 4))
        j = np.arange(m, dtype=float)
        costs = [m * math.log(lstsq_rss(np.ones((m, 1)), z))]
        for k in range(1, m - min_steady + 1):
            before = (j < k).astype(float)
            hinge = lstsq_rss(np.column_stack([np.ones(m), np.minimum(j - k, 0.0)]), z)
            jump = lstsq_rss(np.column_stack([before, before * j, 1 - before]), z)
            costs.append(min(m * math.log(hinge), m * math.log(jump) + JUMP_PENALTY) + PENALTY)
        found = best_break(prefix_sums(z.tolist()), min_steady)
        assert found == int(np.argmin(costs))
        chosen.add(found == 0)
    assert chosen == {True, False}, "both outcomes were checked"


def test_the_trend_test_equals_scipy_linregress():
    rng = np.random.default_rng(9)
    z = rng.normal(0, 0.03, 60) + 0.001 * np.arange(60)
    sums = prefix_sums(z.tolist())
    for k in (0, 17, 40):
        fit = stats.linregress(np.arange(k, 60), z[k:])
        slope, se, t = suffix_trend(sums, k)
        assert slope == pytest.approx(fit.slope, rel=1e-9) and se == pytest.approx(fit.stderr, rel=1e-7)
        assert t == pytest.approx(fit.slope / fit.stderr, rel=1e-7)


def test_the_noise_autocorrelation_equals_numpy():
    """r1 of the residuals about two least-squares lines (before and from the break), against
    numpy's polyfit residuals and a plain lag-1 autocorrelation; clipped at 0 and MAX_PHI."""
    rng = np.random.default_rng(41)
    z = np.cumsum(rng.normal(0, 0.01, 40)) + 0.3 * np.minimum(np.arange(40) - 12, 0)
    for k in (0, 2, 12, 25):
        parts = [z[:k], z[k:]] if k > 2 else [z[k:]]
        residuals = [
            part - np.polyval(np.polyfit(np.arange(len(part)), part, 1), np.arange(len(part)))
            for part in parts
        ]
        e = np.concatenate([np.zeros(k if k <= 2 else 0), *residuals])
        expected = float(np.clip(np.sum(e[:-1] * e[1:]) / np.sum(e * e), 0, 0.9))
        assert noise_autocorrelation(z.tolist(), k) == pytest.approx(expected, abs=1e-9)
    assert lag1_autocorrelation([1.0, -1.0] * 10) == 0.0  # alternating: never narrows the test
    assert lag1_autocorrelation(list(np.linspace(-1, 1, 30))) == 0.9


@pytest.mark.parametrize("df", [3, 4, 5, 8, 20, 100, 1000])
def test_t_quantile_is_close_to_scipy(df):
    """The Cornish-Fisher t quantile the worker uses (no scipy there): within 4 % at 3 degrees of
    freedom, 1.3 % from 4 on."""
    exact = stats.t.ppf(0.995, df)
    assert t_quantile(df) == pytest.approx(exact, rel=0.04 if df == 3 else 0.013)


# -- verdicts on synthetic runs -----------------------------------------------------------------


def test_drift_for_the_first_third_then_flat_is_found_within_10_percent():
    """The issue's case: 300 seeded runs (n 300, 600 or 1200 latencies; latency falling 30 % in log
    over the first third, then flat; noise SD 2 %, normal or t3): steady_from within 10 % of the
    true change point in at least 95 % of them, and never no_steady_state."""
    rng = np.random.default_rng(27)
    hits, never = 0, 0
    for r in range(300):
        n = (300, 600, 1200)[r % 3]
        change = n // 3
        verdict = detect(series(rng, n, "drift", change=change, tail=("normal", "t3")[r % 2]))
        never += bool(verdict.no_steady_state)
        hits += verdict.steady_from is not None and abs(verdict.steady_from - change) <= 0.1 * change
    print(f"drift then flat: steady_from within 10 % in {hits / 300:.1%}, no steady state in {never}")
    assert never == 0 and hits >= 0.95 * 300


def test_a_step_down_then_flat_gets_the_step():
    """300 runs of 300 latencies, 10 % slower before a step at iteration 60-200, noise SD 2 %:
    steady_from is the step to within one block (5 latencies) in at least 95 %."""
    rng = np.random.default_rng(28)
    hits = 0
    for _ in range(300):
        change = int(rng.integers(60, 200))
        verdict = detect(series(rng, 300, "step", change=change, drop=0.1))
        hits += verdict.steady_from is not None and abs(verdict.steady_from - change) <= 5
    print(f"step: steady_from at the step in {hits / 300:.1%}")
    assert hits >= 0.95 * 300


@pytest.mark.parametrize("shape", ["throughout", "rising"])
def test_a_run_that_drifts_throughout_reaches_no_steady_state(shape):
    """300 runs (300 or 1000 latencies) whose latency moves 20 % in log over the whole run, noise SD
    2 %: no_steady_state in at least 95 %, and then no steady_from."""
    rng = np.random.default_rng(29)
    flagged = 0
    for r in range(300):
        verdict = detect(series(rng, (300, 1000)[r % 2], shape, change=0, drop=0.2))
        flagged += verdict.no_steady_state is True
        assert verdict.no_steady_state is False or verdict.steady_from is None
    print(f"{shape}: no steady state in {flagged / 300:.1%}")
    assert flagged >= 0.95 * 300


def test_flat_heavy_tailed_runs_are_steady_from_the_start():
    """300 flat runs (105, 300 or 1000 latencies; t3 noise of SD 3 %, 2 % of latencies 1.5-4x spikes):
    no_steady_state in at most 5 % (the issue's limit; measured 0-1 %), and steady_from within the
    first 5 % of the run in at least 95 %."""
    rng = np.random.default_rng(30)
    false_flags, early = 0, 0
    for r in range(300):
        n = (105, 300, 1000)[r % 3]
        latencies = with_spikes(rng, series(rng, n, "flat", change=0, noise=0.03, tail="t3"), 0.02)
        verdict = detect(latencies)
        false_flags += bool(verdict.no_steady_state)
        early += verdict.steady_from is not None and verdict.steady_from <= 0.05 * n
    print(f"flat heavy-tailed: no steady state in {false_flags / 300:.1%}, steady early in {early / 300:.1%}")
    assert false_flags <= 0.05 * 300 and early >= 0.95 * 300


def test_flat_runs_with_autocorrelated_noise_are_steady():
    """Issue 39: flat runs whose log-latency noise is AR(1) (SD 2 %), 300 seeded runs per lag-1
    correlation, of 105 latencies (collect's default 5 warm-up + 100 inferences), 300 or 1000.
    Treated as independent, the block medians of rho = 0.98 runs gave 10 % no steady state; with
    the effective-sample-size trend test (Santer et al. 2000) at most 5 %, and at rho = 0.9 the
    share steady within the first 5 % of the run is at least 90 % (printed: the methodology's)."""
    rng = np.random.default_rng(39)
    for rho in (0.9, 0.98):
        false_flags, early = 0, 0
        for r in range(300):
            n = (105, 300, 1000)[r % 3]
            verdict = detect(ar1_flat(rng, n, rho))
            false_flags += bool(verdict.no_steady_state)
            early += verdict.steady_from is not None and verdict.steady_from <= 0.05 * n
        print(
            f"AR(1) rho {rho}: no steady state in {false_flags / 300:.1%}, steady early in {early / 300:.1%}"
        )
        assert false_flags <= 0.05 * 300
        if rho == 0.9:
            assert early >= 0.90 * 300


def test_outliers_do_not_move_the_change_point():
    """The same 300 drift-then-flat runs with and without 2 % of 1.5-4x spikes: steady_from moves by at
    most one block (5 latencies at n = 300) in at least 95 %; and huge spikes in a flat run change
    nothing."""
    rng = np.random.default_rng(31)
    same = 0
    for _ in range(300):
        clean = series(rng, 300, "drift", change=100)
        a, b = detect(clean).steady_from, detect(with_spikes(rng, clean, 0.02)).steady_from
        same += a is not None and b is not None and abs(a - b) <= 5
    print(f"spikes: steady_from moved by at most one block in {same / 300:.1%}")
    assert same >= 0.95 * 300
    flat = [BASE_NS] * 200
    for i in (3, 50, 51, 120, 199):
        flat[i] = 50 * BASE_NS
    assert detect(flat).steady_from == 0 and detect(flat).no_steady_state is False


def test_too_few_latencies_are_not_judged_and_constant_ones_are_steady():
    assert detect([BASE_NS] * (MIN_LATENCIES - 1)).no_steady_state is None
    assert detect([BASE_NS] * (MIN_LATENCIES - 1)).steady_from is None
    constant = detect([BASE_NS] * 500)
    assert constant.steady_from == 0 and constant.no_steady_state is False
    wild = detect([10.0 ** (i % 13) for i in range(300)] + [10.0**12] * 100 + [1.0] * 100)
    assert wild.no_steady_state in (True, False), "latencies spanning 12 decades give a verdict"
    assert detect([0] * 100).steady_from == 0, "a zero latency (a coarse clock) is no error"
