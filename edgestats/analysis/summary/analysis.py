"""summary: per configuration, latency median / mean / p90 / p99, throughput, memory and energy
per inference, each with its interval.

Collected runs have every steady-state latency. The run is the unit
(edgestats.analysis.estimators.hierarchical):
each run gives its own median and mean, and a configuration's median is the geometric mean of its
runs' medians (its mean the mean of their means) with a t interval on the log scale, n counting
runs; with one run the interval is the within-run one over its latencies and its note says it
covers within-run variance only. A configuration that `collect --until-precise` stopped by Stein's
rule gets Stein's interval for its median instead (edgestats.analysis.summary.until_precise: the usual
one covers less after a data-dependent stop). p90 and p99 come twice (edgestats.analysis.estimators.tails):
`latency_p90_ms` / `latency_p99_ms` are the configuration's, across processes (the two-level
model of runs and latencies, with a pivotal interval), and `latency_p90_typical_run_ms` /
`latency_p99_typical_run_ms` the typical run's (the geometric mean of the runs' own quantiles);
a run counts towards p99 only with 100 steady latencies (p90: 20). Each entry also gives n_runs,
n_latencies, the between-run and within-run variance components of log latency and their ratio,
how many runs a ±2 % median needs (Kalibera & Jones 2013; the `variance` frame tabulates them),
and whether the runs' medians form clusters (`multimodal`, edgestats.analysis.estimators.modality). A median
whose interval is wider than ±25 % or that rests on fewer than 3 runs gets `next_step`: how many
runs would make it ±5 % at the same variance components
(edgestats.analysis.estimators.hierarchical.next_step).
Imported runs have one figure per run (edgestats.analysis.summary.imported): the median's interval is
across runs, the same log-t; p90/p99 only as the typical run's, from what each run's tool printed.
Memory, energy and throughput are per-run figures: their intervals are across runs, on the log
scale, so they stay above 0.

The `distribution` frame describes each configuration's latencies for a box plot: min, p1, p5,
p25, median, p75, p95, p99, max (linear interpolation, as numpy.quantile). Whiskers are meant to
run p5–p95 rather than Tukey's 1.5 IQR fences: percentiles need no second pass over the data, mean
the same thing for every configuration, and with latencies' long right tail Tukey's fences would
leave many points outside that an aggregated chart cannot draw anyway. `ecdf` gives the quantile
function on a grid of p = 0, 0.02, ..., 1 (51 points per configuration), enough to draw the
ECDF without embedding latencies. Both are computed in DuckDB (load.group_quantiles) and have
no intervals: they describe the sample; the median's, p90's and p99's intervals are in `metrics`.
Imported groups describe their runs' median latencies (n_unit "runs"), as the median does.
"""

from __future__ import annotations

import math

import numpy as np
import polars as pl

from edgestats.analysis.core.options import AnalysisOptions
from edgestats.analysis.core.result import (
    AnalysisResult,
    estimate_row,
    group_label,
    iter_groups,
    rows_frame,
    unavailable,
)
from edgestats.analysis.estimators.bounded import clip_at_zero, positive_mean, rate_of_mean_time
from edgestats.analysis.estimators.hierarchical import (
    VarianceComponents,
    mean_over_runs,
    next_step,
    per_run_quantiles,
    quantile_over_runs,
    recommended_runs,
    usable_runs,
    variance_components,
)
from edgestats.analysis.estimators.intervals import BootstrapSettings, Estimate
from edgestats.analysis.estimators.modality import Modality, run_modality_batch
from edgestats.analysis.estimators.tails import CONFIGURATION_TAILS, TYPICAL_RUN_TAILS, tails_over_runs
from edgestats.analysis.load.frames import AnalysisData, LatencyIndex, default_config, group_quantiles
from edgestats.analysis.summary.imported import median_across_runs, reported_tails
from edgestats.analysis.summary.steadiness import with_steadiness
from edgestats.analysis.summary.until_precise import median_after_stopping
from edgestats.formatting import counted, format_number

