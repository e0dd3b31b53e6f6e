"""Intervals that stay inside the possible range of their quantity (docs/methodology.md).

A Student-t interval mean ± t·s/√n can leave the range: two training times of 10 s and 900 s give
[-5,200, 6,100] s, two accuracies of 80 % and 100 % give [26, 154] %. Here:

- positive quantities (times, memory, energy, throughput): the interval of the mean is made on
  the log scale by the delta method, log(m) ± t·(s/√n)/m, and mapped back by exp, so it is
  m·exp(±t·cv/√n) (the log-transformed interval; Kalbfleisch & Prentice 2002, §1.3). The
  estimate stays the arithmetic mean, always inside its interval, and the interval is > 0.
  `geometric_mean_t` is the other log-scale interval: the t interval of the mean of log values,
  back-transformed, i.e. for the geometric mean (the median of a log-normal).
- proportions (accuracy): across runs the same delta method on the logit scale; for a single run
  with a known test-set size, Wilson's score interval (Wilson 1927; Brown, Cai & DasGupta 2001).

Values below zero (a residual time, energy above idle that came out below the baseline) mean
the quantity is a difference, not a positive amount: it gets the ordinary t interval, and the
note says so.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from scipy import stats

from edgestats.analysis.estimators.intervals import (
    DEFAULT_LEVEL,
    Estimate,
    clean_values,
    mean_t,
    t_interval,
    t_quantile,
)

LOG_METHOD = "t on the log scale (delta method)"
LOGIT_METHOD = "t on the logit scale (delta method)"
GEOMETRIC_METHOD = "t of log values (geometric mean)"
WILSON_METHOD = "wilson"
# Column-name endings of quantities that cannot be negative (edgestats names carry their units).
POSITIVE_SUFFIXES = ("_ms", "_s", "_ns", "_bytes", "_j", "_w", "_mb", "_per_s", "_pct")
PROPORTION_MARKERS = ("accuracy",)
NEGATIVE_NOTE = "some values are below 0 (a difference, not an amount): an ordinary t interval"


def quantity_kind(name: str) -> str:
    """'proportion' (a percentage of a whole: accuracy), 'positive' (a time, size, energy, rate,
    or a CPU share) or 'real' (anything else: a coefficient, a difference)."""
    if any(marker in name for marker in PROPORTION_MARKERS):
        return "proportion"
    return "positive" if name.endswith(POSITIVE_SUFFIXES) else "real"


def log_mean_interval(
    n: int, mean: float, sd: float, level: float = DEFAULT_LEVEL, n_unit: str = "runs"
) -> Estimate:
    """The mean of a non-negative quantity with its log-scale (delta method) t interval, from
    (n, mean, sd): mean·exp(±t·sd/(√n·mean)). The reasons of `t_interval` where none can be made."""
    plain = t_interval(n, mean, sd, level, n_unit)
    if not plain.has_interval or not mean > 0:
        plain.method = LOG_METHOD
        return plain
    half = t_quantile(level, n - 1) * sd / (math.sqrt(n) * mean)
    return Estimate(mean, mean * math.exp(-half), mean * math.exp(half), level, n, n_unit, LOG_METHOD)


def positive_mean(values: Any, level: float = DEFAULT_LEVEL, n_unit: str = "runs") -> Estimate:
    """Mean of a positive quantity with an interval that stays > 0 (see the module docstring)."""
    x = clean_values(values)
    if len(x) and x.min() < 0:
        plain = t_interval(
            len(x), float(x.mean()), float(x.std(ddof=1)) if len(x) > 1 else 0.0, level, n_unit
        )
        plain.note = f"{plain.note}; {NEGATIVE_NOTE}" if plain.note else NEGATIVE_NOTE
        return plain
    if len(x) > 1 and np.all(x == x[0]):
        return log_mean_interval(len(x), float(x[0]), 0.0, level, n_unit)
    sd = float(np.std(x, ddof=1)) if len(x) > 1 else 0.0
    return log_mean_interval(len(x), float(x.mean()) if len(x) else math.nan, sd, level, n_unit)


def rate_of_mean_time(numerator: float, mean_time: Estimate, method: str) -> Estimate:
    """numerator / a positive mean time (inferences or tokens per second), its interval the mean's
    mapped through that decreasing function: a monotone map of an interval covers as often as the
    interval did. No interval where the mean's has no positive lower end (the rate is unbounded)."""
    low = numerator / mean_time.ci_high if mean_time.ci_high else None
    high = numerator / mean_time.ci_low if mean_time.ci_low and mean_time.ci_low > 0 else None
    if low is None or high is None:
        low = high = None
    return Estimate(
        numerator / mean_time.estimate,
        low,
        high,
        mean_time.level,
        mean_time.n,
        mean_time.n_unit,
        method + (f" ({mean_time.method})" if low is not None else ""),
        mean_time.note,
    )


