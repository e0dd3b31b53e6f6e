"""Tails across processes: a configuration's p90 and p99 over every latency its processes produce
(docs/methodology.md, "Tails across processes").

The question a p99 answers is "how slow is one inference in a hundred of this configuration",
whichever process serves it. Fresh processes differ (between-run spread, 1-8 % on edge devices),
so that tail is wider than one run's: the geometric mean of the runs' own p99 (the typical run's
p99, kept as `latency_p99_typical_run_ms`) misses the between-run part and covered the
configuration's p99 in 0 of 400 simulated configurations with runs 5 % apart.

Model (two levels, log latency y, runs r = 1..k, Kalibera & Jones 2013):

    y_ri = μ + b_r + e_ri,    b_r ~ Normal(0, σ_b²),    e_ri ~ G (the within-run deviations)

The configuration's latency distribution is the mixture over processes: Normal(0, σ_b²) * G,
shifted by μ. μ is the mean of the runs' mean log latencies, σ_b² the one-way ANOVA estimate
(unbalanced runs: unweighted means, Thomas & Hultquist 1978), and G the equal-weight mixture of
the runs' own deviations from their means (each run weighs 1/k, whatever its length), kept as
its quantile function on a fixed grid of probabilities (piecewise linear, so the convolution with
the normal has a closed form). The estimate is the q-quantile of that mixture, found by a
safeguarded Newton iteration. With σ_b = 0 it is the quantile of the runs' pooled deviations.

Why a model and not the runs' empirical mixture: with 10 runs a 99th percentile across processes
is set by the slowest one or two runs, and an interval built from them (a delete-a-run jackknife,
a cluster bootstrap) cannot reach past them: 60 % coverage in the simulation. The normal run
effect extrapolates, as the median's log-t interval already assumes.

Interval: a generalised pivotal quantity (Weerahandi 1993; for quantiles of the one-way random
model, Krishnamoorthy & Mathew 2004) for μ and σ_b from the chi-square and normal pivots of the
run means and the within-run sum of squares, plus the within-run shape's own sampling error,
a delete-a-group jackknife over runs (Kott 2001) of G's quantile, added as a normal term. The
run is the unit in both parts. Monte Carlo draws are seeded per estimate.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import special

from edgestats.analysis.estimators.hierarchical import (
    TWO_RUNS_NOTE,
    per_run_quantiles,
    quantile_over_runs,
    usable_runs,
)
from edgestats.analysis.estimators.intervals import BootstrapSettings, Estimate
from edgestats.formatting import counted

# A run's steady latencies needed before its p90 / p99 counts (docs/methodology.md): a sample's
# q-quantile has n·(1 - q) latencies above it, so below 1 / (1 - q) it is the run's largest
# latency, an estimate of a quantile nearer 1 - 1/(n+1) than of q; p90 asks for two above it.
MIN_LATENCIES = {0.9: 20, 0.99: 100}
PIVOT_DRAWS = 4000
JACKKNIFE_GROUPS = 10  # delete-a-group jackknife: at most this many groups of runs, so the cost stays bounded
# The σ_b draws' quantiles at which G's convolution is solved (the draws interpolate between
# them): denser at both ends, where the interval's bounds come from
RHO_GRID_PROBABILITIES = np.array(
    [0, 0.005, 0.02, 0.05, 0.1, 0.2, 0.35, 0.5, 0.65, 0.8, 0.9, 0.95, 0.98, 0.995, 1]
)
# G's quantile function is kept at these probabilities (denser in the upper tail, where p90 and p99 are)
KNOT_PROBABILITIES = np.unique(
    np.concatenate(
        [
            [0.0, 0.005, 0.01],
            np.arange(0.025, 0.85, 0.025),
            np.arange(0.86, 0.985, 0.01),
            [0.985, 0.99, 0.9925, 0.995, 0.9975, 0.999, 1.0],
        ]
    ).round(6)
)
KNOT_RAMP = 1e-9  # log scale: tied knots are pulled this far apart, so every piece has a width
METHOD = (
    "across processes: quantile of the two-level model (normal run effects, the runs' within-run "
    "deviations, each run weighted equally), generalised pivotal interval"
)
_SQRT_2PI = math.sqrt(2 * math.pi)
BRACKET_SDS = 5.0
NEWTON_TOLERANCE = 1e-10  # log scale: a relative error of 1e-10 in the latency


@dataclass(frozen=True)
class TailFit:
    """The two-level model's quantiles, on the log scale, for each requested q."""

    estimate: np.ndarray
    low: np.ndarray
    high: np.ndarray
    between_run_sd: float  # σ_b (log scale, ≈ a relative SD)
    within_run_sd: float  # σ_w