NAME = "summary"
MEDIAN = "latency_median_ms"
# The latency metrics in the order the JSON and the tables give them: p90 / p99 across processes
# (the configuration's), then the typical run's (edgestats.analysis.estimators.tails)
LATENCY_METRICS = (MEDIAN, *CONFIGURATION_TAILS, *TYPICAL_RUN_TAILS, "latency_mean_ms")
# Columns of the `distribution` frame (ms) and their probabilities; the box is q25-q75, the
# whiskers q05-q95 (see the module docstring).
BOX_QUANTILES = {
    "min_ms": 0.0,
    "q01_ms": 0.01,
    "q05_ms": 0.05,
    "q25_ms": 0.25,
    "median_ms": 0.5,
    "q75_ms": 0.75,
    "q95_ms": 0.95,
    "q99_ms": 0.99,
    "max_ms": 1.0,
}
MAX_CLUSTER_NOTES = 5  # notes on multimodal configurations; the JSON flags every one
ECDF_POINTS = 51
ECDF_GRID = [i / (ECDF_POINTS - 1) for i in range(ECDF_POINTS)]
PROBABILITIES = sorted(set(BOX_QUANTILES.values()) | set(ECDF_GRID))
IMPORTED_NOTE = (
    "one figure per run (imported): quantiles of the runs' median latencies, not of single inferences"
)


def runs_left_out_note(runs: pl.DataFrame) -> str | None:
    """What pooling per-inference rows leaves out: the runs that have none (imported beside collected)."""
    without = int((runs["n_latencies"].fill_null(0) == 0).sum())
    return f"{counted(without, 'runs')} without per-inference rows left out" if without else None


def _no_value(level: float, n: int, n_unit: str, method: str, note: str) -> Estimate:
    return Estimate(None, None, None, level, n, n_unit, method, note)


def run_latencies(latencies: LatencyIndex, run_idxs: list[int]) -> list[np.ndarray]:
    """The steady latencies of each of these runs that has per-inference rows, one array a run."""
    return [latencies.values[slice(*latencies.bounds[i])] for i in run_idxs if i in latencies.bounds]


def median_estimate(
    runs: pl.DataFrame, latencies: LatencyIndex, *, level: float, settings: BootstrapSettings, label: str
) -> Estimate:
    """The configuration's median latency, the run as unit (the module docstring): tradeoff's
    points and winners take it from here too, so a configuration has one median everywhere. After
    `collect --until-precise`, Stein's interval (edgestats.analysis.summary.until_precise)."""
    by_run = run_latencies(latencies, runs["run_idx"].to_list())
    if not by_run:
        return median_across_runs(runs["latency_median_ms"].to_numpy(), level)
    median = quantile_over_runs(by_run, 0.5, level=level, settings=settings, label=f"{label}|{MEDIAN}")
    if len(by_run) == runs.height:
        median = median_after_stopping(runs, per_run_quantiles(usable_runs(by_run), 0.5), median, level)
    return _left_out(median, runs)


def mean_latency_estimate(runs: pl.DataFrame, latencies: LatencyIndex, *, level: float) -> Estimate:
    """The configuration's mean latency: the mean of its runs' means (log-scale t across runs)."""
    by_run = run_latencies(latencies, runs["run_idx"].to_list())
    if not by_run:
        return positive_mean(runs["latency_mean_ms"].to_numpy(), level, n_unit="runs")
    return _left_out(mean_over_runs(by_run, level=level), runs)


def _left_out(estimate: Estimate, runs: pl.DataFrame) -> Estimate:
    left_out = runs_left_out_note(runs)
    if left_out:
        estimate.note = f"{estimate.note}; {left_out}" if estimate.note else left_out
    return estimate


def latency_estimates(
    runs: pl.DataFrame, latencies: LatencyIndex, *, level: float, settings: BootstrapSettings, label: str
) -> dict[str, Estimate]:
    """Median, p90, p99 (across processes and of the typical run) and mean latency of one
    configuration's runs, the run as unit."""
    out = {MEDIAN: median_estimate(runs, latencies, level=level, settings=settings, label=label)}
    by_run = run_latencies(latencies, runs["run_idx"].to_list())
    if by_run:
        tails = tails_over_runs(by_run, level=level, settings=settings, label=label)
        out.update({metric: _left_out(estimate, runs) for metric, estimate in tails.items()})
    else:
        out.update(reported_tails(runs, level))
    out["latency_mean_ms"] = mean_latency_estimate(runs, latencies, level=level)
    return {metric: out[metric] for metric in LATENCY_METRICS}


def variance_entry(components: VarianceComponents, level: float) -> dict:
    """The variance components of log latency and the Kalibera–Jones run count, for the JSON."""
    return {
        "variance_components": components.as_dict(),
        "recommendation": recommended_runs(components, level=level).as_dict(),
    }


