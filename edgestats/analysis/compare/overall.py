"""compare's overall figure: the geometric mean of the ratios B/A across matched configurations.

One per metric, with an interval (docs/cli/compare.md, "Overall").

Method: the estimate is exp of the mean of the configurations' log ratios (the geometric mean of
their ratios of geometric means); the interval is exp of a t interval of that mean, whose standard
error adds up each configuration's Welch variance (the configurations are independent: different
runs) and whose degrees of freedom are Welch-Satterthwaite's over every side of every
configuration (welch.pooled_welch). The unit is the run, as in each configuration's own
ratio; the configurations are fixed, the ones compared, so the interval says how precisely these
runs measure the geometric mean over these configurations, not how a configuration not compared
would change. With one configuration it is that configuration's ratio and interval.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from edgestats.analysis.core.result import json_safe
from edgestats.analysis.estimators import welch as cs

METHOD = "geometric mean of the ratios; t interval with Welch-Satterthwaite df pooled over configurations"


@dataclass
class Overall:
    """The geometric mean of one metric's ratios B/A over `n_configurations` configurations."""

    metric: str
    estimate: float
    ci_low: float | None
    ci_high: float | None
    level: float
    n_configurations: int
    df: float | None
    method: str = METHOD
    note: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return json_safe({**asdict(self), "n_unit": "configurations"})


def squared_errors(test: Any) -> tuple[float, float] | None:
    """A configuration's squared standard errors of mean log A and mean log B; (0, 0) where
    every run of both sides has one value; None where it has no interval (fewer than 2 runs)."""
    if test.design is not None:
        d = test.design
        return d.sd_a**2 / d.n_a, d.sd_b**2 / d.n_b
    if test.n_a >= 2 and test.n_b >= 2:  # a ratio with enough runs but no interval: no spread
        return 0.0, 0.0
    return None


def overall_ratio(tests: list[Any], metric: str, level: float) -> Overall | None:
    """The overall ratio of `metric` over the tests (one per configuration) that have a ratio;
    None where none has."""
    with_ratio = [t for t in tests if t.metric == metric and t.estimate is not None]
    if not with_ratio:
        return None
    d = np.log([t.estimate for t in with_ratio])
    overall = Overall(metric, math.exp(float(np.mean(d))), None, None, level, len(with_ratio), None)
    errors = [squared_errors(t) for t in with_ratio]
    if any(e is None for e in errors):
        short = sum(e is None for e in errors)
        overall.note = f"no interval: {short} of {len(errors)} configurations have fewer than 2 runs a side"
        return overall
    var_a, var_b = (np.array(v) for v in zip(*errors))
    n_a = np.array([t.n_a for t in with_ratio])
    n_b = np.array([t.n_b for t in with_ratio])
    w = cs.pooled_welch(d, var_a, n_a, var_b, n_b)
    if not w.se > 1e-12:
        overall.note = "no interval: every run on both sides has the same value"
        return overall
    low, high = cs.ratio_interval(w, level)
    overall.ci_low, overall.ci_high, overall.df = float(low), float(high), float(w.df)
    return overall


def overall_ratios(matched: list[tuple[dict, list[Any]]], metrics: list[str], level: float) -> list[Overall]:
    """One overall ratio per metric that some matched configuration has a ratio of."""
    tests = [t for _, ts in matched for t in ts]
    found = [overall_ratio(tests, m, level) for m in metrics]
    return [o for o in found if o is not None]
