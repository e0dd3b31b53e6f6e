"""Imported one-row-per-run results: a configuration's latency figures when each run is one row,
without its latencies. Such rows come from a published table or a native tool's output.

The median is the same run-level estimate as collected runs get (edgestats.analysis.estimators.hierarchical):
the geometric mean of the runs' medians with the t interval of their logs, n counting runs. A
bootstrap over 2-5 run values is not an interval: with 3 runs its BCa interval is [min, max]
(75 % coverage in theory, 77 % in the audit's simulation), with 2 it is narrower still (54 %).
With two runs the t interval rests on one degree of freedom and is wide, and the note says so;
with one run there is no interval across processes, and the note says that too.

Tails: a row per run can carry the run's own p90 / p99 as its tool printed it (run_results,
0007). Their geometric mean estimates the typical run's p90 / p99 (`latency_p90_typical_run_ms`),
with the same log-t interval. The configuration's p90 / p99 across processes needs the runs'
latencies (the mixture of the runs, docs/methodology.md): a run's p99 says nothing about how its
other latencies sit beside another run's, so that figure stays null and its note gives the range
it must lie in for these runs (between their lowest and highest p99).
"""

from __future__ import annotations

import numpy as np
import polars as pl

from edgestats.analysis.estimators.bounded import geometric_mean_t
from edgestats.analysis.estimators.hierarchical import RUN_LEVEL_METHOD, TWO_RUNS_NOTE
from edgestats.analysis.estimators.intervals import Estimate, clean_values
from edgestats.analysis.estimators.tails import (
    ACROSS,
    CONFIGURATION_TAILS,
    TYPICAL,
    TYPICAL_RUN_TAILS,
    percentile_name,
)
from edgestats.formatting import counted, format_number

IMPORTED_ONE_RUN_NOTE = "one run: no interval across processes"
NO_TAIL_NOTE = "one figure per run (imported): a run's tail latency is not known"


def _positive(values: object) -> np.ndarray:
    x = clean_values(values)
    return x[x > 0]


def across_runs(values: object, level: float, what: str) -> Estimate:
    """The geometric mean of one figure per run with its log-scale t interval across runs
    (`what` names the figure in the method), and the notes for one and two runs."""
    x = _positive(values)
    estimate = geometric_mean_t(x, level, n_unit="runs")
    estimate.method = RUN_LEVEL_METHOD.format(what=what)
    if len(x) == 1:  # the run's own figure, not exp(log(x)) one rounding away from it
        estimate.estimate, estimate.note = float(x[0]), IMPORTED_ONE_RUN_NOTE
    elif len(x) == 2 and estimate.has_interval:
        estimate.note = TWO_RUNS_NOTE
    return estimate


def median_across_runs(run_medians: object, level: float) -> Estimate:
    """An imported configuration's median latency: across its runs' medians (see the docstring)."""
    return across_runs(run_medians, level, "medians")


def reported_tails(runs: pl.DataFrame, level: float) -> dict[str, Estimate]:
    """p90 / p99 of an imported configuration: the typical run's from the runs' own figures, and
    across processes null with the range it lies in (see the module docstring)."""
    out = {}
    for (metric, q), typical_metric in zip(CONFIGURATION_TAILS.items(), TYPICAL_RUN_TAILS):
        values = runs[metric].to_numpy().astype(float) if metric in runs.columns else np.empty(0)
        reported = _positive(values)
        name = percentile_name(q)
        if len(reported) == 0:
            out[metric] = Estimate(None, None, None, level, runs.height, "runs", "none", NO_TAIL_NOTE)
            out[typical_metric] = Estimate(None, None, None, level, runs.height, "runs", "none", NO_TAIL_NOTE)
            continue
        typical = across_runs(reported, level, f"{name} as their tool reported it")
        typical.method = TYPICAL + typical.method
        source = f"imported: each run's own {name}, as its tool reported it"
        if len(reported) < runs.height:
            source += f"; {counted(runs.height - len(reported), 'runs')} without one left out"
        typical.note = f"{source}; {typical.note}" if typical.note else source
        span = f"{format_number(reported.min())}–{format_number(reported.max())} ms"
        out[metric] = Estimate(
            None,
            None,
            None,
            level,
            len(reported),
            "runs",
            ACROSS + "not estimable from one figure per run",
            f"imported: the configuration's {name} across processes needs the runs' latencies; the "
            f"mixture of these runs has its {name} within their own {name}s ({span}); "
            f"{typical_metric} is the typical run's",
        )
        out[typical_metric] = typical
    return out
