"""The stopping rule of `collect --until-precise` (edgestats/analysis/estimators/stopping.py): Stein's
two-stage procedure against a hand computation, and its coverage by simulation against the old
rule (stop as soon as the run-level interval looks narrow enough, after 3 runs).

The simulations run the rule the collector runs (`stein_decisions`, the core of the `stein_rule`
that collectors/precision.py calls after every run) on each configuration's runs so far: after
run n, every configuration still open is decided from its first n run medians, exactly as the
loop would, vectorised over configurations. Run medians are log-normal around the truth (the
configuration's median: the centre of the run-median distribution)."""

from __future__ import annotations

import math
import statistics

import numpy as np
import pytest
from scipy import stats

from edgestats.analysis.estimators.hierarchical import median_over_runs
from edgestats.analysis.estimators.stopping import stein_decisions, stein_rule

LEVEL = 0.95
TRUE_MEDIAN_MS = 20.0
PILOT_RUNS = 5
OLD_MIN_RUNS = 3
N_CONFIGS = 2000  # binomial SE of a 95 % coverage: 0.5 points, so 93-97 % is ±4 SE


def simulate(between_run_sd: float, target: float, max_repeat: int, seed: int) -> dict[str, float]:
    """Both rules on the same simulated configurations: coverage of the truth by the interval each
    reports when it stops, and how they stopped."""
    rng = np.random.default_rng(seed)
    medians = TRUE_MEDIAN_MS * np.exp(rng.normal(0.0, between_run_sd, (N_CONFIGS, max_repeat)))
    truth = math.log(TRUE_MEDIAN_MS)
    open_ = np.ones(N_CONFIGS, bool)
    stop_n = np.zeros(N_CONFIGS, int)
    covered, run_level_covered, precise = (np.zeros(N_CONFIGS, bool) for _ in range(3))
    for n in range(1, max_repeat + 1):
        found = stein_decisions(
            medians[:, :n], target, level=LEVEL, pilot_runs=PILOT_RUNS, max_repeat=max_repeat
        )
        stops = open_ & (found.decision != "continue")
        miss = np.abs(found.log_centre - truth)
        covered[stops] = (miss <= found.log_half_width)[stops]
        run_level_covered[stops] = (miss <= found.run_level_log_half_width)[stops]
        precise[stops] = (found.decision == "precise")[stops]
        stop_n[stops] = n
        open_ &= ~stops
    assert not open_.any(), "every configuration stops by --max-repeat"
    old_covered, old_n = old_rule(medians, target, truth)
    return {
        "new": covered.mean(),
        "old": old_covered.mean(),
        "analyze_after_new": run_level_covered.mean(),
        "new_at_pilot": covered[stop_n == PILOT_RUNS].mean() if (stop_n == PILOT_RUNS).any() else math.nan,
        "old_at_3": old_covered[old_n == OLD_MIN_RUNS].mean() if (old_n == OLD_MIN_RUNS).any() else math.nan,
        "share_at_pilot": (stop_n == PILOT_RUNS).mean(),
        "share_at_3": (old_n == OLD_MIN_RUNS).mean(),
        "precise": precise.mean(),
        "mean_runs_new": stop_n.mean(),
        "mean_runs_old": old_n.mean(),
    }


def old_rule(medians: np.ndarray, target: float, truth: float) -> tuple[np.ndarray, np.ndarray]:
    """Today's rule before this change: after at least 3 runs, stop as soon as the run-level t
    interval's relative half-width, (high - low) / 2 / estimate = sinh(t·s/√n), is within the
    target (or at --max-repeat), and report that interval."""
    logs = np.log(medians)
    configs, max_repeat = logs.shape
    open_, covered, stop_n = np.ones(configs, bool), np.zeros(configs, bool), np.zeros(configs, int)
    for n in range(OLD_MIN_RUNS, max_repeat + 1):
        half = stats.t.ppf(0.5 + LEVEL / 2, n - 1) * logs[:, :n].std(axis=1, ddof=1) / math.sqrt(n)
        stops = open_ & ((np.sinh(half) <= target) | (n == max_repeat))
        covered[stops] = (np.abs(logs[:, :n].mean(axis=1) - truth) <= half)[stops]
        stop_n[stops] = n
        open_ &= ~stops
    return covered, stop_n


