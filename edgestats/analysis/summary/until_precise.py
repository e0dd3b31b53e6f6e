"""The median's interval of a configuration collected by `collect --until-precise`: Stein's
(docs/methodology.md, "Stopping rule").

Stein's rule (edgestats.analysis.estimators.stopping) lets the data choose how many runs a configuration gets:
the pilot's spread s0 plans N runs. After such a stop the usual run-level interval over all n runs,
exp(ȳ ± t_{n-1} · s / √n), covers less than its level (91.5-92.8 % at 95 % with run medians 5 %
apart, tests/analysis/test_until_precise.py), because n and s are not independent: a pilot that
happened to agree plans few runs, whose s is small too. Stein's own interval,

    exp(ȳ ± t_{n0-1, 1-α/2} · s0 / √n)     s0: the SD of the pilot's n0 log run medians,

holds the level exactly for normal log run medians, whatever n the rule chose (the pivot
(ȳ - μ)·√n / s0 is Student's t with n0 - 1 degrees of freedom, since n depends on s0 only and ȳ
given s0 is normal). So `summary` gives a configuration's median this interval when every run of
the configuration came from one until-precise loop under Stein's rule; the estimate, exp(ȳ), is
the one it always gives.

What the runs carry (runs.environment.precision, written by collectors/precision.py, read by
edgestats.analysis.load.sql as the column RECORD_COLUMN): each run's decision, the pilot size
`pilot_runs`, and from the pilot on `pilot_log_sd`. The analysis does not take s0 from the record:
it recomputes it from the pilot runs' own medians (repeat_index < n0) and checks that it matches
what the rule saw (a merge, a --where or a later re-run could have changed the runs since), and
uses the usual interval, with a note, where anything does not fit.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import polars as pl

from edgestats.analysis.estimators.intervals import Estimate, t_quantile
from edgestats.analysis.load.sql import STOP_RECORD_COLUMN
from edgestats.formatting import format_number

# The column of the analysis' runs frame holding runs.environment.precision as JSON text (NULL for
# runs collected otherwise)
RECORD_COLUMN = STOP_RECORD_COLUMN
STOPPED = ("precise", "max-repeat")
METHOD = "Stein two-stage (collect --until-precise): t with {df} degrees of freedom over the pilot's spread"
# The rule saw medians in ns, the analysis in ms: the same logs but for rounding.
SD_REL_TOLERANCE = 1e-6
USUAL = "the usual run-level interval"


def _records(values: Sequence[Any]) -> list[dict | None]:
    """Each run's stop record (None where it has none, or one that does not read as an object)."""
    out: list[dict | None] = []
    for value in values:
        try:
            record = json.loads(value) if isinstance(value, str) else value
        except ValueError:
            record = None
        out.append(record if isinstance(record, dict) else None)
    return out


def stein_pilot(
    records: Sequence[dict | None], repeat_indexes: Sequence[Any]
) -> tuple[int | None, str | None]:
    """(n0, None) when the runs, in repeat order, are one until-precise loop stopped by Stein's
    rule; (None, why) when they are an until-precise loop whose interval cannot be Stein's; (None,
    None) when they were not collected by Stein's rule at all (no record, or an older rule's)."""
    if not any(r is not None and "pilot_log_sd" in r for r in records):
        return None, None
    if any(r is None for r in records):
        return None, f"not every run came from the --until-precise loop: {USUAL}"
    if sorted(repeat_indexes, key=lambda k: -1 if k is None else k) != list(range(len(records))):
        return None, f"the runs are not repeats 0 to {len(records) - 1} of one --until-precise loop: {USUAL}"
    pilots = {r.get("pilot_runs") for r in records}
    last = records[int(np.argmax(repeat_indexes))]
    if len(pilots) != 1 or not isinstance(last.get("pilot_runs"), int) or last["pilot_runs"] < 2:
        return None, f"the runs' stop records disagree on the pilot: {USUAL}"
    if last.get("decision") not in STOPPED or last.get("pilot_log_sd") is None:
        return None, f"the --until-precise loop did not stop by its rule: {USUAL}"
    if len(records) < last["pilot_runs"]:
        return None, f"fewer runs than the pilot's {last['pilot_runs']}: {USUAL}"
    return int(last["pilot_runs"]), None


def stein_median(run_medians: Sequence[float], pilot_runs: int, level: float) -> Estimate:
    """exp(ȳ) with exp(ȳ ± t_{n0-1} · s0 / √n): Stein's interval from run medians in repeat order
    (the first `pilot_runs` are the pilot). No interval where the pilot's medians are all equal."""
    logs = np.log(np.asarray(run_medians, dtype=float))
    n, centre = len(logs), float(np.mean(logs))
    pilot = logs[:pilot_runs]
    s0 = float(np.std(pilot, ddof=1)) if np.ptp(pilot) > 0 else 0.0
    method = METHOD.format(df=pilot_runs - 1)
    if s0 == 0.0:
        return Estimate(
            math.exp(centre), None, None, level, n, "runs", method, "the pilot's run medians are all equal"
        )
    half = t_quantile(level, pilot_runs - 1) * s0 / math.sqrt(n)
    return Estimate(
        math.exp(centre), math.exp(centre - half), math.exp(centre + half), level, n, "runs", method
    )


def _with_note(estimate: Estimate, note: str) -> Estimate:
    estimate.note = f"{estimate.note}; {note}" if estimate.note else note
    return estimate


def median_after_stopping(
    runs: pl.DataFrame, run_medians: Sequence[float], usual: Estimate, level: float
) -> Estimate:
    """A configuration's median: Stein's interval (module docstring) when its runs (`runs`, with
    run_medians in the same row order) are one until-precise loop stopped by Stein's rule, else
    `usual` (with a note saying why, where they came from such a loop but do not fit)."""
    if RECORD_COLUMN not in runs.columns or len(run_medians) != runs.height or runs.height < 2:
        return usual
    repeat_indexes = (
        runs["repeat_index"].to_list() if "repeat_index" in runs.columns else [None] * runs.height
    )
    records = _records(runs[RECORD_COLUMN].to_list())
    pilot_runs, why = stein_pilot(records, repeat_indexes)
    if pilot_runs is None:
        return _with_note(usual, why) if why else usual
    order = np.argsort(repeat_indexes, kind="stable")
    medians = np.asarray(run_medians, dtype=float)[order]
    stored = float(records[order[-1]]["pilot_log_sd"])
    logs = np.log(medians[:pilot_runs])
    s0 = float(np.std(logs, ddof=1)) if np.ptp(logs) > 0 else 0.0
    if not math.isclose(s0, stored, rel_tol=SD_REL_TOLERANCE, abs_tol=1e-12):
        return _with_note(
            usual,
            f"the pilot's spread recomputed from its runs ({100 * s0:.3g} %) is not the one the "
            f"--until-precise rule recorded ({100 * stored:.3g} %): {USUAL}",
        )
    stein = stein_median(medians, pilot_runs, level)
    if not stein.has_interval:
        return _with_note(usual, f"the --until-precise pilot's run medians are all equal: {USUAL}")
    shown = (
        f"[{format_number(usual.ci_low)}, {format_number(usual.ci_high)}]" if usual.has_interval else "none"
    )
    return _with_note(
        stein,
        f"--until-precise stopped by Stein's rule: the interval uses the spread of the pilot's "
        f"{pilot_runs} runs (s0 {100 * s0:.3g} %); {USUAL} over all {runs.height} runs ({shown}) "
        "covers less after a data-dependent stop",
    )
