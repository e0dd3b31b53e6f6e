"""Steady state by change-point detection: where a run's latencies stop warming up, and whether
they ever do (docs/methodology.md §1, "Steady state").

A fixed warm-up count is a guess: Barrett et al. (OOPSLA 2017) found that many benchmark/VM pairs
never reach a steady state, and Traini et al. (EMSE 2023) that fixed warm-up counts are often
wrong in both directions. Both detect the steady state from the latency series itself, by
change-point analysis; this module does the same with a model small enough for the worker (the
standard library only, O(n log B) time):

1. Robust blocks. The series (warm-up and steady latencies, in iteration order) is cut into
   blocks of B consecutive latencies (B = n // 100, at least 5) and each block gives the log of
   its median: a latency spike moves its block's median little, and the ~100 block values keep
   a resolution of 1 % of the run.
2. Broken stick. Over every candidate break k (a block), the log block medians are fitted by a
   trend before k and a constant from k on, by least squares: either a trend that meets the
   constant at k (a drift that levels off) or a free line with a jump at k (a step). Cumulative
   sums give every candidate's residual sum of squares (RSS) in O(1), so the search is O(m) for m
   blocks. The constant part must hold at least the last quarter of the run (Barrett et al. ask
   the steady state to cover the last 500 of 2000 iterations). The break minimises the Gaussian
   criterion m·log(RSS) plus a penalty per break (PENALTY; JUMP_PENALTY more for a jump), the
   penalised likelihood of change-point methods (PELT, Killick et al. 2012, which Barrett et al.
   use); a flat run keeps k = 0. The noise variance comes from
   each fit's own RSS, so a run whose latencies alternate between two levels is not mistaken for
   a warm-up.
3. Steady or not. The segment from the break on is tested for a trend that is left: the OLS
   slope of its log block medians, against its own residual noise. A segment still drifts when
   |t| is above the two-sided 1 % point of Student's t and the trend moves latency by more than
   MIN_DRIFT across it (less is small beside the 1-8 % between runs); then the break moves one
   block later, until a segment passes or none of the minimum length is left: no steady state.
4. Autocorrelated noise (a clock governor's or a thermal cycle's slow wander) is not a drift:
   the lag-1 autocorrelation r1 of the block medians' residuals about two lines (before and from
   the break) leaves m(1 - r1)/(1 + r1) effectively independent blocks (Santer et al., JGR 2000,
   for trends in autocorrelated series). The break is chosen again with the likelihood at that
   effective size, and the trend test's SE is widened by sqrt((1 + r1)/(1 - r1)) with the
   segment's effective size - 2 degrees of freedom.

`steady_from` is the index, within the series given, of the first latency of the steady segment
(0: steady from the start); it is None when no steady state was reached or when there are fewer
than MIN_LATENCIES latencies to judge (then `no_steady_state` is None too).

`--warmup auto` (`auto_warmup_done`) runs the same detection on the warm-up latencies so far, and
stops warming up once it finds a steady state that covers at least the second half of them and is
shown to drift by less than MIN_DRIFT over the steady phase to come.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

MIN_BLOCK = 5  # latencies per block: the median of 5 ignores up to 2 spikes in its block
TARGET_BLOCKS = 100  # larger runs get larger blocks: about 100 of them, whatever the run's length
MIN_BLOCKS = 10
MIN_LATENCIES = MIN_BLOCK * MIN_BLOCKS  # fewer: not judged (NULL)
STEADY_FRACTION = 0.25  # the steady segment holds at least the last quarter of the series
MIN_STEADY_BLOCKS = 5  # and at least 5 blocks, for its trend test
# the penalties, in units of the log-likelihood m·log(RSS), chosen by simulation: on flat runs with
# heavy-tailed noise and spikes at most 1.3 % of breaks after the first 5 % (105 latencies) and none
# from 300 latencies; a jump costs a little more, so a drift's end is placed by the continuous fit
PENALTY = 20.0
JUMP_PENALTY = 6.0
# the steady segment's trend test is two-sided at 1 %: the normal 0.995 quantile (scipy.stats.norm.ppf),
# written out because the worker imports nothing beyond math (statistics would cost it ~8 ms)
Z_995 = 2.5758293035489004
Z_95 = 1.6448536269514722  # one-sided 5 %: --warmup auto's bound on the drift left
MIN_DRIFT = 0.02  # a trend across the steady segment smaller than 2 % is not a drift
MAX_PHI = 0.9  # the largest lag-1 autocorrelation of block medians used: 5 % of the blocks count
NOISE_FLOOR = 1e-4  # log units: RSS floor, so a perfect fit (identical latencies) is not -inf


def relative_change(log_change: float) -> float:
    """exp(log_change) - 1, capped so that a wild series (latencies spanning decades) cannot overflow."""
    return math.expm1(min(log_change, 50.0))


@dataclass(frozen=True)
class SteadyState:
    """The verdict on one latency series (see the module docstring)."""

    steady_from: int | None  # index of the first steady latency; None: none reached, or not judged
    no_steady_state: bool | None  # None: too few latencies to judge
    block: int = 0  # latencies per block
    drift: float | None = None  # relative change across the steady segment's trend (0.03: +3 %)
    # the steady segment's trend in log latency per latency, its standard error and degrees of freedom
    slope: float | None = None
    slope_se: float | None = None
    df: int | None = None

    def drift_bound(self, horizon: int) -> float | None:
        """The one-sided 95 % upper confidence bound of the relative drift the steady segment's trend
        gives over `horizon` latencies: exp((|slope| + t_{0.95,df}·se)·horizon) - 1."""
        if self.slope is None or self.slope_se is None or not self.df:
            return None
        return relative_change((abs(self.slope) + t_quantile(self.df, Z_95) * self.slope_se) * horizon)


def block_log_medians(latencies: Sequence[float], block: int) -> list[float]:
    """log(median) of each block of `block` consecutive latencies; a last, shorter block joins the one
    before it, so every latency counts."""
    m = len(latencies) // block
    values = []
    for j in range(m):
        end = (j + 1) * block if j < m - 1 else len(latencies)
        values.append(math.log(max(median(latencies[j * block : end]), 1e-12)))
    return values


def prefix_sums(z: Sequence[float]) -> list[tuple[float, float, float, float, float]]:
    """Cumulative (Σj, Σj², Σz, Σz², Σjz) for j = 0..m: one entry per prefix length."""
    sums = [(0.0, 0.0, 0.0, 0.0, 0.0)]
    for j, value in enumerate(z):
        s1, s2, sy, syy, sjy = sums[-1]
        sums.append((s1 + j, s2 + j * j, sy + value, syy + value * value, sjy + j * value))
    return sums


def _rss_line(count: int, s1: float, s2: float, sy: float, syy: float, sjy: float) -> float:
    """Residual sum of squares of the least-squares line through `count` points, from their sums."""
    if count <= 2:
        return 0.0
    sxx = s2 - s1 * s1 / count
    sxy = sjy - s1 * sy / count
    return max(syy - sy * sy / count - sxy * sxy / sxx, 0.0)


def _rss_constant(count: int, sy: float, syy: float) -> float:
    return max(syy - sy * sy / count, 0.0) if count else 0.0


def _rss_hinge(sums: Sequence[tuple[float, ...]], k: int) -> float:
    """RSS of the continuous broken stick z_j = c + b·min(j - k, 0) over all of z, from its prefix
    sums: one least-squares line in the regressor x_j = min(j - k, 0), whose sums follow from the
    prefix sums up to k (Σx = Σj - k², Σx² = Σj² - 2kΣj + k³, Σxz = Σjz - kΣz)."""
    m = len(sums) - 1
    s1, s2, sy_k, _, sjy = sums[k]
    _, _, sy, syy, _ = sums[m]
    sx, sxx, sxz = s1 - k * k, s2 - 2 * k * s1 + k**3, sjy - k * sy_k
    sxx_c = sxx - sx * sx / m
    szz_c = syy - sy * sy / m
    if sxx_c <= 0:
        return max(szz_c, 0.0)
    sxz_c = sxz - sx * sy / m
    return max(szz_c - sxz_c * sxz_c / sxx_c, 0.0)


def best_break(sums: Sequence[tuple[float, ...]], min_steady: int, scale: float = 1.0) -> int:
    """The break k of the broken stick that fits z best, over k = 0..m - min_steady (ties: the
    earliest), by the Gaussian log-likelihood with the noise variance estimated from each fit:
    m·log(RSS_k) plus a penalty for each break. Two models of the part before k: a trend that meets
    the constant at k (a drift that levels off; PENALTY) or a free line with a jump at k (a step;
    PENALTY + JUMP_PENALTY); k = 0 is the constant alone. `scale` (at most 1) weighs the
    log-likelihood by the effective share of independent blocks (autocorrelated noise: detect)."""
    m = len(sums) - 1
    total = sums[m]
    floor = m * NOISE_FLOOR**2  # a perfect fit (constant latencies) does not win by -inf

    def cost(rss: float) -> float:
        return scale * m * math.log(max(rss, floor))

    best_k, best_cost = 0, cost(_rss_constant(m, total[2], total[3]))
    for k in range(1, m - min_steady + 1):
        head = sums[k]
        tail_sy, tail_syy = total[2] - head[2], total[3] - head[3]
        jump = cost(_rss_line(k, *head) + _rss_constant(m - k, tail_sy, tail_syy)) + JUMP_PENALTY
        candidate = min(cost(_rss_hinge(sums, k)), jump) + PENALTY
        if candidate < best_cost:
            best_k, best_cost = k, candidate
    return best_k


def line_residuals(x: Sequence[float], z: Sequence[float]) -> list[float]:
    """Residuals of the least-squares line of z on x."""
    count = len(z)
    mx, mz = sum(x) / count, sum(z) / count
    sxx = sum((a - mx) ** 2 for a in x)
    b = sum((a - mx) * (v - mz) for a, v in zip(x, z, strict=True)) / sxx if sxx > 0 else 0.0
    return [v - mz - b * (a - mx) for a, v in zip(x, z, strict=True)]


def lag1_autocorrelation(residuals: Sequence[float]) -> float:
    """The residuals' lag-1 autocorrelation r1 = Σ e_j e_(j+1) / Σ e_j², clipped to [0, MAX_PHI]: a
    negative one (alternating noise) is taken as none, so it never narrows a test."""
    denominator = sum(e * e for e in residuals)
    if denominator <= len(residuals) * NOISE_FLOOR**2:
        return 0.0
    numerator = sum(a * b for a, b in zip(residuals, residuals[1:], strict=False))
    return min(max(numerator / denominator, 0.0), MAX_PHI)


def noise_autocorrelation(z: Sequence[float], k: int) -> float:
    """The lag-1 autocorrelation of z's residuals about two least-squares lines, one before block k
    and one from k on: the drift before the break and any left after it are the model's to judge,
    not autocorrelation; all the blocks count, so the estimate is not a short segment's."""
    head = line_residuals(range(k), z[:k]) if k > 2 else [0.0] * k
    return lag1_autocorrelation(head + line_residuals(range(len(z) - k), z[k:]))


