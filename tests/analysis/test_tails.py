"""Tails across processes (edgestats/analysis/estimators/tails.py): the equal-weight mixture against numpy and
a hand computation, the convolution against scipy's quadrature, the minimum sample, and the
coverage of the configuration's p99 by simulation, beside the old typical-run interval's."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import integrate, optimize, stats

from edgestats.analysis.estimators.intervals import BootstrapSettings
from edgestats.analysis.estimators.tails import (
    KNOT_PROBABILITIES,
    MIN_LATENCIES,
    TWO_RUNS_P99_NOTE,
    convolved_quantiles,
    mixture_quantile,
    tails_over_runs,
    two_level_tail,
    weighted_quantiles,
)
from edgestats.collectors.core.runconfig import RunConfig
from edgestats.reports.terminal import collect as terminal_collect

SETTINGS = BootstrapSettings(seed=5)


def test_equal_weights_give_numpys_quantile():
    rng = np.random.default_rng(1)
    for n in (1, 2, 7, 200):
        values = np.sort(rng.lognormal(1, 0.5, n))
        probs = np.linspace(0, 1, 41)
        assert weighted_quantiles(values, np.full(n, 1 / n), probs) == pytest.approx(
            np.quantile(values, probs)
        )
    runs = [rng.lognormal(1, 0.3, 50) for _ in range(4)]  # equal lengths: the pooled sample's quantile
    assert mixture_quantile(runs, 0.99) == pytest.approx(np.quantile(np.concatenate(runs), 0.99))


def test_mixture_weighs_each_run_equally_by_hand():
    """Runs [1, 2, 3] and [10]: weights 1/6, 1/6, 1/6, 1/2; mid-ranks 1/12, 3/12, 5/12, 9/12,
    rescaled to 0, 1/4, 1/2, 1; so the median is 3 and q = 0.75 is halfway from 3 to 10."""
    runs = [np.array([1.0, 2.0, 3.0]), np.array([10.0])]
    assert mixture_quantile(runs, 0.5) == pytest.approx(3.0)
    assert mixture_quantile(runs, 0.75) == pytest.approx(6.5)
    assert mixture_quantile(runs, 0.125) == pytest.approx(1.5)


def quad_quantile(q: float, rho: float, knots: np.ndarray, probs: np.ndarray) -> float:
    """The q-quantile of Normal(0, rho²) plus G (uniform between knots), by scipy's quadrature of
    each piece's CDF and Brent's root finder: independent of the closed form."""

    def cdf(x: float) -> float:
        total = 0.0
        for a, b, mass in zip(knots[:-1], knots[1:], np.diff(probs)):
            if b - a < 1e-12:
                total += mass * stats.norm.cdf((x - a) / rho)
            else:
                piece = integrate.quad(lambda u: stats.norm.cdf((x - u) / rho), a, b, epsabs=1e-13)[0]
                total += mass * piece / (b - a)
        return total - q

    return optimize.brentq(cdf, knots[0] - 10 * rho, knots[-1] + 10 * rho, xtol=1e-12)


@pytest.mark.parametrize("rho", [0.003, 0.02, 0.1])
def test_convolution_matches_scipys_quadrature(rho):
    rng = np.random.default_rng(2)
    probs = np.array([0.0, 0.2, 0.5, 0.8, 0.9, 0.95, 0.99, 1.0])
    knots = np.sort(rng.normal(0, 0.05, len(probs)))
    knots[3] = knots[4]  # a tie: a piece of no width is a point mass
    qs = np.array([0.5, 0.9, 0.99])
    ours = convolved_quantiles(np.full(3, rho), qs, knots, probs)
    assert ours == pytest.approx([quad_quantile(q, rho, knots, probs) for q in qs], abs=1e-8)
    # rho 0 reads G itself: the piecewise-linear quantile function
    assert convolved_quantiles(np.zeros(3), qs, knots, probs) == pytest.approx(np.interp(qs, probs, knots))


def test_the_model_finds_a_known_normal_p99():
    """Many runs of normal log latencies: the estimate is near μ + z₀.₉₉·√(σ_b² + σ_w²)."""
    rng = np.random.default_rng(3)
    between, within = 0.05, 0.02
    logs = rng.normal(0, between, 300)[:, None] + rng.normal(0, within, (300, 400))
    fit = two_level_tail(list(logs), [0.9, 0.99], level=0.95, rng=rng)
    truth = stats.norm.ppf([0.9, 0.99]) * math.hypot(between, within)
    assert fit.estimate == pytest.approx(truth, abs=0.006)
    assert np.all(fit.low < truth) and np.all(truth < fit.high)
    assert fit.between_run_sd == pytest.approx(between, rel=0.1)
    assert fit.within_run_sd == pytest.approx(within, rel=0.02)
    assert KNOT_PROBABILITIES[0] == 0 and KNOT_PROBABILITIES[-1] == 1


# -- minimum sample -------------------------------------------------------------------------------


def test_runs_short_of_the_minimum_are_left_out_and_all_short_is_marked():
    rng = np.random.default_rng(4)
    long_runs = [rng.lognormal(1, 0.05, 150) for _ in range(4)]
    short_runs = [rng.lognormal(1, 0.05, 60) for _ in range(2)]
    out = tails_over_runs(long_runs + short_runs, level=0.95, settings=SETTINGS, label="t")
    p99, p90 = out["latency_p99_ms"], out["latency_p90_ms"]
    assert p99.n == 4
    assert "2 runs with fewer than 100 steady latencies left out of p99" in p99.note
    assert p90.n == 6 and p90.note is None  # 60 ≥ 20: they count for p90
    assert p99.ci_low < p99.estimate < p99.ci_high and p99.method.startswith("across processes")
    assert out["latency_p99_typical_run_ms"].n == 4
    marked = tails_over_runs(short_runs, level=0.95, settings=SETTINGS, label="t")["latency_p99_ms"]
    assert marked.ci_low is None and marked.note.startswith("too few latencies for p99")
    assert marked.estimate == pytest.approx(np.quantile(np.concatenate(short_runs), 0.99))


def test_p99_from_two_runs_says_so_instead_of_an_interval():
    """Issue 39: with 2 runs the across-process p99 interval is 10^2-10^6 times its estimate at
    2-30 % between-run spread. The two-level fit still makes one (here, runs 2-5 % apart: its upper
    end is printed, 4.7 times the estimate), but the summary gives the estimate, no interval and
    the note; p90 keeps its wide interval and note, and 3 runs give a p99 interval."""
    rng = np.random.default_rng(39)
    runs = [rng.lognormal(1 + shift, 0.05, 200) for shift in (0.0, 0.03, -0.02)]
    fit = two_level_tail([np.log(run) for run in runs[:2]], [0.99], level=0.95, rng=rng)
    ratio = math.exp(fit.high[0] - fit.estimate[0])
    print(f"\np99 from 2 runs: the interval's upper end is {ratio:.3g} times the estimate")
    assert ratio >= 2
    two = tails_over_runs(runs[:2], level=0.95, settings=SETTINGS, label="t")
    p99, p90 = two["latency_p99_ms"], two["latency_p90_ms"]
    assert p99.estimate > 0 and not p99.has_interval and p99.n == 2
    assert p99.note == TWO_RUNS_P99_NOTE and "3 or more runs" in p99.note
    assert p90.has_interval and "one degree of freedom" in p90.note
    three = tails_over_runs(runs, level=0.95, settings=SETTINGS, label="t")["latency_p99_ms"]
    assert three.has_interval and three.note is None


def test_collect_warns_with_the_same_minimum():
    assert terminal_collect.TAIL_MIN_LATENCIES == {f"p{100 * q:g}": n for q, n in MIN_LATENCIES.items()}
    warning = terminal_collect.tail_warning([RunConfig("pytorch", "cnn", iterations=50)])
    assert warning.startswith("--iterations 50: a run needs 100 steady latencies for p99;")
    both = terminal_collect.tail_warning([RunConfig("pytorch", "cnn", iterations=n) for n in (10, 500)])
    assert "20 steady latencies for p90 and 100 steady latencies for p99" in both
    assert terminal_collect.tail_warning([RunConfig("pytorch", "cnn", iterations=100)]) is None
    training = RunConfig("pytorch", "cnn", kind="training", iterations=5)
    assert terminal_collect.tail_warning([training]) is None


def test_loadgen_minimums_are_the_second_largest_latencys_99_percent_bound():
    """docs/methodology.md: LoadGen's 64 (p90) and 662 (p99) are the fewest latencies for which at
    most one above the percentile still bounds it at 99 % confidence: P(Binomial(n, 1 - q) ≤ 1) ≤ 0.01."""
    for q, expected in ((0.9, 64), (0.99, 662)):
        n = next(n for n in range(2, 2000) if stats.binom.cdf(1, n, 1 - q) <= 0.01)
        assert n == expected
    # and with none above it (the largest latency): 44 and 459
    assert [math.ceil(math.log(0.01) / math.log(q)) for q in (0.9, 0.99)] == [44, 459]


# -- coverage -------------------------------------------------------------------------------------


def coverage(n_configs: int, runs: int, latencies: int, between: float, within: float, seed: int):
    """Old (typical run: geometric mean of per-run p99, log-t) and new (two-level model) coverage
    of the configuration's true p99 across processes, exp(z₀.₉₉·√(σ_b² + σ_w²)) for log latency
    ~ Normal(0, σ_b²) + Normal(0, σ_w²)."""
    rng = np.random.default_rng(seed)
    truth = stats.norm.ppf(0.99) * math.hypot(between, within)
    logs = rng.normal(0, between, (n_configs, runs, 1)) + rng.normal(0, within, (n_configs, runs, latencies))
    per_run = np.log(np.quantile(np.exp(logs), 0.99, axis=2))  # the old estimator, vectorised
    half = stats.t.ppf(0.975, runs - 1) * per_run.std(axis=1, ddof=1) / math.sqrt(runs)
    old = np.mean(np.abs(per_run.mean(axis=1) - truth) <= half)
    new = 0
    for config in logs:
        fit = two_level_tail(list(config), [0.99], level=0.95, rng=rng)
        new += fit.low[0] <= truth <= fit.high[0]
    return old, new / n_configs


@pytest.mark.parametrize(
    ("runs", "latencies", "between", "within"),
    [(10, 200, 0.05, 0.02), (5, 200, 0.03, 0.05)],
    ids=["10x200 between 5% within 2%", "5x200 between 3% within 5%"],
)
@pytest.mark.slow
def test_p99_across_processes_covers(runs, latencies, between, within):
    n_configs = 600
    old, new = coverage(n_configs, runs, latencies, between, within, seed=27)
    print(
        f"\np99 across processes, {n_configs} configurations of {runs} runs x {latencies} latencies, "
        f"between-run SD {between:.0%}, within-run SD {within:.0%}: "
        f"old (typical run) {old:.1%}, new {new:.1%}"
    )
    assert 0.90 <= new <= 0.97
