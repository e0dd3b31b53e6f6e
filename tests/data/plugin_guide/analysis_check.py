"""throughput (the plug-in guide's example analysis): the mean across runs and its log-scale
interval, against the same computation by hand. tests/test_plugin_guide.py writes this file as
tests/analysis/test_throughput.py in a copy of the repository."""

from __future__ import annotations

import math

import numpy as np
import pytest
from analysis_builders import runs_frame
from scipy import stats

from edgestats.analysis import AnalysisData, AnalysisOptions
from edgestats.analysis.throughput.analysis import analyse


def test_mean_throughput_and_its_log_scale_interval_by_hand():
    latencies_ms = [8.0, 1.0, 2.5]  # 125, 1,000 and 400 inferences per second
    runs = runs_frame([{"framework": "pytorch", "latency_mean_ms": ms} for ms in latencies_ms])
    result = analyse(AnalysisData(runs=runs), AnalysisOptions(by=["framework"]))
    (entry,) = result.entries
    rates = 1000 / np.array(latencies_ms)
    half = stats.t.ppf(0.975, 2) * stats.sem(rates) / rates.mean()
    assert entry["group"] == {"framework": "pytorch"} and entry["metric"] == "throughput_per_s"
    assert entry["estimate"] == pytest.approx(rates.mean()) and entry["n"] == 3
    assert (entry["ci_low"], entry["ci_high"]) == pytest.approx(
        (rates.mean() * math.exp(-half), rates.mean() * math.exp(half))
    )
    plain_t_low = stats.t.interval(0.95, 2, rates.mean(), stats.sem(rates))[0]
    assert plain_t_low < 0 < entry["ci_low"]  # where intervals.mean_t would have gone
    assert result.frames["rates"]["estimate"].to_list() == pytest.approx([rates.mean()])


def test_runs_without_latencies_say_why_there_is_nothing():
    result = analyse(AnalysisData(runs=runs_frame([{"kind": "training"}])), AnalysisOptions())
    assert not result.available and "mean latency" in result.entries[0]["reason"]