def median(values: Sequence[float]) -> float:
    ordered = sorted(values)
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2


def t_quantile(df: int, z: float = Z_995) -> float:
    """Student's t quantile with `df` degrees of freedom at the normal quantile `z`'s probability,
    by the Cornish-Fisher expansion (Abramowitz and Stegun 1964, 26.7.5)."""
    return (
        z
        + (z**3 + z) / (4 * df)
        + (5 * z**5 + 16 * z**3 + 3 * z) / (96 * df**2)
        + (3 * z**7 + 19 * z**5 + 17 * z**3 - 15 * z) / (384 * df**3)
    )


def suffix_trend(sums: Sequence[tuple[float, ...]], k: int) -> tuple[float, float, float]:
    """(OLS slope, its standard error, its t statistic) of z[k:] on its index, from the prefix sums
    of z: O(1)."""
    total, head = sums[-1], sums[k]
    count = len(sums) - 1 - k
    s1, s2, sy, syy, sjy = (t - h for t, h in zip(total, head, strict=True))
    sxx = s2 - s1 * s1 / count
    slope = (sjy - s1 * sy / count) / sxx
    se = math.sqrt(_rss_line(count, s1, s2, sy, syy, sjy) / (count - 2) / sxx)
    if se == 0:
        return slope, se, 0.0 if slope == 0 else math.inf
    return slope, se, slope / se