def min_latencies(q: float) -> int:
    """The steady latencies a run needs before its q-quantile counts."""
    return MIN_LATENCIES.get(round(q, 6), math.ceil(1 / (1 - q)) if q > 0.5 else 1)


# -- the equal-weight mixture of the runs -------------------------------------------------------


def weighted_quantiles(
    sorted_values: np.ndarray, sorted_weights: np.ndarray, probs: np.ndarray
) -> np.ndarray:
    """Quantiles of a weighted sample (values sorted): linear interpolation between the values'
    weighted mid-ranks, rescaled to [0, 1]; with equal weights, exactly numpy's default quantile."""
    if len(sorted_values) == 1:
        return np.full(len(probs), float(sorted_values[0]))
    ranks = np.cumsum(sorted_weights) - sorted_weights / 2
    positions = (ranks - ranks[0]) / (ranks[-1] - ranks[0])
    return np.interp(probs, positions, sorted_values)


def mixture_quantile(runs: Sequence[np.ndarray], q: float) -> float:
    """The q-quantile of the runs' latencies, each run weighted equally (its latencies 1 / (k·nᵣ)):
    the configuration's sample quantile, without a model."""
    values = np.concatenate(runs)
    weights = np.concatenate([np.full(len(run), 1.0 / len(run)) for run in runs])
    order = np.argsort(values, kind="stable")
    return float(weighted_quantiles(values[order], weights[order], np.array([q]))[0])


# -- the convolution Normal(0, ρ²) * G ------------------------------------------------------------


def _cdf_and_density(x: np.ndarray, rho: np.ndarray, knots: np.ndarray, mass: np.ndarray):
    """Per row: CDF and density at x of Normal(0, ρ²) plus a draw of G, G uniform between
    consecutive knots with the given masses. A uniform on [a, b] plus a normal has CDF
    ρ·(ψ((x-a)/ρ) - ψ((x-b)/ρ)) / (b - a), ψ(t) = t·Φ(t) + φ(t) (the integral of Φ)."""
    t = (x[:, None] - knots) / rho[:, None]
    cdf_normal = special.ndtr(t)
    pdf_normal = np.exp(-0.5 * t * t) / _SQRT_2PI
    psi = t * cdf_normal + pdf_normal
    width = np.diff(knots, axis=-1)
    cdf = (psi[:, :-1] - psi[:, 1:]) * rho[:, None] / width
    density = (cdf_normal[:, :-1] - cdf_normal[:, 1:]) / width
    return cdf @ mass, density @ mass


def _read(knots: np.ndarray, probs: np.ndarray, p: np.ndarray) -> np.ndarray:
    """Row i's piecewise-linear quantile function (knots[i] at probs) at p[i]."""
    at = np.clip(np.searchsorted(probs, p, side="right") - 1, 0, len(probs) - 2)
    share = (p - probs[at]) / (probs[at + 1] - probs[at])
    rows = np.arange(len(p))
    return knots[rows, at] + share * (knots[rows, at + 1] - knots[rows, at])


