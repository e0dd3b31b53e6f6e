"""pipeline: data-loading stalls in training (the Jetson study) and resource use against batch
size (the DLaaS study's Table XXII).

- workers: per group (default device × storage, × model where the runs span several) and
  num_workers, the median fetch stall and the median end-to-end time per epoch with intervals.
  Collected runs give one value per epoch (cumulative over its batches; n counts epochs);
  imported runs one per run (n counts runs). From 10 values a BCa interval of the median; fewer
  are not resampled (a bootstrap of 3 values is [min, max]): the geometric mean with its
  log-scale t interval (edgestats.analysis.estimators.ratios).
- reduction: how many times smaller the median stall (and E2E time) gets from 0 to 1 worker
  (pipelining) and from 1 to 2 (parallel fetch): a bootstrap interval of the ratio of medians
  from 10 values a side, else the ratio of geometric means with Welch's log-t interval.
- resources: Spearman's rank correlation of CPU use and memory with batch size, per group
  (default device × framework, × model where the runs span several), with the Bonett–Wright
  Fisher-z interval.

Every row carries the page filter's fields (device, framework, runtime, model) of the runs behind
it (edgestats.analysis.core.filter_tags).
"""

from __future__ import annotations

import numpy as np
import polars as pl

from edgestats.analysis.core.filter_tags import filter_tags, tag_columns
from edgestats.analysis.core.options import AnalysisOptions
from edgestats.analysis.core.result import (
    AnalysisResult,
    estimate_row,
    group_label,
    iter_groups,
    not_enough_entry,
    rows_frame,
)
from edgestats.analysis.estimators.bounded import geometric_mean_t
from edgestats.analysis.estimators.correlations import correlation
from edgestats.analysis.estimators.intervals import (
    BootstrapSettings,
    Estimate,
    clean_values,
    finite_or_none,
    order_statistic_ci,
    quantile_ci,
)
from edgestats.analysis.estimators.ratios import MAX_LOG_SPAN, MIN_RESAMPLED, ratio_of_medians
from edgestats.analysis.load.frames import AnalysisData

NAME = "pipeline"
STEPS = ((0, 1), (1, 2))
RESOURCE_METRICS = (
    "cpu_total_mean_pct",
    "cpu_user_mean_pct",
    "cpu_system_mean_pct",
    "cpu_iowait_mean_pct",
    "mem_mean_mb",
    "mem_peak_mb",
)


def stall_units(runs: pl.DataFrame, epochs: pl.DataFrame | None) -> pl.DataFrame:
    """One row per unit (an epoch of a collected run, or an imported run): run_idx, stall_s,
    e2e_s, unit. A run with batch rows contributes its epochs and not its reported figures."""
    parts = []
    collected: list[int] = []
    if epochs is not None and epochs.height:
        parts.append(epochs.select("run_idx", "stall_s", "e2e_s", pl.lit("epochs").alias("unit")))
        collected = epochs["run_idx"].unique().to_list()
    reported = runs.filter(
        ~pl.col("run_idx").is_in(collected)
        & (pl.col("fetch_stall_s").is_not_null() | pl.col("e2e_s").is_not_null())
    )
    parts.append(
        reported.select(
            "run_idx", pl.col("fetch_stall_s").alias("stall_s"), "e2e_s", pl.lit("runs").alias("unit")
        )
    )
    return pl.concat(parts, how="vertical_relaxed")


def workers_part(
    runs: pl.DataFrame, units: pl.DataFrame, by: list[str], level: float, settings: BootstrapSettings
) -> tuple[list, list, list]:
    joined = (
        runs.select("run_idx", *dict.fromkeys([*by, *tag_columns(runs)]), "num_workers")
        .join(units, on="run_idx")
        .filter(pl.col("num_workers").is_not_null())
    )
    entries, rows, reductions = [], [], []
    for group, sub in iter_groups(joined, by):
        label = group_label(NAME, group)
        by_workers = {
            w: part for (w,), part in sub.sort("num_workers").group_by(["num_workers"], maintain_order=True)
        }
        median_entries, median_rows = _worker_medians(group, by_workers, label, level, settings)
        step_entries, step_rows = _reductions(group, by_workers, label, level, settings)
        entries += median_entries + step_entries
        rows += median_rows
        reductions += step_rows
    return entries, rows, reductions