def report(label: str, found: dict[str, float]) -> None:
    print(
        f"\n{label}: coverage old rule {found['old']:.1%} (mean {found['mean_runs_old']:.1f} runs; "
        f"{found['share_at_3']:.0%} stopped at 3 runs, covering {found['old_at_3']:.0%}) | new rule "
        f"{found['new']:.1%} (mean {found['mean_runs_new']:.1f} runs, {found['precise']:.0%} precise; "
        f"{found['share_at_pilot']:.0%} stopped at the pilot, covering {found['new_at_pilot']:.0%}) "
        f"| analyze's run-level interval after the new rule {found['analyze_after_new']:.1%}"
    )


# High between-run spread: run medians 5 % apart (log SD), the default --max-repeat 20, and a
# cap high enough that Stein's plan (about 48 runs at ±2 %, 21 at ±3 %) is reached.
@pytest.mark.parametrize("target", [0.02, 0.03])
@pytest.mark.parametrize("max_repeat", [20, 60])
def test_until_precise_covers_in_a_high_between_run_setting(target, max_repeat):
    found = simulate(between_run_sd=0.05, target=target, max_repeat=max_repeat, seed=27)
    report(f"between-run SD 5 %, ±{target:.0%}, --max-repeat {max_repeat}", found)
    assert 0.93 <= found["new"] <= 0.97
    assert found["old"] < 0.93, "the old rule's shortfall, which this rule is for, is still there"


# Every target the rule accepts, from a stable configuration (the pilot suffices) to one that
# never reaches the target in 20 runs: Stein's interval is exact, so no ratio of spread to
# target should leave 93-97 %.
@pytest.mark.parametrize(
    ("between_run_sd", "target"), [(0.005, 0.02), (0.02, 0.02), (0.03, 0.02), (0.02, 0.01), (0.08, 0.05)]
)
def test_until_precise_covers_at_every_ratio_of_spread_to_target(between_run_sd, target):
    found = simulate(between_run_sd=between_run_sd, target=target, max_repeat=20, seed=45)
    report(f"between-run SD {between_run_sd:.1%}, ±{target:.0%}", found)
    assert 0.93 <= found["new"] <= 0.97


# -- against a hand computation -----------------------------------------------------------------

MEDIANS_MS = [10.0, 10.4, 9.7, 10.9, 9.8, 10.2, 10.6, 9.9, 10.1]  # log SD of the first 5: 4.79 %
TARGET = 0.045  # Stein plans (2.776 · 4.79 % / asinh(4.5 %))² = 8.7: 9 runs


def test_the_plan_and_the_interval_are_steins():
    target, max_repeat = TARGET, 20
    logs = [math.log(m) for m in MEDIANS_MS]
    s0 = statistics.stdev(logs[:PILOT_RUNS])
    t4 = stats.t.ppf(0.975, PILOT_RUNS - 1)
    planned = max(PILOT_RUNS, math.ceil((t4 * s0 / math.asinh(target)) ** 2))
    assert planned == 9
    for n in range(1, len(MEDIANS_MS) + 1):
        found = stein_decisions(
            [MEDIANS_MS[:n]], target, level=LEVEL, pilot_runs=PILOT_RUNS, max_repeat=max_repeat
        )
        assert found.decision[0] == ("precise" if n >= planned else "continue")
        if n >= PILOT_RUNS:
            assert found.pilot_log_sd[0] == pytest.approx(s0) and found.planned_runs[0] == planned
            assert found.log_half_width[0] == pytest.approx(t4 * s0 / math.sqrt(n))
            assert found.log_centre[0] == pytest.approx(statistics.fmean(logs[:n]))
    assert math.sinh(t4 * s0 / math.sqrt(planned)) <= target, "the planned runs reach the target"