def convolved_quantiles(rho: np.ndarray, q: np.ndarray, knots: np.ndarray, probs: np.ndarray) -> np.ndarray:
    """Row i: the q[i]-quantile of Normal(0, rho[i]²) * G_i, G_i the piecewise-linear quantile
    function with knots[i] (or one shared row) at `probs`; rho 0 reads G_i itself. Newton's
    method kept inside a bracket that every step narrows (bisection where Newton leaves it). The
    first bracket: with c = 5, the quantile lies in [G⁻¹(q - Φ(-c)) - cρ, G⁻¹(q / Φ(c)) + cρ]."""
    knots = np.broadcast_to(knots, (len(rho), len(probs)))
    out = _read(knots, probs, q)
    on = rho > 0
    if not on.any():
        return out
    r, target = rho[on], q[on]
    spread = knots[on] + KNOT_RAMP * np.arange(len(probs))
    tail = float(special.ndtr(-BRACKET_SDS))
    low = _read(spread, probs, np.maximum(target - tail, 0.0)) - BRACKET_SDS * r
    high = _read(spread, probs, np.minimum(target / (1 - tail), 1.0)) + BRACKET_SDS * r
    x, mass = np.clip(out[on], low, high), np.diff(probs)
    for _ in range(80):
        cdf, density = _cdf_and_density(x, r, spread, mass)
        below = cdf < target
        low, high = np.where(below, x, low), np.where(below, high, x)
        with np.errstate(divide="ignore", invalid="ignore"):
            step = x + (target - cdf) / density
        # inclusive: a converged step lands on the bracket's end it just set, and must stay there
        step = np.where((step >= low) & (step <= high), step, (low + high) / 2)
        done = np.abs(step - x) <= NEWTON_TOLERANCE
        x = step
        if done.all():
            break
    out[on] = x
    return out


# -- the two-level model and its pivotal interval ------------------------------------------------


@dataclass(frozen=True)
class _Runs:
    """What the model needs from the runs' log latencies."""

    k: int
    run_means: np.ndarray
    sorted_deviations: np.ndarray  # each latency's log minus its run's mean log, sorted
    sorted_weights: np.ndarray  # 1 / (k·nᵣ) of each, in the same order
    sorted_groups: np.ndarray  # its run's jackknife group
    ss_within: float
    df_within: int
    harmonic_size: float  # k / Σ 1/nᵣ, for the unbalanced between-run variance


def _runs_of(log_runs: Sequence[np.ndarray]) -> _Runs:
    k = len(log_runs)
    sizes = np.array([len(run) for run in log_runs])
    means = np.array([run.mean() for run in log_runs])
    deviations = np.concatenate([run - m for run, m in zip(log_runs, means)])
    weights = np.repeat(1.0 / (k * sizes), sizes)
    groups = np.repeat(np.arange(k) % JACKKNIFE_GROUPS, sizes)
    order = np.argsort(deviations, kind="stable")
    return _Runs(
        k,
        means,
        deviations[order],
        weights[order],
        groups[order],
        float(np.sum(deviations**2)),
        int(sizes.sum()) - k,
        float(k / np.sum(1.0 / sizes)),
    )


def _pivots(runs: _Runs, rng: np.random.Generator, draws: int) -> tuple[np.ndarray, np.ndarray]:
    """Draws of μ and σ_b from their generalised pivotal quantities: with τ² = σ_b² + σ_w²/ñ the
    variance of a run mean, (k-1)·s²/τ² ~ χ²(k-1), SSW/σ_w² ~ χ²(N-k), and the grand mean
    normal around μ with variance τ²/k."""
    k, s2_means = runs.k, float(np.var(runs.run_means, ddof=1))
    # χ²(1) draws come arbitrarily close to 0: floored, so τ² stays finite (and huge)
    tau2 = (k - 1) * s2_means / np.maximum(rng.chisquare(k - 1, draws), 1e-12)
    within2 = runs.ss_within / rng.chisquare(runs.df_within, draws) if runs.df_within else np.zeros(draws)
    mu = runs.run_means.mean() - rng.standard_normal(draws) * np.sqrt(tau2 / k)
    return mu, np.sqrt(np.maximum(tau2 - within2 / runs.harmonic_size, 0.0))


def _rho_grid(rho_hat: float, rho_draws: np.ndarray) -> np.ndarray:
    positive = rho_draws[rho_draws > 0]
    spread = np.quantile(positive, RHO_GRID_PROBABILITIES) if len(positive) else []
    return np.unique(np.concatenate([[0.0, rho_hat], spread]))


