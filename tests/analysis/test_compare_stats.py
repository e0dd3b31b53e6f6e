"""compare's statistics on arrays (edgestats/analysis/estimators/welch.py): the minimum detectable
effect against statsmodels where Welch's test is exactly a noncentral t, and by simulation of
compare's own verdict where it is not; the equivalence verdict's family-wise error with Holm
(beside the old unadjusted rule's); and A/A comparisons that never say faster or slower.

Every simulation is seeded, vectorised (compare_stats' functions on arrays of simulated runs) and
writes its parameters here: normal log figures (log-normal per-run figures) with the given
between-run SDs and run counts, threshold 5 %, level 0.95.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from statsmodels.stats.power import TTestIndPower, TTestPower

from edgestats.analysis.estimators import welch as cs
from edgestats.analysis.estimators.multiplicity import holm

THRESHOLD, LEVEL = 0.05, 0.95
BAND = math.log1p(THRESHOLD)


def simulated_codes(
    rng: np.random.Generator,
    n_a: int,
    sd_a: float,
    n_b: int,
    sd_b: float,
    log_ratio: float,
    k: int,
    m: int = 1,
    threshold: float = THRESHOLD,
) -> np.ndarray:
    """compare's verdict on k simulated comparisons, B/A = exp(log_ratio); the p-value at Holm's
    first step of a family of m (m * p: the least favourable step)."""
    w = cs.welch_log(rng.normal(0.0, sd_a, (k, n_a)), rng.normal(log_ratio, sd_b, (k, n_b)))
    low, high = cs.ratio_interval(w, LEVEL)
    p_holm = np.minimum(m * cs.welch_p_value(w), 1.0)
    p_equivalence = np.minimum(m * cs.equivalence_p_value(w, threshold), 1.0)
    return cs.verdict_codes(low, high, p_holm, p_equivalence, level=LEVEL, threshold=threshold)


@pytest.mark.parametrize(("n_b", "threshold", "m"), [(3, 0.05, 1), (6, 0.05, 1), (4, 0.0, 4), (10, 0.02, 1)])
def test_min_detectable_effect_equals_statsmodels_where_welch_is_a_noncentral_t(n_b, threshold, m):
    """With no spread on side A, Welch's df is n_b - 1 whatever the sample, and "slower" is the
    one-sided t test of log(B/A) > log(1+t) at the interval's level (the test's level alpha/m
    where it is the stricter, t = 0): statsmodels' power of the one-sample t test, solved for the
    effect, gives the same change (effect size x SD) to 1e-5 (the quadrature's accuracy)."""
    sd_b, alpha = 0.04, (1 - LEVEL) / m
    design = cs.Design(0.0, 5, sd_b, n_b)
    pct = cs.min_detectable_pct(design, threshold=threshold, level=LEVEL, alpha_test=alpha)
    strictest = min(alpha, 1 - LEVEL) if threshold == 0 else 1 - LEVEL
    effect = TTestPower().solve_power(nobs=n_b, alpha=strictest / 2, power=0.8, alternative="larger")
    expected = 100 * math.expm1(math.log1p(threshold) + effect * sd_b)
    assert pct == pytest.approx(expected, rel=1e-5)


def test_min_detectable_effect_is_near_statsmodels_pooled_t_with_many_runs_and_not_with_few():
    """Equal runs and SDs a side, threshold 0: with 30 runs Welch's df hardly varies and the MDE is
    statsmodels' two-sample t (TTestIndPower) to 1 %; with 3 runs Welch's random df costs power,
    which the pooled-t figure misses: at its MDE compare says slower well under 80 % of the time
    (printed, old beside new), at ours 80 % (2 x 20,000 comparisons, seed 11)."""
    rng = np.random.default_rng(11)
    sd = 0.03
    for n, tolerance in ((30, 0.01), (3, None)):
        pct = cs.min_detectable_pct(cs.Design(sd, n, sd, n), threshold=0.0, level=LEVEL, alpha_test=0.05)
        effect = TTestIndPower().solve_power(nobs1=n, alpha=0.025, power=0.8, ratio=1.0, alternative="larger")
        pooled_pct = 100 * math.expm1(effect * sd)
        if tolerance is not None:
            assert math.log1p(pct / 100) == pytest.approx(math.log1p(pooled_pct / 100), rel=tolerance)
            continue
        hit_pooled, hit_ours = (
            np.mean(
                simulated_codes(rng, n, sd, n, sd, math.log1p(x / 100), 20_000, threshold=0.0) == cs.LARGER
            )
            for x in (pooled_pct, pct)
        )
        print(f"3 runs a side: pooled-t MDE {pooled_pct:.1f}% slower in {hit_pooled:.1%}; ", end="")
        print(f"Welch (ours) {pct:.1f}% slower in {hit_ours:.1%}")
        assert hit_pooled < 0.75 and abs(hit_ours - 0.8) < 0.015


@pytest.mark.parametrize(
    ("n_a", "sd_a", "n_b", "sd_b", "m"),
    [
        (4, 0.02, 7, 0.06, 1),  # unequal runs and spread: Welch's case
        (2, 0.02, 2, 0.02, 1),  # the fewest runs compare tests
        (2, 0.05, 5, 0.02, 1),  # Welch df near 1
        (10, 0.05, 5, 0.01, 1),
        (5, 0.03, 5, 0.03, 4),  # a family of 4: the test at 0.05 / 4, the interval at 95 %
    ],
)
def test_compare_says_slower_80_percent_of_the_time_at_the_min_detectable_effect(n_a, sd_a, n_b, sd_b, m):
    """The independent check where no closed form exists: 20,000 simulated comparisons (seed 5)
    with B/A at the MDE are called slower in 80 % ± 1.5 % of them."""
    design = cs.Design(sd_a, n_a, sd_b, n_b)
    pct = cs.min_detectable_pct(design, threshold=THRESHOLD, level=LEVEL, alpha_test=(1 - LEVEL) / m)
    codes = simulated_codes(np.random.default_rng(5), n_a, sd_a, n_b, sd_b, math.log1p(pct / 100), 20_000, m)
    power = np.mean(codes == cs.LARGER)
    print(f"{n_a} vs {n_b} runs, SD {sd_a:.0%}/{sd_b:.0%}, family {m}: MDE {pct:.1f}%, slower in {power:.1%}")
    assert abs(power - 0.8) < 0.015 and pct > 100 * THRESHOLD


def test_a_min_detectable_effect_beyond_reach_is_none():
    """Two runs a side at 30 % SD with the test at 0.05 / 1000: no finite change is found 80 % of
    the time on the scale exp can hold."""
    design = cs.Design(0.3, 2, 0.3, 2)
    assert cs.min_detectable_pct(design, threshold=THRESHOLD, level=LEVEL, alpha_test=0.05 / 1000) is None
    assert (
        cs.min_detectable_pct(cs.Design(0.0, 3, 0.0, 3), threshold=THRESHOLD, level=LEVEL, alpha_test=0.05)
        is None
    )


def test_same_keeps_its_familywise_error_with_holm_where_the_old_rule_did_not():
    """400 families of 10 configurations (5 vs 5 runs, SD 2 %), every true ratio at the band's
    edge 1.05, so every `same` is false (seed 21). With Holm over the TOST p-values the share of
    families with any `same` stays under (1 - level)/2 = 2.5 % (+ 1.5 % for 400 families); the
    old rule (each interval inside the band, unadjusted) is printed beside it (about 20 %)."""
    rng = np.random.default_rng(21)
    families, m = 400, 10
    w = cs.welch_log(rng.normal(0.0, 0.02, (families, m, 5)), rng.normal(BAND, 0.02, (families, m, 5)))
    low, high = cs.ratio_interval(w, LEVEL)
    p_equivalence = cs.equivalence_p_value(w, THRESHOLD)
    p_equivalence_holm = np.array([holm(row) for row in p_equivalence])
    nothing = np.ones_like(low)
    new = cs.verdict_codes(low, high, nothing, p_equivalence_holm, level=LEVEL, threshold=THRESHOLD)
    old = (low >= 1 / (1 + THRESHOLD)) & (high <= 1 + THRESHOLD)
    new_rate, old_rate = np.mean((new == cs.SAME).any(axis=1)), np.mean(old.any(axis=1))
    print(f"families with a false `same`: old rule {old_rate:.1%}, Holm-adjusted TOST {new_rate:.1%}")
    assert new_rate <= 0.04 and old_rate >= 0.12


@pytest.mark.parametrize(
    ("n_a", "n_b", "sd"),
    [(2, 2, 0.01), (3, 3, 0.02), (5, 5, 0.03), (12, 12, 0.05)],
)
def test_a_against_a_never_says_faster_or_slower(n_a, n_b, sd):
    """400 A/A comparisons per setting (seed 8), one configuration each (no Holm to help): never
    faster or slower. (The rule bounds it at 2.5 % a direction; at these spreads the chance of one
    in 400 is under 1 %.) How often `same` is found is printed."""
    codes = simulated_codes(np.random.default_rng(8), n_a, sd, n_b, sd, 0.0, 400)
    print(f"A/A {n_a} vs {n_b} runs, SD {sd:.0%}: same {np.mean(codes == cs.SAME):.0%}")
    assert not np.isin(codes, [cs.LARGER, cs.SMALLER]).any()


@pytest.mark.slow
@pytest.mark.parametrize(("n_a", "sd_a", "n_b", "sd_b", "m"), [(3, 0.03, 3, 0.03, 1), (4, 0.02, 7, 0.06, 2)])
def test_the_printed_min_detectable_effect_is_found_at_least_78_percent_of_the_time(n_a, sd_a, n_b, sd_b, m):
    """What "power at the printed MDE" means: a comparison of these runs prints an MDE computed
    from its own measured SDs; if the true change were that MDE, a fresh comparison of as many runs
    (same true SDs) would be called slower with what probability? Averaged over what the first
    comparison happened to measure, that is the power a reader gets at the printed figure.

    300 pilot comparisons (seed 78) each print an MDE (compare's `measured_min_detectable_pct`);
    for each, 40 fresh comparisons with B/A at that MDE are judged by compare's rule (12,000 in
    all). Called slower in at least 78 %; the old plug-in MDE (the measured SDs as the truth,
    72.7-74.8 % in the audit) is printed beside it."""
    rng, pilots, fresh, alpha = np.random.default_rng(78), 300, 40, (1 - LEVEL) / m
    s_a = rng.normal(0.0, sd_a, (pilots, n_a)).std(axis=1, ddof=1)
    s_b = rng.normal(0.0, sd_b, (pilots, n_b)).std(axis=1, ddof=1)
    shares = {}
    for name, mde in (("printed", cs.measured_min_detectable_pct), ("plug-in", cs.min_detectable_pct)):
        pct = np.array(
            [
                mde(cs.Design(a, n_a, b, n_b), threshold=THRESHOLD, level=LEVEL, alpha_test=alpha)
                for a, b in zip(s_a, s_b)
            ]
        )
        log_ratio = np.repeat(np.log1p(pct / 100), fresh)[:, None]
        codes = simulated_codes(rng, n_a, sd_a, n_b, sd_b, log_ratio, pilots * fresh, m)
        shares[name] = float(np.mean(codes == cs.LARGER))
    print(
        f"{n_a} vs {n_b} runs, SD {sd_a:.0%}/{sd_b:.0%}, family {m}: power at the printed MDE "
        f"{shares['printed']:.1%}, at the plug-in MDE {shares['plug-in']:.1%}"
    )
    assert shares["printed"] >= 0.78
