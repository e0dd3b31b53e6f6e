"""Split runs: do a configuration's run medians form clusters? (docs/methodology.md, "Split runs")

Fresh processes of one configuration can settle in different states (another CPU core, another
cuDNN algorithm, another page-cache state): 30 % of runs 8 % slower, or on a GPU 1.6x apart, with
steady latencies inside each run. The geometric mean of such runs describes no run, so the
summary flags the configuration `multimodal` and gives each cluster's size and centre.

Method: a gap test on the sorted log run medians (after Wainer & Schacht's 1978 "gapping"). For
every split of the sorted values into a left and a right cluster of at least MIN_CLUSTER_RUNS
runs, the gap between the clusters is divided by the standard deviation of the WIDER cluster;
the statistic is the largest such ratio. Dividing by the wider side, not a pooled SD, is what
keeps a skewed tail from passing for a cluster: the runs beyond a gap in a long tail are spread
out, those of a real cluster are tight. The statistic is location- and scale-free on the log
scale, so its null distribution depends only on the number of runs and the shape; the p-value is
a Monte Carlo one (Davison & Hinkley 1997, §4.2), the largest over four unimodal reference
shapes, light- and heavy-tailed (uniform, normal, Student t(3), exponential), computed once per
number of runs, seeded, cached. The uniform (no tails: its clusters of 3 look tight) is the least
favourable up to 12-15 runs, the exponential (skewness 2) from there: calibrated on normal, t(3)
and exponential alone the test flagged 9-10 % of uniform spreads at 6-10 runs. Keeping the
false-positive rate at or below alpha for the light-, heavy-tailed and skewed shapes checked in
tests/analysis/test_modality.py costs power at 10 runs (a 3 + 7 split at 1 % within-cluster SD:
about 90 % found, 94.5 % without the uniform). The methodology says which alternatives the
simulation rejected and why (a normal-calibrated split flags skewed runs; the dip test misses
3 + 7 splits).

Values given to fewer decimals than they were measured at (a published table's 8.0, 8.1, 8.3)
tie and cluster by rounding alone: each gap is shrunk by the values' decimal resolution (the
true values may lie half a step inward on each side) and a cluster's SD is at least that of the
rounding (resolution / sqrt(12)).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

MIN_CLUSTER_RUNS = 3  # two slow runs could be two outliers; three that agree are a state
MIN_RUNS = 2 * MIN_CLUSTER_RUNS
NULL_DRAWS = 10_000  # per reference shape: the p-value's Monte Carlo SE is 0.002 near 0.05
NULL_SEED = 27
REFERENCE_SHAPES = ("normal", "t(3)", "exponential", "uniform")
MAX_DECIMALS = 6  # a measured median has more digits than 6 decimals; a rounded one fewer
_ROWS_PER_CHUNK_VALUES = 1_000_000  # bounds the null simulation's memory for many runs
METHOD = (
    "gap test on log run medians: largest gap between two clusters of at least "
    f"{MIN_CLUSTER_RUNS} runs over the wider cluster's SD; Monte Carlo p-value under the least "
    "favourable of uniform, normal, t(3) and exponential shapes"
)


@dataclass(frozen=True)
class Modality:
    multimodal: bool
    p_value: float | None  # the gap test's p-value (None when too few runs to test)
    clusters: list[dict]  # when multimodal: [{"n_runs": int, "centre": float}, ...] by centre; else []
    method: str
    note: str | None


def decimal_resolution(values: np.ndarray) -> np.ndarray:
    """Per row of a (configurations, runs) array: 10^-d for the fewest decimals d <= MAX_DECIMALS
    that write every value of the row exactly, else 0 (values measured, not rounded)."""
    values = np.atleast_2d(values)
    resolution = np.zeros(len(values))
    tolerance = 1e-12 * np.abs(values)  # float round-off of an exact decimal, not a real digit

    def on_grid(rows: np.ndarray, decimals: int) -> np.ndarray:
        return np.all(np.abs(values[rows] - np.round(values[rows], decimals)) <= tolerance[rows], axis=1)

    # A value on a grid of 10^-d is on the finest grid too: measured values fail that one test.
    undecided = np.flatnonzero(on_grid(np.arange(len(values)), MAX_DECIMALS))
    for decimals in range(MAX_DECIMALS + 1):
        found = on_grid(undecided, decimals)
        resolution[undecided[found]] = 10.0**-decimals
        undecided = undecided[~found]
    return resolution


def split_statistic(
    sorted_logs: np.ndarray, gaps: np.ndarray | None = None, floor_variance: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """The vectorised core. For each row of sorted log values (configurations x runs): the largest
    gap / SD of the wider side over the splits leaving >= MIN_CLUSTER_RUNS on each side, and
    the number of runs left of that split. `gaps` (one per split) replaces the plain spacings
    and `floor_variance` (one per row) bounds each side's variance from below (rounding)."""
    y = np.atleast_2d(sorted_logs)
    n_runs = y.shape[1]
    n_left = np.arange(MIN_CLUSTER_RUNS, n_runs - MIN_CLUSTER_RUNS + 1)
    n_right = n_runs - n_left
    y = y - y.mean(axis=1, keepdims=True)  # centred, so the sums of squares below lose no digits
    sums, squares = np.cumsum(y, axis=1), np.cumsum(y * y, axis=1)
    sum_left, square_left = sums[:, n_left - 1], squares[:, n_left - 1]
    sum_right, square_right = sums[:, -1:] - sum_left, squares[:, -1:] - square_left
    var_left = np.maximum(square_left - sum_left**2 / n_left, 0) / (n_left - 1)
    var_right = np.maximum(square_right - sum_right**2 / n_right, 0) / (n_right - 1)
    wider = np.maximum(var_left, var_right)
    if floor_variance is not None:
        wider = np.maximum(wider, floor_variance[:, None])
    if gaps is None:
        gaps = y[:, n_left] - y[:, n_left - 1]
    with np.errstate(divide="ignore", invalid="ignore"):
        # a positive gap between two clusters without spread is infinitely clear: inf, not NaN
        ratio = np.where(gaps > 0, gaps / np.sqrt(wider), 0.0)
    best = np.argmax(ratio, axis=1)
    return ratio[np.arange(len(y)), best], n_left[best]