def test_max_repeat_cuts_the_plan_and_says_so():
    rule = stein_rule(TARGET, level=LEVEL, pilot_runs=PILOT_RUNS, max_repeat=7)
    found = rule([[m] * 3 for m in MEDIANS_MS[:7]])
    s0 = statistics.stdev(math.log(m) for m in MEDIANS_MS[:PILOT_RUNS])
    assert found["decision"] == "max-repeat" and found["planned_runs"] == 9
    assert found["rel_half_width"] == pytest.approx(math.sinh(stats.t.ppf(0.975, 4) * s0 / math.sqrt(7)))
    assert (
        "target ±4.5 % not reached" in found["detail"] and "planned 9 runs > --max-repeat 7" in found["rule"]
    )


def test_the_run_level_half_width_is_analyzes_interval():
    """The interval `analyze` reports over all the runs is recorded beside the rule's."""
    runs = [np.full(11, m) * np.linspace(0.99, 1.01, 11) for m in MEDIANS_MS[:6]]
    found = stein_rule(0.03, level=LEVEL, pilot_runs=PILOT_RUNS, max_repeat=20)(runs)
    estimate = median_over_runs(runs, level=LEVEL)
    expected = (estimate.ci_high - estimate.ci_low) / 2 / estimate.estimate
    assert found["run_level_rel_half_width"] == pytest.approx(expected)
    assert found["decision"] == "continue" and found["rule"].startswith(
        "stein two-stage: pilot 5 runs, s0 4.79 %, planned 20 runs"
    )


def test_before_the_pilot_only_max_repeat_stops():
    rule = stein_rule(0.5, level=LEVEL, pilot_runs=PILOT_RUNS, max_repeat=20)
    assert rule([[10.0], [10.01]])["decision"] == "continue", "±50 % reached, but the pilot is not complete"
    short = stein_rule(0.5, level=LEVEL, pilot_runs=PILOT_RUNS, max_repeat=3)([[10.0], [10.2], [9.9]])
    expected = median_over_runs([[10.0], [10.2], [9.9]], level=LEVEL)
    assert short["decision"] == "max-repeat" and short["pilot_log_sd"] is None
    assert short["rel_half_width"] == pytest.approx(
        (expected.ci_high - expected.ci_low) / 2 / expected.estimate
    )


def test_a_pilot_without_spread_stops_with_no_interval_and_says_why():
    found = stein_rule(0.02, level=LEVEL, pilot_runs=PILOT_RUNS, max_repeat=20)([[7.0, 7.0]] * 5)
    assert found["decision"] == "precise" and found["rel_half_width"] is None
    assert "all equal" in found["rule"] and found["planned_runs"] == PILOT_RUNS


def test_a_pilot_of_one_run_is_refused():
    with pytest.raises(ValueError, match="at least 2"):
        stein_decisions([[1.0]], 0.02, level=LEVEL, pilot_runs=1, max_repeat=5)


# -- beyond normal log run medians: collect's default pilot ---------------------------------------

DEFAULT_PILOT = 10  # collectors/precision.PILOT_RUNS, the pilot collect uses
SHAPE_CONFIGS = 4000  # binomial SE of a 93 % coverage: 0.4 points
_TRUTH_DRAWS = np.random.default_rng(2024).exponential(1.0, 2_000_000)


def shaped_medians(shape: str, rng: np.random.Generator, size: tuple[int, int]) -> tuple[np.ndarray, float]:
    """Run medians of one shape (relative to a median of 1) and the estimand, the mean log run
    median the rule's interval is for (its exp: the geometric mean `analyze` reports)."""
    if shape == "normal, 5 %":
        return np.exp(rng.normal(0.0, 0.05, size)), 0.0
    if shape == "t(3), 3 %":
        return np.exp(0.03 * rng.standard_t(3, size)), 0.0
    if shape == "log-normal, sigma 1":  # skewed run medians: spread over orders of magnitude
        return np.exp(rng.normal(0.0, 1.0, size)), 0.0
    if shape == "exponential":  # skewed run medians; their logs skewed too (skewness -1.14)
        return rng.exponential(1.0, size), -np.euler_gamma
    if shape == "exponential^0.05":  # the same skewed logs, 6 % apart: pilots stop at once
        return rng.exponential(1.0, size) ** 0.05, -0.05 * np.euler_gamma
    if shape.startswith("two-state"):  # a share p of runs 10 % slower, 1 % spread inside a state
        p = {"two-state, 30 % slow": 0.3, "two-state, 50 % slow": 0.5}[shape]
        slow = rng.random(size) < p
        return np.exp(rng.normal(0.0, 0.01, size) + slow * math.log(1.1)), p * math.log(1.1)
    if shape == "slow runs: 1 + 5 % exponential":  # a few runs much slower (the limit)
        return 1 + 0.05 * rng.exponential(1.0, size), float(np.log1p(0.05 * _TRUTH_DRAWS).mean())
    raise ValueError(shape)