def variance_row(group: dict, variance: dict) -> dict:
    """One row of the `variance` frame: the components as relative SDs (%), which read more
    easily than log-scale variances (sqrt of a log variance ≈ a coefficient of variation)."""
    components, advice = variance["variance_components"], variance["recommendation"]
    sd_pct = {
        k: (100 * math.sqrt(v) if v is not None else None)
        for k, v in (
            ("between_run_sd_pct", components["between_run_var"]),
            ("within_run_sd_pct", components["within_run_var"]),
        )
    }
    return {
        **group,
        "n_runs": components["n_runs"],
        "n_latencies": components["n_latencies"],
        **sd_pct,
        "variance_ratio": components["ratio"],
        "recommended_runs": advice["runs"],
        "at_iterations_per_run": advice["iterations_per_run"],
        "for_rel_half_width_pct": 100 * advice["target_rel_half_width"],
        "note": "; ".join(n for n in (components["note"], advice["note"]) if n) or None,
    }


def throughput_estimate(runs: pl.DataFrame, mean_latency: Estimate, level: float) -> Estimate:
    """Inferences (samples) per second. With one batch size, batch_size / mean latency and its
    interval mapped through the same (monotone) function; otherwise a log-scale t interval across runs."""
    batch_sizes = runs["batch_size"].fill_null(1).unique().to_list()
    if len(batch_sizes) == 1 and mean_latency.estimate:
        per_s = float(batch_sizes[0]) * 1000.0  # latencies in ms
        return rate_of_mean_time(per_s, mean_latency, "batch_size / mean latency")
    return positive_mean(runs["throughput_per_s"].to_numpy(), level, n_unit="runs")


def energy_estimate(runs: pl.DataFrame, level: float) -> Estimate:
    """Energy per inference: across runs (t); for a single run, the interval the store gives it."""
    values = runs["energy_per_inference_j"].to_numpy().astype(float)
    measured = values[np.isfinite(values)]
    if len(measured) == 0:
        reasons = (
            sorted({r for r in runs["energy_unavailable_reason"].to_list() if r})
            if "energy_unavailable_reason" in runs.columns
            else []
        )
        why = "; ".join(reasons) or "no power source"
        return _no_value(
            level, 0, "runs", "none", f"not enough data: energy was not measured for these runs ({why})"
        )
    if len(measured) == 1:
        row = runs.filter(pl.col("energy_per_inference_j").is_not_null()).row(0, named=True)
        low, high = row.get("energy_per_inference_ci_low_j"), row.get("energy_per_inference_ci_high_j")
        if (
            low is not None and high is not None and abs(level - 0.95) < 1e-9
        ):  # the view's interval is a 95 % one
            return clip_at_zero(
                Estimate(
                    float(measured[0]),
                    float(low),
                    float(high),
                    level,
                    1,
                    "runs",
                    "idle-baseline interval",
                    "one run: the interval is the idle baseline's uncertainty, not run-to-run spread",
                )
            )
    return positive_mean(measured, level, n_unit="runs")


def group_estimates(
    sub: pl.DataFrame, index: LatencyIndex, *, level: float, settings: BootstrapSettings, label: str
) -> dict[str, Estimate]:
    """Every metric of one configuration's runs."""
    estimates = latency_estimates(sub, index, level=level, settings=settings, label=label)
    estimates["throughput_per_s"] = throughput_estimate(sub, estimates["latency_mean_ms"], level)
    estimates["rss_peak_bytes"] = positive_mean(sub["rss_peak_bytes"].to_numpy(), level, n_unit="runs")
    estimates["rss_mean_bytes"] = positive_mean(sub["rss_mean_bytes"].to_numpy(), level, n_unit="runs")
    estimates["energy_per_inference_j"] = energy_estimate(sub, level)
    return estimates


def modality_entry(modality: Modality) -> dict:
    """Whether the runs' medians form clusters (edgestats.analysis.estimators.modality), for the JSON:
    `multimodal`, the test's p-value (null: too few runs to test) and, when multimodal, `clusters`."""
    entry = {"multimodal": modality.multimodal, "multimodal_p_value": modality.p_value}
    return {**entry, "clusters": modality.clusters} if modality.multimodal else entry


def cluster_notes(entries: list[dict]) -> list[str]:
    """One line per multimodal configuration, at most MAX_CLUSTER_NOTES (--json has all)."""
    lines = []
    for entry in (e for e in entries if e.get("multimodal")):
        where = ", ".join(f"{k} {v}" for k, v in entry["group"].items())
        parts = ", ".join(f"{c['n_runs']} at {format_number(c['centre'])} ms" for c in entry["clusters"])
        lines.append(
            f"({where}) runs form {len(entry['clusters'])} clusters: {parts}; "
            "its figures average over processes in different states"
        )
    if len(lines) > MAX_CLUSTER_NOTES:
        more = len(lines) - MAX_CLUSTER_NOTES
        lines = [
            *lines[:MAX_CLUSTER_NOTES],
            f"{more} more configurations with clustered runs (--json has them)",
        ]
    return lines


