"""The stopping rule of `collect --until-precise`: Stein's two-stage procedure (Stein 1945) on the
runs' medians. The run is the unit (docs/methodology.md, "Stopping rule").

Stopping as soon as the observed interval is narrow enough stops on luck: a configuration whose
first runs happen to agree stops early with an interval too narrow for its real spread (with run
medians 5 % apart, that rule covered 90-92 % at ±2 % and ±3 %; tests/analysis/test_stopping.py).
Stein's rule looks at the spread once, on a pilot of n0 runs fixed in advance, and from it plans
the total number of runs:

    s0 = SD of the pilot's log run medians,   h = asinh(target)   (the log-scale half-width whose
    relative half-width, sinh(h), is the target),   N = max(n0, ceil((t_{n0-1, 1-α/2} · s0 / h)²))

and after N runs (or --max-repeat runs M, whichever is first) reports

    exp(ȳ ± t_{n0-1, 1-α/2} · s0 / √n)     ȳ: the mean log run median over all n runs

Under normal log run medians n depends on s0 only and, given s0, ȳ is normal around μ with
variance σ²/n (a normal sample's mean is independent of its SD), so (ȳ - μ)·√n / s0 follows
Student's t with n0 - 1 degrees of freedom: the interval's coverage is exactly the level, whether
the rule stopped at N or was cut at M, and its half-width is within the target whenever it
stopped at N (sinh(t·s0/√N) ≤ target by the choice of N). The usual t interval over all n runs
(what `analyze` reports, whose coverage after this data-dependent n is a little lower) is also
returned, as the run-level half-width.

What the guarantee assumes: normal log run medians. Where they are not (heavy-tailed, skewed,
two states), the coverage is approximate and rests on the pilot seeing the spread: collect's
pilot is 10 runs (collectors/precision.PILOT_RUNS), which kept 92.5-95 % in simulation for
t(3), skewed and two-state run medians where a pilot of 5 covered 83 % for two states; a few
much slower runs (right-skewed logs) cover 90-91 % (docs/methodology.md, "Stopping rule").

`stein_decisions` is the rule on arrays of run medians (one row per configuration, the runs so
far in order): the simulation tests call it on thousands of configurations at once. `stein_rule`
wraps it for collectors/precision.py, which cannot import scipy and gets it from the CLI.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from edgestats.analysis.estimators.hierarchical import per_run_quantiles
from edgestats.analysis.estimators.intervals import t_quantile
from edgestats.formatting import counted

STEIN_RULE = "stein two-stage"
# A plan beyond this is as good as "never": keeps the integer conversion finite.
MAX_PLANNED_RUNS = 10**9
CONTINUE, PRECISE, MAX_REPEAT = "continue", "precise", "max-repeat"


@dataclass(frozen=True)
class SteinDecisions:
    """The rule's decision for each configuration (row) after its n runs so far."""

    decision: np.ndarray  # continue | precise | max-repeat
    log_centre: np.ndarray  # mean log run median over the n runs
    log_half_width: np.ndarray  # the rule's interval on the log scale; NaN: no interval
    run_level_log_half_width: np.ndarray  # the usual t interval over the n runs; NaN: none
    pilot_log_sd: np.ndarray  # s0; NaN while the pilot is incomplete
    planned_runs: np.ndarray  # N; 0 while the pilot is incomplete

    @property
    def rel_half_width(self) -> np.ndarray:
        """The rule's half-width as a fraction of the estimate: (high - low) / 2 / exp(ȳ)."""
        return np.sinh(self.log_half_width)


def stein_decisions(
    run_medians: Any, target_rel_half_width: float, *, level: float, pilot_runs: int, max_repeat: int
) -> SteinDecisions:
    """Stein's rule (module docstring) for rows of positive run medians, the runs so far in order:
    continue, precise (n ≥ N), or max-repeat (n ≥ M before N). Before the pilot is complete the
    interval is the usual run-level one and only M can stop a configuration."""
    if pilot_runs < 2:
        raise ValueError(f"pilot_runs {pilot_runs}: the pilot needs at least 2 runs to measure a spread")
    logs = np.log(np.atleast_2d(np.asarray(run_medians, dtype=float)))
    rows, n = logs.shape
    centre = logs.mean(axis=1) if n else np.full(rows, np.nan)
    usual = _usual_log_half_width(logs, level)
    if n < pilot_runs:
        decision = np.full(rows, MAX_REPEAT if n >= max_repeat else CONTINUE, dtype=object)
        return SteinDecisions(decision, centre, usual, usual, np.full(rows, np.nan), np.zeros(rows, int))
    pilot_sd = _log_sd(logs[:, :pilot_runs])
    t_pilot = t_quantile(level, pilot_runs - 1)
    wanted = np.minimum((t_pilot * pilot_sd / math.asinh(target_rel_half_width)) ** 2, MAX_PLANNED_RUNS)
    planned = np.maximum(pilot_runs, np.ceil(wanted)).astype(int)
    half = t_pilot * pilot_sd / math.sqrt(n)
    decision = np.where(planned <= n, PRECISE, np.where(n >= max_repeat, MAX_REPEAT, CONTINUE)).astype(object)
    return SteinDecisions(decision, centre, np.where(half > 0, half, np.nan), usual, pilot_sd, planned)