def shaped_coverage(shape: str, target: float, pilot: int, seed: int, max_repeat: int = 20) -> dict:
    """The rule on SHAPE_CONFIGS configurations of one shape, as collect runs it (after each run,
    every open configuration decided from its runs so far): coverage of the estimand by the
    interval reported at the stop, the mean runs, and the share that stopped at the pilot."""
    medians, truth = shaped_medians(shape, np.random.default_rng(seed), (SHAPE_CONFIGS, max_repeat))
    open_, covered = np.ones(SHAPE_CONFIGS, bool), np.zeros(SHAPE_CONFIGS, bool)
    stop_n = np.zeros(SHAPE_CONFIGS, int)
    for n in range(pilot, max_repeat + 1):  # before the pilot only --max-repeat stops (tested above)
        found = stein_decisions(medians[:, :n], target, level=LEVEL, pilot_runs=pilot, max_repeat=max_repeat)
        stops = open_ & (found.decision != "continue")
        covered[stops] = (np.abs(found.log_centre - truth) <= found.log_half_width)[stops]
        stop_n[stops], open_ = n, open_ & ~stops
    assert not open_.any()
    return {"coverage": covered.mean(), "runs": stop_n.mean(), "at_pilot": (stop_n == pilot).mean()}


# shape, target: coverage of collect's pilot of 10 must be >= 92 % (>= 93 % for normal log run
# medians); the pilot of 5 this replaced covered 81-82 % for the 30 % two-state runs.
SHAPES = [
    ("normal, 5 %", 0.02, 0.93),
    ("normal, 5 %", 0.05, 0.93),
    ("t(3), 3 %", 0.02, 0.92),
    ("log-normal, sigma 1", 0.05, 0.92),
    ("exponential", 0.05, 0.92),
    ("exponential^0.05", 0.05, 0.92),
    ("two-state, 30 % slow", 0.02, 0.92),
    ("two-state, 30 % slow", 0.05, 0.92),
    ("two-state, 50 % slow", 0.05, 0.92),
]


@pytest.mark.parametrize(("shape", "target", "floor"), SHAPES)
def test_collects_pilot_covers_skewed_heavy_tailed_and_two_state_run_medians(shape, target, floor):
    found = shaped_coverage(shape, target, DEFAULT_PILOT, seed=61)
    five = shaped_coverage(shape, target, 5, seed=61)
    print(
        f"\n{shape}, ±{target:.0%}: pilot 10 covers {found['coverage']:.1%} (mean {found['runs']:.1f} "
        f"runs, {found['at_pilot']:.0%} at the pilot); pilot 5 {five['coverage']:.1%}"
    )
    assert found["coverage"] >= floor
    assert found["coverage"] <= 0.975, "no wider than it says either"


def test_the_limit_a_few_much_slower_runs_is_what_the_docs_say():
    """Right-skewed run medians (most runs alike, a few much slower: 1 + 5 % x exponential) are
    the shape no t interval of 20 runs covers at its level: 90-91 %, as docs/methodology.md
    says; this pins the figure the docs and collect's output state."""
    found = shaped_coverage("slow runs: 1 + 5 % exponential", 0.05, DEFAULT_PILOT, seed=61)
    print(f"\nslow runs, ±5 %: pilot 10 covers {found['coverage']:.1%}")
    assert 0.88 <= found["coverage"] <= 0.92


def test_collect_uses_the_pilot_simulated_here():
    from edgestats.collectors.precision import PILOT_RUNS

    assert PILOT_RUNS == DEFAULT_PILOT