def two_level_tail(
    log_runs: Sequence[np.ndarray], qs: Sequence[float], *, level: float, rng: np.random.Generator
) -> TailFit:
    """The configuration's q-quantiles of log latency (two-level model, ≥ 2 runs of ≥ 1 latency
    each) with their pivotal interval (see the module docstring). The core the summary and the
    simulation tests call."""
    qs = np.asarray(qs, dtype=float)
    runs = _runs_of([np.asarray(run, dtype=float) for run in log_runs])
    probs = np.unique(np.concatenate([KNOT_PROBABILITIES, qs]))
    knots = weighted_quantiles(runs.sorted_deviations, runs.sorted_weights, probs)
    within2 = runs.ss_within / runs.df_within if runs.df_within else 0.0
    rho_hat = math.sqrt(max(float(np.var(runs.run_means, ddof=1)) - within2 / runs.harmonic_size, 0.0))
    mu_draws, rho_draws = _pivots(runs, rng, PIVOT_DRAWS)
    grid = _rho_grid(rho_hat, rho_draws)
    groups = np.unique(runs.sorted_groups)
    left_out = [
        weighted_quantiles(runs.sorted_deviations[keep], runs.sorted_weights[keep], probs)
        for keep in (runs.sorted_groups != g for g in groups)
    ]
    nq = len(qs)
    solved = convolved_quantiles(
        np.concatenate([np.repeat(grid, nq), np.full(len(groups) * nq, rho_hat)]),
        np.tile(qs, len(grid) + len(groups)),
        np.concatenate(
            [np.broadcast_to(knots, (len(grid) * nq, len(probs))), np.repeat(left_out, nq, axis=0)]
        ),
        probs,
    )
    on_grid = solved[: len(grid) * nq].reshape(len(grid), nq)
    jackknifed = solved[len(grid) * nq :].reshape(len(groups), nq)
    g = len(groups)
    shape_se = np.sqrt((g - 1) / g * np.sum((jackknifed - jackknifed.mean(axis=0)) ** 2, axis=0))
    estimate = runs.run_means.mean() + np.array([np.interp(rho_hat, grid, on_grid[:, j]) for j in range(nq)])
    draws = mu_draws[:, None] + np.stack(
        [np.interp(rho_draws, grid, on_grid[:, j]) for j in range(nq)], axis=1
    )
    draws += rng.standard_normal((PIVOT_DRAWS, 1)) * shape_se
    low, high = np.quantile(draws, [(1 - level) / 2, (1 + level) / 2], axis=0)
    # the draws' Monte Carlo noise could leave the estimate a hair outside; widening only adds coverage
    low, high = np.minimum(low, estimate), np.maximum(high, estimate)
    return TailFit(estimate, low, high, rho_hat, math.sqrt(within2))


def tail_estimate(fit: TailFit, j: int, *, level: float, k: int) -> Estimate:
    """The j-th quantile of a fit as an Estimate on the natural scale (ms when the runs were)."""
    with np.errstate(over="ignore"):  # a huge upper end (two runs far apart) is inf, said below
        estimate, low, high = (float(np.exp(x[j])) for x in (fit.estimate, fit.low, fit.high))
    if not (math.isfinite(high) and high > low):
        why = "the runs' latencies do not vary" if high == low else "the interval's upper end overflows"
        return Estimate(estimate, None, None, level, k, "runs", METHOD, f"not enough data: {why}")
    return Estimate(estimate, low, high, level, k, "runs", METHOD)


# -- the summary's figures ------------------------------------------------------------------------

CONFIGURATION_TAILS = {"latency_p90_ms": 0.9, "latency_p99_ms": 0.99}
TYPICAL_RUN_TAILS = {"latency_p90_typical_run_ms": 0.9, "latency_p99_typical_run_ms": 0.99}
ACROSS = "across processes: "
P99_NEEDS_MORE_RUNS = 0.99  # from 2 runs its interval is 10^2-10^6 times the estimate: none given
TWO_RUNS_P99_NOTE = "p99 from 2 runs: too few runs for an interval; 3 or more runs would give one"
TYPICAL = "the typical run: "


def percentile_name(q: float) -> str:
    return f"p{100 * q:g}"


def too_few_note(q: float) -> str:
    return (
        f"too few latencies for {percentile_name(q)}: every run has fewer than {min_latencies(q)} steady "
        f"latencies, so a run's {percentile_name(q)} is near its largest latency; no interval"
    )