def summarise(
    runs: pl.DataFrame,
    latencies: pl.DataFrame | None,
    *,
    by: list[str],
    level: float = 0.95,
    settings: BootstrapSettings | None = None,
) -> AnalysisResult:
    settings = settings or BootstrapSettings()
    measured = runs.filter(pl.col("latency_median_ms").is_not_null())
    if measured.height == 0:
        return unavailable(
            NAME, level, "no selected run has a latency (summary needs inference runs)", n=runs.height
        )
    index = LatencyIndex(latencies)
    entries, rows, members, variance_rows, run_medians = [], [], [], [], []
    for g, (group, sub) in enumerate(iter_groups(measured, by)):
        estimates = group_estimates(
            sub, index, level=level, settings=settings, label=group_label(NAME, group)
        )
        n_latencies = index.count(sub["run_idx"].to_list())
        by_run = run_latencies(index, sub["run_idx"].to_list())
        # Imported runs: the spread of their medians (one figure per run) is the between-run one.
        components = variance_components(by_run or [[m] for m in sub["latency_median_ms"].to_list()])
        variance = variance_entry(components, level) if by_run else {}
        metrics = [{"metric": m, **e.as_dict()} for m, e in estimates.items()]
        step = next_step(estimates[MEDIAN], components, sub.height)
        metrics[0].update({"next_step": step} if step else {})  # MEDIAN comes first (LATENCY_METRICS)
        entries.append(
            {
                "group": group,
                "n": sub.height,
                "n_unit": "runs",
                "n_runs": sub.height,
                "n_latencies": n_latencies,
                "level": level,
                "metrics": metrics,
                **variance,
            }
        )
        run_medians.append(sub["latency_median_ms"].to_numpy())
        if variance:
            variance_rows.append(variance_row(group, variance))
        rows += [estimate_row(group, e, metric=m, n_runs=sub.height) for m, e in estimates.items()]
        note = IMPORTED_NOTE if n_latencies == 0 else runs_left_out_note(sub)
        members.append(
            sub.select("run_idx", "latency_median_ms").with_columns(
                pl.lit(g, pl.Int32).alias("g"),
                pl.lit(n_latencies > 0).alias("pooled"),
                pl.lit(note, pl.String).alias("note"),
            )
        )
    for entry, modality in zip(entries, run_modality_batch(run_medians)):  # one test per run count
        entry.update(modality_entry(modality))
    distribution, ecdf = latency_distribution(entries, pl.concat(members), latencies)
    frames = {"metrics": rows_frame(rows), "distribution": distribution, "ecdf": ecdf}
    if variance_rows:
        frames["variance"] = rows_frame(variance_rows)
    result = AnalysisResult(NAME, level, entries, frames, notes=cluster_notes(entries), chart_only={"ecdf"})
    return with_steadiness(result, measured, by)  # runs that never settled (summary/steadiness.py)


def latency_distribution(
    entries: list[dict], members: pl.DataFrame, latencies: pl.DataFrame | None
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The `distribution` and `ecdf` frames of the groups in `entries` (in their order; `members`
    maps each run to its group g, whether the group pools latencies, and the group's note); each
    entry gets its "distribution" for the JSON."""
    quantiles = group_quantiles(members, latencies, PROBABILITIES)
    notes = dict(members.select("g", "note").unique("g").iter_rows())
    at = {p: i for i, p in enumerate(PROBABILITIES)}
    box_rows, ecdf_rows = [], []
    for g, entry in enumerate(entries):
        if g not in quantiles:
            continue
        n, values = quantiles[g]
        n_unit = "latencies" if entry["n_latencies"] else "runs"
        figures = {
            "n": n,
            "n_unit": n_unit,
            **{c: values[at[p]] for c, p in BOX_QUANTILES.items()},
            "note": notes.get(g),
        }
        entry["distribution"] = figures
        box_rows.append({**entry["group"], "n_runs": entry["n"], **figures})
        ecdf_rows += [
            {**entry["group"], "p": p, "latency_ms": values[at[p]], "n": n, "n_unit": n_unit}
            for p in ECDF_GRID
        ]
    return rows_frame(box_rows), rows_frame(ecdf_rows)


def analyse(data: AnalysisData, options: AnalysisOptions) -> AnalysisResult:
    """The registry's entry point: per --by group, or per configuration."""
    config = options.group_keys(data.runs) or default_config(data.runs)
    return summarise(data.runs, data.latencies, by=config, level=options.level, settings=options.settings)