def detect(latencies: Sequence[float]) -> SteadyState:
    """Where the series' steady state begins, or that it has none (see the module docstring)."""
    n = len(latencies)
    if n < MIN_LATENCIES:
        return SteadyState(None, None)
    block = max(MIN_BLOCK, n // TARGET_BLOCKS)
    z = block_log_medians(latencies, block)
    centre = median(z)
    z = [v - centre for v in z]  # small numbers keep the cumulative sums exact
    m = len(z)
    min_steady = max(MIN_STEADY_BLOCKS, math.ceil(STEADY_FRACTION * m))
    sums = prefix_sums(z)
    first = best_break(sums, min_steady)
    # autocorrelated noise (Santer et al. 2000): the lag-1 autocorrelation r1 of the residuals
    # about the two lines either side of the break leaves a share (1 - r1)/(1 + r1) of the blocks
    # effectively independent; the break's likelihood, the slope's SE and its degrees of freedom
    # are taken at that effective size
    phi = noise_autocorrelation(z, first)
    shrink = (1 - phi) / (1 + phi)
    if phi > 0:
        first = best_break(sums, min_steady, shrink)
    drift = 0.0
    for k in range(first, m - min_steady + 1):
        slope, se, _ = suffix_trend(sums, k)
        se /= math.sqrt(shrink)
        span, df = m - k - 1, math.floor((m - k) * shrink) - 2
        drift = relative_change(slope * span)
        # a perfect line (se 0) is a drift without noise; under 1 effective degree of freedom
        # the segment cannot show one
        drifts = df >= 1 and abs(slope) > t_quantile(df) * se
        if not drifts or abs(drift) <= MIN_DRIFT:
            return SteadyState(k * block, False, block, drift, slope / block, se / block, max(df, 0))
    return SteadyState(None, True, block, drift)


# -- --warmup auto ------------------------------------------------------------------------------

AUTO_FIRST_CHECK = MIN_LATENCIES  # warm-up inferences before the first check
AUTO_CHECK_GROWTH = 0.1  # then a check after every 10 % more (at least MIN_BLOCK inferences)


def next_auto_check(done: int) -> int:
    """The warm-up count at which `--warmup auto` checks next, after a check at `done`: geometric
    steps keep the checks' total cost O(n) over a warm-up of n inferences."""
    return max(done + MIN_BLOCK, math.ceil(done * (1 + AUTO_CHECK_GROWTH)))


def auto_warmup_done(latencies: Sequence[float], steady_latencies: int) -> SteadyState | None:
    """The verdict that ends `--warmup auto`, or None to go on: a steady state that covers at least
    the second half of the warm-up so far (a steady part as long as what came before it), and whose
    trend is shown to be small, not merely not shown to be large: carried over the steady phase to
    come (`steady_latencies`, or the steady part so far if longer), the one-sided 95 % upper bound
    of its drift is within MIN_DRIFT (the equivalence logic of Schuirmann's TOST, 1987). A slow drift
    hides in a short window's noise; this makes a noisy warm-up wait until the window tells, and a
    long steady phase ask for a flatter warm-up."""
    verdict = detect(latencies)
    if verdict.steady_from is None or verdict.steady_from > len(latencies) // 2:
        return None
    bound = verdict.drift_bound(max(steady_latencies, len(latencies) - verdict.steady_from))
    if bound is None or bound > MIN_DRIFT:
        return None
    return verdict