def _worker_medians(
    group: dict, by_workers: dict, label: str, level: float, settings: BootstrapSettings
) -> tuple[list, list]:
    """The median stall and E2E time at each worker count, as entries and rows of `workers`."""
    entries, rows = [], []
    for workers, part in by_workers.items():
        unit = (
            "epochs"
            if (part["unit"] == "epochs").all()
            else ("runs" if (part["unit"] == "runs").all() else "epochs and runs")
        )
        stall = _median(part["stall_s"], unit, level, settings, f"{label}|{workers}|stall")
        e2e = _median(part["e2e_s"], unit, level, settings, f"{label}|{workers}|e2e")
        entries.append(
            {
                "part": "workers",
                "group": group,
                "num_workers": workers,
                "n": part.height,
                "n_unit": unit,
                "n_runs": part["run_idx"].n_unique(),
                "level": level,
                "stall_median_s": stall.as_dict(),
                "e2e_median_s": e2e.as_dict(),
            }
        )
        tags = filter_tags(part, skip=group)
        rows.append(estimate_row(group, stall, **tags, num_workers=workers, quantity="stall_median_s"))
        rows.append(estimate_row(group, e2e, **tags, num_workers=workers, quantity="e2e_median_s"))
    return entries, rows


def _median(values: pl.Series, unit: str, level: float, settings: BootstrapSettings, label: str) -> Estimate:
    """The median of epochs' or runs' figures: BCa (or order statistics) over at least
    MIN_RESAMPLED values; below that, no bootstrap (ratios.py's docstring): the geometric mean
    with the log-scale t interval (the median of a log-normal, as an imported configuration's
    median latency gets), or where a value is 0 the distribution-free order-statistic interval."""
    x = clean_values(values.to_numpy())
    if len(x) >= MIN_RESAMPLED:
        return quantile_ci(x, 0.5, level=level, settings=settings, n_unit=unit, label=label)
    if len(x) and np.all(x > 0) and np.ptp(np.log(x)) < MAX_LOG_SPAN:
        estimate = geometric_mean_t(x, level, n_unit=unit)
        if np.ptp(x) == 0:  # one value, or all equal: that value, not exp(log(x)) a rounding away
            estimate.estimate = float(x[0])
        if len(x) == 2 and estimate.has_interval:
            estimate.note = "two values: the interval rests on one degree of freedom, so it is wide"
        return estimate
    if len(x) == 0:
        return quantile_ci(x, 0.5, level=level, settings=settings, n_unit=unit, label=label)
    estimate = order_statistic_ci(x, 0.5, level, unit)
    why = "a value of 0, or values orders of magnitude apart: no interval on the log scale"
    estimate.note = f"{why}; {estimate.note}" if estimate.note else f"{why}; the order-statistic interval"
    return estimate


def _reductions(
    group: dict, by_workers: dict, label: str, level: float, settings: BootstrapSettings
) -> tuple[list, list]:
    """How many times the median stall and E2E time fall from one worker count to the next (STEPS),
    as entries and rows of `reductions`."""
    entries, rows = [], []
    for low, high in STEPS:
        if low not in by_workers or high not in by_workers:
            continue
        for column in ("stall_s", "e2e_s"):
            ratio = ratio_of_medians(
                by_workers[low][column].to_numpy(),
                by_workers[high][column].to_numpy(),
                level=level,
                settings=settings,
                n_unit="epochs" if by_workers[low]["unit"][0] == "epochs" else "runs",
                label=f"{label}|{low}->{high}|{column}",
            )
            entries.append(
                {
                    "part": "reduction",
                    "group": group,
                    "metric": column,
                    "from_workers": low,
                    "to_workers": high,
                    "level": level,
                    "reduction_factor": ratio.as_dict(),
                    "n": ratio.n,
                    "n_unit": ratio.n_unit,
                }
            )
            tags = filter_tags(pl.concat([by_workers[low], by_workers[high]]), skip=group)
            rows.append(estimate_row(group, ratio, **tags, metric=column, from_workers=low, to_workers=high))
    return entries, rows