def _append_note(estimate: Estimate, note: str) -> None:
    estimate.note = f"{estimate.note}; {note}" if estimate.note else note


def _prefixed(estimate: Estimate, prefix: str) -> Estimate:
    estimate.method = estimate.method if estimate.method.startswith(prefix) else prefix + estimate.method
    return estimate


def _marked(runs: list[np.ndarray], q: float, level: float) -> tuple[Estimate, Estimate]:
    """No run has enough latencies: the sample figures, without intervals, marked."""
    note, k = too_few_note(q), len(runs)
    typical = float(np.exp(np.mean(np.log(per_run_quantiles(runs, q)))))
    return (
        Estimate(
            mixture_quantile(runs, q),
            None,
            None,
            level,
            k,
            "runs",
            ACROSS + "equal-weight mixture of the runs",
            note,
        ),
        Estimate(
            typical, None, None, level, k, "runs", TYPICAL + "geometric mean of per-run quantiles", note
        ),
    )


def _figures(
    runs: list[np.ndarray], qs: list[float], *, level: float, settings: BootstrapSettings, label: str
) -> dict[float, tuple[Estimate, Estimate]]:
    """(across processes, typical run) for each q, from these runs (all with enough latencies):
    the two-level model for two runs or more, one run's within-run interval for one."""
    typical = [quantile_over_runs(runs, q, level=level, settings=settings, label=f"{label}|q{q}") for q in qs]
    if len(runs) == 1:
        across = [
            quantile_over_runs(runs, q, level=level, settings=settings, label=f"{label}|q{q}") for q in qs
        ]
    else:
        fit = two_level_tail(
            [np.log(run) for run in runs], qs, level=level, rng=settings.rng(f"{label}|tails")
        )
        across = [tail_estimate(fit, j, level=level, k=len(runs)) for j in range(len(qs))]
        for q, estimate in zip(qs, across, strict=True) if len(runs) == 2 else []:
            if q >= P99_NEEDS_MORE_RUNS:
                estimate.ci_low = estimate.ci_high = None
                _append_note(estimate, TWO_RUNS_P99_NOTE)
            else:
                _append_note(estimate, TWO_RUNS_NOTE)
    return {q: (_prefixed(a, ACROSS), _prefixed(t, TYPICAL)) for q, a, t in zip(qs, across, typical)}


def tails_over_runs(
    latencies_by_run: Sequence[np.ndarray], *, level: float, settings: BootstrapSettings, label: str
) -> dict[str, Estimate]:
    """p90 and p99 of a configuration across processes (`latency_p90_ms`, `latency_p99_ms`) and of
    its typical run (`..._typical_run_ms`), each from the runs with enough steady latencies; the
    runs left out are counted in the note, and with none left the figures are marked."""
    runs = usable_runs(latencies_by_run)
    out: dict[str, Estimate] = {}
    if not runs:
        for metric in (*CONFIGURATION_TAILS, *TYPICAL_RUN_TAILS):
            out[metric] = Estimate(
                None, None, None, level, 0, "runs", METHOD, "not enough data: no run has a latency"
            )
        return out
    eligible = {
        q: tuple(i for i, run in enumerate(runs) if len(run) >= min_latencies(q))
        for q in CONFIGURATION_TAILS.values()
    }
    figures: dict[float, tuple[Estimate, Estimate]] = {}
    for chosen in dict.fromkeys(eligible.values()):
        qs = [q for q, e in eligible.items() if e == chosen]
        if chosen:
            figures.update(
                _figures([runs[i] for i in chosen], qs, level=level, settings=settings, label=label)
            )
        else:
            figures.update({q: _marked(runs, q, level) for q in qs})
    for (metric, q), typical_metric in zip(CONFIGURATION_TAILS.items(), TYPICAL_RUN_TAILS):
        left_out = len(runs) - len(eligible[q])
        for estimate in figures[q] if left_out and eligible[q] else ():
            _append_note(
                estimate,
                f"{counted(left_out, 'runs')} with fewer than {min_latencies(q)} steady latencies "
                f"left out of {percentile_name(q)}",
            )
        out[metric], out[typical_metric] = figures[q]
    return out
