"""tradeoff's figures of one configuration: its Pareto point and, for the winners table, its
estimate of each metric. The point is its median latency and mean peak RSS. All of them are the
estimates and intervals summary gives the same runs (edgestats.analysis.summary.analysis's own
functions, seeded by summary's label), so a configuration has one figure of each quantity in the
summary, the points and the winners alike (tests/analysis/test_tradeoff_agrees.py)."""

from __future__ import annotations

import numpy as np
import polars as pl

from edgestats.analysis.core.result import group_label, iter_groups, json_safe, rows_frame
from edgestats.analysis.estimators.bounded import positive_mean
from edgestats.analysis.estimators.intervals import BootstrapSettings, Estimate
from edgestats.analysis.load.frames import LatencyIndex
from edgestats.analysis.summary.analysis import NAME as SUMMARY
from edgestats.analysis.summary.analysis import (
    energy_estimate,
    mean_latency_estimate,
    median_estimate,
    throughput_estimate,
)


def pareto_mask(latency: np.ndarray, memory: np.ndarray) -> np.ndarray:
    """True for points that no other point beats on both (lower is better), ties kept."""
    order = np.lexsort((memory, latency))
    keep = np.zeros(len(latency), dtype=bool)
    best_memory, last_kept = np.inf, None
    for i in order:
        if memory[i] < best_memory:
            keep[i] = True
            best_memory, last_kept = memory[i], (latency[i], memory[i])
        elif last_kept == (latency[i], memory[i]):  # an exact tie with a Pareto point
            keep[i] = True
    return keep


def pareto_points(
    runs: pl.DataFrame,
    index: LatencyIndex,
    config: list[str],
    device: list[str],
    *,
    level: float = 0.95,
    settings: BootstrapSettings | None = None,
) -> pl.DataFrame:
    """One row per configuration: median latency and mean peak RSS, each with its interval
    (`X_ci_low`, `X_ci_high`: the same intervals as summary's latency_median_ms and rss_peak_bytes),
    n_runs, and the pareto flag."""
    settings = settings or BootstrapSettings()
    measured = runs.filter(pl.col("latency_median_ms").is_not_null() & pl.col("rss_peak_bytes").is_not_null())
    rows = []
    for group, sub in iter_groups(measured, list(dict.fromkeys([*device, *config]))):
        label = summary_label(sub, config) or group_label(SUMMARY, group)
        latency, memory = (
            summary_estimate(sub, metric, index, level=level, settings=settings, label=label)
            for metric in ("latency_median_ms", "rss_peak_bytes")
        )
        rows.append(
            {
                **group,
                "latency_median_ms": latency.estimate,
                "latency_median_ms_ci_low": latency.ci_low,
                "latency_median_ms_ci_high": latency.ci_high,
                "rss_peak_bytes": memory.estimate,
                "rss_peak_bytes_ci_low": memory.ci_low,
                "rss_peak_bytes_ci_high": memory.ci_high,
                "level": level,
                "n_runs": sub.height,
            }
        )
    points = rows_frame(rows)
    if points.height == 0:
        return points
    flags = []
    for _, sub in iter_groups(points.with_row_index("_i"), device):
        mask = pareto_mask(sub["latency_median_ms"].to_numpy(), sub["rss_peak_bytes"].to_numpy())
        flags += list(zip(sub["_i"].to_list(), mask.tolist()))
    flag_of = dict(flags)
    return points.with_columns(pl.Series("pareto", [flag_of[i] for i in range(points.height)]))


def summary_estimate(
    runs: pl.DataFrame,
    metric: str,
    index: LatencyIndex,
    *,
    level: float,
    settings: BootstrapSettings,
    label: str,
) -> Estimate:
    """summary's estimate and interval of `metric` for these runs: a configuration's figures are
    the same in the summary, the Pareto points and the winners table."""
    if metric == "latency_median_ms":
        return median_estimate(runs, index, level=level, settings=settings, label=label)
    if metric == "throughput_per_s":
        return throughput_estimate(runs, mean_latency_estimate(runs, index, level=level), level)
    if metric == "energy_per_inference_j":
        return energy_estimate(runs, level)
    return positive_mean(runs[metric].to_numpy(), level, n_unit="runs")


def summary_label(runs: pl.DataFrame, config: list[str]) -> str | None:
    """The seed label summary gives these runs' configuration (a one-run median's within-run
    interval is seeded by it), or None when the runs span several configurations."""
    present = [c for c in config if c in runs.columns]
    if any(runs[c].n_unique() > 1 for c in present):
        return None
    return group_label(SUMMARY, {c: json_safe(runs[c][0]) for c in present})