def gap_statistic(run_medians: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per row of positive run medians (configurations x runs, natural scale): the statistic, the
    runs left of the best split, and the sorted medians. Gaps are shrunk by the row's decimal
    resolution, half a step from each side."""
    x = np.sort(np.atleast_2d(np.asarray(run_medians, dtype=float)), axis=1)
    n_left = np.arange(MIN_CLUSTER_RUNS, x.shape[1] - MIN_CLUSTER_RUNS + 1)
    half_step = decimal_resolution(x)[:, None] / 2
    gaps = np.log(np.maximum((x[:, n_left] - half_step) / (x[:, n_left - 1] + half_step), 1.0))
    floor_variance = (2 * half_step[:, 0] / np.median(x, axis=1)) ** 2 / 12  # relative: log scale
    statistic, split = split_statistic(np.log(x), gaps, floor_variance)
    return statistic, split, x


def _reference_draws(shape: str, rng: np.random.Generator, size: tuple[int, int]) -> np.ndarray:
    if shape == "normal":
        return rng.standard_normal(size)
    if shape == "t(3)":
        return rng.standard_t(3, size)
    if shape == "uniform":
        return rng.uniform(size=size)
    return rng.standard_exponential(size)


@functools.lru_cache(maxsize=256)
def null_statistics(n_runs: int) -> tuple[np.ndarray, ...]:
    """The statistic's sorted Monte Carlo null for n_runs log medians, one array per reference
    shape (the statistic is location- and scale-free, so standard draws stand for every SD)."""
    rows_per_chunk = max(1, _ROWS_PER_CHUNK_VALUES // n_runs)
    nulls = []
    for index, shape in enumerate(REFERENCE_SHAPES):
        rng = np.random.default_rng([NULL_SEED, n_runs, index])
        parts, left = [], NULL_DRAWS
        while left:
            rows = min(left, rows_per_chunk)
            draws = np.sort(_reference_draws(shape, rng, (rows, n_runs)), axis=1)
            parts.append(split_statistic(draws)[0])
            left -= rows
        nulls.append(np.sort(np.concatenate(parts)))
    return tuple(nulls)


def gap_test(run_medians: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Vectorised over configurations (rows, all with the same number of runs >= MIN_RUNS): the
    statistic, the runs left of the best split, and the p-value, the largest over the
    reference shapes of (1 + #null >= statistic) / (1 + NULL_DRAWS)."""
    n_runs = np.atleast_2d(run_medians).shape[1]
    if n_runs < MIN_RUNS:
        raise ValueError(f"the gap test needs at least {MIN_RUNS} runs, got {n_runs}")
    statistic, split, _ = gap_statistic(run_medians)
    exceed = [len(null) - np.searchsorted(null, statistic, side="left") for null in null_statistics(n_runs)]
    p_value = (1 + np.max(exceed, axis=0)) / (1 + NULL_DRAWS)
    return statistic, split, p_value


def _clusters(sorted_values: np.ndarray, alpha: float) -> list[np.ndarray]:
    """Split a cluster again while its own gap test says it holds two (three states are
    possible). Both sides of a split are tested, each at alpha / 2 (Bonferroni), so a tight
    cluster is cut by chance at most alpha of the time per level, not alpha per side."""
    if len(sorted_values) < MIN_RUNS:
        return [sorted_values]
    _, split, p_value = gap_test(sorted_values[None, :])
    if p_value[0] > alpha:
        return [sorted_values]
    at = int(split[0])
    return _clusters(sorted_values[:at], alpha / 2) + _clusters(sorted_values[at:], alpha / 2)


def _usable(values: Sequence[float]) -> tuple[np.ndarray, str | None]:
    array = np.asarray(values, dtype=float).ravel()
    usable = array[np.isfinite(array) & (array > 0)]
    dropped = len(array) - len(usable)
    what = (
        "run median that is not a positive number"
        if dropped == 1
        else "run medians that are not positive numbers"
    )
    note = f"{dropped} {what} left out" if dropped else None
    return usable, note


def _result(ordered: np.ndarray, p_value: float, split: int, alpha: float, note: str | None) -> Modality:
    if p_value > alpha:
        return Modality(False, p_value, [], METHOD, note)
    parts = _clusters(ordered[:split], alpha / 2) + _clusters(ordered[split:], alpha / 2)
    clusters = [{"n_runs": len(part), "centre": float(np.median(part))} for part in parts]
    return Modality(True, p_value, clusters, METHOD, note)


def run_modality_batch(
    values_by_configuration: Sequence[Sequence[float]], *, alpha: float = 0.05
) -> list[Modality]:
    """run_modality for many configurations, one vectorised gap test per distinct run count (a
    fleet's summary has thousands of configurations and a handful of run counts)."""
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")
    cleaned = [_usable(values) for values in values_by_configuration]
    results: dict[int, Modality] = {}
    by_runs: dict[int, list[int]] = {}
    for index, (usable, note) in enumerate(cleaned):
        if len(usable) < MIN_RUNS:
            too_few = f"fewer than {MIN_RUNS} runs: not tested"
            results[index] = Modality(False, None, [], METHOD, f"{note}; {too_few}" if note else too_few)
        else:
            by_runs.setdefault(len(usable), []).append(index)
    for indices in by_runs.values():
        _, split, p_value = gap_test(np.stack([cleaned[i][0] for i in indices]))
        for row, index in enumerate(indices):
            ordered = np.sort(cleaned[index][0])
            results[index] = _result(ordered, float(p_value[row]), int(split[row]), alpha, cleaned[index][1])
    return [results[index] for index in range(len(cleaned))]


def run_modality(values: Sequence[float], *, alpha: float = 0.05) -> Modality:
    """Whether a configuration's per-run medians (positive, natural scale) form clusters, by the
    gap test at level alpha; when they do, each cluster's run count and centre (the median of
    its runs' medians), by centre."""
    return run_modality_batch([values], alpha=alpha)[0]