def _usual_log_half_width(logs: np.ndarray, level: float) -> np.ndarray:
    """t_{n-1} · s / √n over each row's n log run medians; NaN with fewer than 2 runs or no spread."""
    rows, n = logs.shape
    if n < 2:
        return np.full(rows, np.nan)
    half = t_quantile(level, n - 1) * _log_sd(logs) / math.sqrt(n)
    return np.where(half > 0, half, np.nan)


def _log_sd(logs: np.ndarray) -> np.ndarray:
    """Each row's SD (n - 1); exactly 0 where the row's values are all equal (np.std leaves ~1e-16
    there, which would read as a spread)."""
    return np.where(np.ptp(logs, axis=1) > 0, logs.std(axis=1, ddof=1), 0.0)


def run_medians(latencies_by_run: Sequence[Sequence[float]]) -> np.ndarray:
    """Each run's median over its finite, positive latencies (as `analyze` takes it); runs with
    none are left out."""
    runs = [np.asarray(run, dtype=float).ravel() for run in latencies_by_run]
    runs = [run[np.isfinite(run) & (run > 0)] for run in runs]
    return per_run_quantiles([run for run in runs if len(run)], 0.5)


def stein_rule(
    target_rel_half_width: float, *, level: float, pilot_runs: int, max_repeat: int
) -> Callable[[Sequence[Sequence[float]]], dict[str, Any]]:
    """For `collect --until-precise` (collectors/precision.py): the latencies of each run so far,
    in repeat order -> the decision stored with the run (docs/cli/collect.md lists the keys)."""

    def decide(latencies_by_run: Sequence[Sequence[float]]) -> dict[str, Any]:
        medians = run_medians(latencies_by_run)
        found = stein_decisions(
            medians[None, :],
            target_rel_half_width,
            level=level,
            pilot_runs=pilot_runs,
            max_repeat=max_repeat,
        )
        return _described(found, len(medians), target_rel_half_width, pilot_runs, max_repeat)

    return decide


def _described(
    found: SteinDecisions, n: int, target_rel_half_width: float, pilot_runs: int, max_repeat: int
) -> dict[str, Any]:
    """One configuration's decision as the dict stored in runs.environment.precision, with the
    rule that fired in words (`rule`) and in numbers."""
    decision = str(found.decision[0])
    rel, run_level = _finite(found.rel_half_width[0]), _finite(np.sinh(found.run_level_log_half_width[0]))
    pilot_sd = _finite(found.pilot_log_sd[0])
    planned = int(found.planned_runs[0]) or None
    shown = f"±{rel * 100:.2f} %" if rel is not None else "no interval"
    target, runs = f"±{target_rel_half_width * 100:g} %", counted(n, "runs")
    if pilot_sd is None:
        rule = f"pilot: {n} of {pilot_runs} runs"
        if decision == MAX_REPEAT:
            rule = f"max-repeat before the pilot's {pilot_runs} runs: the run-level t interval over {runs}"
    else:
        rule = f"{STEIN_RULE}: pilot {pilot_runs} runs, s0 {pilot_sd * 100:.2f} %, planned {planned} runs"
        if decision == MAX_REPEAT:
            rule = f"max-repeat: {rule} > --max-repeat {max_repeat}"
    if decision == PRECISE and rel is None:
        rule += "; the pilot's run medians are all equal: no spread to plan from"
    if decision != MAX_REPEAT:
        detail = f"{shown} after {runs} (target {target}; {rule})"
    else:
        detail = f"{shown} after {runs}, the --max-repeat; target {target} not reached ({rule})"
        if pilot_sd is not None:
            shown_run_level = f"±{run_level * 100:.2f} %" if run_level is not None else "none"
            detail += f"; Stein's interval, from the pilot's spread (the run-level one: {shown_run_level})"
    return {
        "decision": decision,
        "detail": detail,
        "rule": rule,
        "rel_half_width": rel,
        "run_level_rel_half_width": run_level,
        "pilot_runs": pilot_runs,
        "pilot_log_sd": pilot_sd,
        "planned_runs": planned,
    }


def _finite(value: float) -> float | None:
    return float(value) if np.isfinite(value) else None
