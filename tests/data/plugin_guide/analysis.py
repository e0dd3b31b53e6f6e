"""throughput: inferences per second per configuration, the mean across runs with its interval.

The plug-in guide's example analysis (docs/architecture.md §8): tests/test_plugin_guide.py writes
this file as edgestats/analysis/throughput/analysis.py in a copy of the repository.

Per run, `throughput_per_s` is batch size / mean latency (edgestats.analysis.load.frames derives it); per
configuration, its mean across runs with a t interval on the log scale
(edgestats.analysis.estimators.bounded),
which stays above 0: a plain t interval (intervals.mean_t) of three runs at 125, 1,000 and 400 per
second reaches below 0, to -600. The name's unit suffix, `_per_s`, is what tells the bounded-interval
property test (tests/analysis/test_bounded_intervals.py) the quantity's range.
"""

from __future__ import annotations

import polars as pl

from edgestats.analysis.core.options import AnalysisOptions
from edgestats.analysis.core.result import AnalysisResult, estimate_row, iter_groups, rows_frame, unavailable
from edgestats.analysis.estimators.bounded import positive_mean
from edgestats.analysis.load.frames import AnalysisData, default_config

NAME = "throughput"
METRIC = "throughput_per_s"


def analyse(data: AnalysisData, options: AnalysisOptions) -> AnalysisResult:
    """Per --by group (default: per configuration), the mean throughput across runs."""
    runs = data.runs.filter(pl.col(METRIC).is_not_null())
    if runs.height == 0:
        return unavailable(NAME, options.level, "no run has a mean latency to take a throughput from")
    keys = options.group_keys(runs) or default_config(runs)
    entries, rows = [], []
    for group, sub in iter_groups(runs, keys):
        estimate = positive_mean(sub[METRIC].to_numpy(), options.level, n_unit="runs")
        entries.append({"group": group, "metric": METRIC, **estimate.as_dict()})
        rows.append(estimate_row(group, estimate, metric=METRIC))
    return AnalysisResult(NAME, options.level, entries, {"rates": rows_frame(rows)})