def resources_part(runs: pl.DataFrame, by: list[str], level: float) -> tuple[list, list]:
    points = runs.filter(pl.col("batch_size").is_not_null())
    entries, rows = [], []
    for group, sub in iter_groups(points, by):
        if sub["batch_size"].n_unique() < 2:
            continue
        for metric in RESOURCE_METRICS:
            measured = sub.filter(pl.col(metric).is_not_null())
            if measured.height == 0:
                continue
            result = correlation(
                measured["batch_size"].cast(pl.Float64).to_numpy(),
                measured[metric].cast(pl.Float64).to_numpy(),
                "spearman",
                level=level,
                n_unit="runs",
            )
            entries.append(
                {
                    "part": "resources",
                    "group": group,
                    "x": "batch_size",
                    "y": metric,
                    "n": result.estimate.n,
                    "n_unit": "runs",
                    "level": level,
                    "spearman": result.as_dict(),
                }
            )
            rows.append(
                estimate_row(
                    group,
                    result.estimate,
                    **filter_tags(measured, skip=group),
                    x="batch_size",
                    y=metric,
                    p_value=finite_or_none(result.p_value),
                )
            )
    return entries, rows


def _present(runs: pl.DataFrame, columns: tuple[str, ...]) -> list[str]:
    return [c for c in columns if c in runs.columns and runs[c].is_not_null().any()]


def _worker_runs(runs: pl.DataFrame, units: pl.DataFrame) -> pl.DataFrame:
    """The runs the workers part reads: those with stall or E2E units and a num_workers."""
    return runs.filter(
        pl.col("run_idx").is_in(units["run_idx"].unique().to_list()) & pl.col("num_workers").is_not_null()
    )


def _resource_runs(runs: pl.DataFrame) -> pl.DataFrame:
    """The runs the resources part reads: a batch size and some CPU or memory figure."""
    measured = [pl.col(m).is_not_null() for m in RESOURCE_METRICS if m in runs.columns]
    return (
        runs.filter(pl.col("batch_size").is_not_null() & pl.any_horizontal(measured))
        if measured
        else runs.clear()
    )


def _by_model(by: list[str], runs: pl.DataFrame) -> list[str]:
    """The default groups, and model where the part's runs span several: a stall or a CPU figure
    of one model says nothing of another's, and each group's rows then carry one model, which the
    page's filter can choose."""
    spans = "model" in runs.columns and runs["model"].drop_nulls().n_unique() > 1
    return [*by, "model"] if spans and "model" not in by else by


def pipeline(
    runs: pl.DataFrame,
    epochs: pl.DataFrame | None,
    *,
    by: list[str] | None = None,
    level: float = 0.95,
    settings: BootstrapSettings | None = None,
) -> AnalysisResult:
    settings = settings or BootstrapSettings()
    units = stall_units(runs, epochs)
    has_workers = (
        units.height > 0
        and runs.filter(pl.col("run_idx").is_in(units["run_idx"].unique().to_list()))["num_workers"]
        .is_not_null()
        .any()
    )
    stall_by = (
        by if by is not None else _by_model(_present(runs, ("device", "storage")), _worker_runs(runs, units))
    )
    resource_by = (
        by if by is not None else _by_model(_present(runs, ("device", "framework")), _resource_runs(runs))
    )
    entries, frames = [], {}
    if has_workers:
        worker_entries, worker_rows, reduction_rows = workers_part(runs, units, stall_by, level, settings)
        entries += worker_entries
        frames["workers"] = rows_frame(worker_rows)
        frames["reductions"] = rows_frame(reduction_rows)
    resource_entries, resource_rows = resources_part(runs, resource_by, level)
    entries += resource_entries
    if resource_rows:
        frames["resources"] = rows_frame(resource_rows)
    if not entries:
        why = (
            "no run has fetch-stall times with num_workers, nor CPU/memory figures at two or more "
            "batch sizes (collect training runs, or import fetch_stall_s / e2e_s / cpu_*_pct / mem_*_mb)"
        )
        return AnalysisResult(NAME, level, [not_enough_entry(why, n=runs.height, level=level)])
    return AnalysisResult(NAME, level, entries, frames)


def analyse(data: AnalysisData, options: AnalysisOptions) -> AnalysisResult:
    """The registry's entry point: per --by group, or per storage and device (see pipeline)."""
    return pipeline(
        data.runs,
        data.epochs,
        by=options.group_keys(data.runs) or None,
        level=options.level,
        settings=options.settings,
    )