def clip_at_zero(estimate: Estimate) -> Estimate:
    """An interval of a quantity that cannot be negative, cut at 0 where it reaches below: the
    intersection of a confidence interval with the parameter space covers the truth at least as
    often (used for the idle baseline's interval of one run's energy above idle)."""
    if estimate.has_interval and estimate.ci_low < 0 <= (
        estimate.estimate if estimate.estimate is not None else -1
    ):
        estimate.ci_low = 0.0
        estimate.note = "; ".join(
            filter(None, [estimate.note, "lower bound cut at 0: energy above idle is not negative"])
        )
    return estimate


def geometric_mean_t(values: Any, level: float = DEFAULT_LEVEL, n_unit: str = "runs") -> Estimate:
    """exp(mean of log values) with exp of the t interval of the log values: the geometric mean,
    exact for log-normal values. Non-positive values cannot be logged and are counted out."""
    x = clean_values(values)
    x = x[x > 0]
    if len(x) == 0:
        return t_interval(0, math.nan, math.nan, level, n_unit)
    logs = np.log(x)
    sd = float(np.std(logs, ddof=1)) if len(x) > 1 and not np.all(x == x[0]) else 0.0
    on_log = t_interval(len(x), float(logs.mean()), sd, level, n_unit)
    low, high, note = None, None, on_log.note
    if on_log.has_interval:
        try:
            low, high = math.exp(on_log.ci_low), math.exp(on_log.ci_high)
        except OverflowError:  # values many orders of magnitude apart: a bound past the largest float
            note = "no interval: the values span too many orders of magnitude for one"
    return Estimate(math.exp(on_log.estimate), low, high, level, len(x), n_unit, GEOMETRIC_METHOD, note)


def wilson_interval(successes: float, n: int, level: float = DEFAULT_LEVEL) -> tuple[float, float]:
    """Wilson's score interval for a binomial proportion (as a fraction)."""
    z = float(stats.norm.ppf(0.5 + level / 2))
    p = successes / n
    denominator = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denominator
    half = z / denominator * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return max(centre - half, 0.0), min(centre + half, 1.0)


def proportion_mean(
    values_pct: Any, level: float = DEFAULT_LEVEL, *, n_test: int | None = None, n_unit: str = "runs"
) -> Estimate:
    """Mean of a percentage in [0, 100] (accuracy) with an interval inside [0, 100]: Wilson for one
    run whose test-set size is known, the logit-scale delta-method t interval across runs."""
    x = clean_values(values_pct)
    if len(x) and (x.min() < 0 or x.max() > 100):
        plain = t_interval(
            len(x), float(x.mean()), float(x.std(ddof=1)) if len(x) > 1 else 0.0, level, n_unit
        )
        plain.note = "; ".join(
            filter(None, [plain.note, "values outside 0-100 %: not a proportion, an ordinary t interval"])
        )
        return plain
    if len(x) == 1 and n_test:
        low, high = wilson_interval(round(x[0] / 100 * n_test), int(n_test), level)
        return Estimate(
            float(x[0]),
            100 * low,
            100 * high,
            level,
            1,
            n_unit,
            WILSON_METHOD,
            f"one run: the interval covers the test set's sampling ({int(n_test)} samples) only, "
            "not run-to-run spread",
        )
    sd = float(np.std(x, ddof=1)) if len(x) > 1 and not np.all(x == x[0]) else 0.0
    mean = float(x.mean()) if len(x) else math.nan
    plain = t_interval(len(x), mean, sd, level, n_unit)
    plain.method = LOGIT_METHOD
    if len(x) == 1 and plain.note:
        plain.note += " (with the test-set size known, one run gets a Wilson interval)"
    if not plain.has_interval:
        return plain
    p = mean / 100
    half = t_quantile(level, len(x) - 1) * sd / 100 / math.sqrt(len(x)) / (p * (1 - p))
    logit = math.log(p / (1 - p))
    return Estimate(
        mean, 100 * _expit(logit - half), 100 * _expit(logit + half), level, len(x), n_unit, LOGIT_METHOD
    )


def _expit(value: float) -> float:
    return 1 / (1 + math.exp(-value)) if value >= 0 else math.exp(value) / (1 + math.exp(value))


def bounded_mean(
    values: Any,
    quantity: str,
    level: float = DEFAULT_LEVEL,
    *,
    n_unit: str = "runs",
    n_test: int | None = None,
) -> Estimate:
    """The mean of `values` with the interval its quantity's range allows (`quantity_kind`)."""
    kind = quantity_kind(quantity)
    if kind == "proportion":
        return proportion_mean(values, level, n_test=n_test, n_unit=n_unit)
    if kind == "positive":
        return positive_mean(values, level, n_unit)
    return mean_t(values, level, n_unit)
