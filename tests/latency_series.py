"""Synthetic latency series of one run, for the steady-state tests (collectors/steady_state.py):
seeded, with their shape and noise spelled out by the caller."""

from __future__ import annotations

import math

import numpy as np

BASE_NS = 2e6  # a 2 ms inference


def series(
    rng, n: int, shape: str, *, change: int, drop: float = 0.3, noise: float = 0.02, tail: str = "normal"
):
    """Latencies (ns) of one synthetic run: log latency = log 2 ms + mean shape + noise.

    shape: flat | drift (linear fall of `drop` in log latency until `change`, then flat) | step
    (`drop` higher before `change`) | throughout (a linear fall of `drop` over the whole run) |
    rising (a linear rise of `drop` over the run, as throttling gives). tail: normal noise of SD
    `noise`, or t3 (Student t with 3 degrees of freedom scaled to SD `noise`)."""
    i = np.arange(n)
    mean = {
        "flat": np.zeros(n),
        "drift": np.where(i < change, drop * (change - i) / max(change, 1), 0.0),
        "step": np.where(i < change, drop, 0.0),
        "throughout": drop * (n - i) / n,
        "rising": drop * i / n,
    }[shape]
    if tail == "t3":
        eps = rng.standard_t(3, n) * noise / math.sqrt(3)
    else:
        eps = rng.normal(0.0, noise, n)
    return (BASE_NS * np.exp(mean + eps)).tolist()


def with_spikes(rng, latencies: list[float], share: float) -> list[float]:
    """Outliers: `share` of the latencies 1.5-4 times slower (an interrupt, a page fault, GC)."""
    y = np.asarray(latencies)
    hit = rng.random(len(y)) < share
    y[hit] *= rng.uniform(1.5, 4.0, hit.sum())
    return y.tolist()


def ar1_flat(rng, n: int, rho: float, noise: float = 0.02) -> list[float]:
    """Latencies (ns) of a flat run whose log-latency noise is a stationary AR(1) process of lag-1
    correlation `rho` and SD `noise` (a slow wander: a clock governor, a thermal cycle)."""
    from scipy.signal import lfilter

    innovations = rng.normal(0.0, noise * math.sqrt(1 - rho**2), n)
    start = rho * rng.normal(0.0, noise)  # the state before the first latency, from the stationary law
    eps = lfilter([1.0], [1.0, -rho], innovations, zi=[start])[0]
    return (BASE_NS * np.exp(eps)).tolist()
