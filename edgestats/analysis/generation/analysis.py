"""generation: the figures of each configuration of generation runs, and decode time per token
against context depth. The runs are collect --kind generation's (docs/generation.md). The figures,
each with a run-level interval: time to first token, prefill and decode tokens per second,
inter-token latency p50 / p90 / p99, energy per token of prefill and of decode, peak memory and the
KV cache's size. Decode time per token against context depth is edgestats.analysis.generation.fit's.

A configuration is summary's (device × framework × runtime × model × batch × threads × precision ×
prompt_tokens × new_tokens × context_depth, or --by), and the run is the unit throughout:

- Inter-token latencies are the steady latencies of a generation run (token 0, the time to first
  token, is stored as warm-up), so p50 / p90 / p99 are summary's own latency_median_ms /
  latency_p90_ms / latency_p99_ms of the same runs, computed by summary's functions and seeded as
  summary seeds them: the median is the geometric mean of the runs' medians (log-scale t across
  runs), p90 / p99 the configuration's across processes (two-level model, pivotal interval; p99
  needs 100 decode steps a run, p90 20). Decode tokens per second is summary's throughput_per_s:
  batch_size / the mean inter-token latency across runs, its interval the mean's mapped through.
- Prefill tokens per second is the same construction on the prefill phase: prompt_tokens ×
  batch_size / the mean prefill time across runs (log-scale t interval of the mean, mapped).
- Time to first token, energy per token (net of idle, per phase), peak RSS and the KV cache size
  are one figure per run: the mean across runs with the log-scale (delta method) t interval of
  edgestats.analysis.estimators.bounded.positive_mean, which stays above 0 (peak RSS is summary's figure).
- Imported runs (llama-bench) have no per-token rows: their reported rates and time to first token
  (generation_summary falls back to run_results) get positive_mean across runs.
"""

from __future__ import annotations

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
from edgestats.analysis.estimators.bounded import positive_mean, rate_of_mean_time
from edgestats.analysis.estimators.intervals import BootstrapSettings, Estimate
from edgestats.analysis.generation.fit import depth_fits
from edgestats.analysis.load.frames import AnalysisData, LatencyIndex, default_config
from edgestats.analysis.summary import analysis as summary

NAME = "generation"
# The per-run figures this analysis reads from generation_summary (edgestats.analysis.load.sql).
ITL_METRICS = {"itl_p50_ms": summary.MEDIAN, "itl_p90_ms": "latency_p90_ms", "itl_p99_ms": "latency_p99_ms"}
METRICS = (
    "ttft_ms",
    "prefill_tokens_per_s",
    "decode_tokens_per_s",
    *ITL_METRICS,
    "prefill_energy_per_token_j",
    "decode_energy_per_token_j",
    "rss_peak_bytes",
    "kv_cache_bytes",
)
PHASE_REASON = "phase_energy_unavailable_reason"
NO_TOKENS_NOTE = "no per-token latencies (imported runs): inter-token quantiles need them"


def generation_runs(data: AnalysisData) -> pl.DataFrame:
    """The selected generation runs with their generation_summary figures (one row per run)."""
    runs = data.runs.filter(pl.col("kind") == "generation")
    if data.generation is None or runs.height == 0:
        return runs.clear()
    # the prefill / decode phases' own reason for a missing energy, beside the run's
    figures = data.generation.rename({"energy_unavailable_reason": PHASE_REASON}, strict=False)
    figures = figures.drop([c for c in figures.columns if c in runs.columns and c != "run_idx"])
    return runs.join(figures, on="run_idx", how="inner")


def _no_value(level: float, n: int, note: str) -> Estimate:
    return Estimate(None, None, None, level, n, "runs", "none", note)


def _finite(sub: pl.DataFrame, column: str) -> np.ndarray:
    values = sub[column].cast(pl.Float64).to_numpy()
    return values[np.isfinite(values)]


def prefill_rate(sub: pl.DataFrame, level: float) -> Estimate:
    """Prompt tokens (all sequences) per second of prefill: tokens / the mean prefill time where
    every run has one and the token count is one; otherwise the mean of the runs' own rates."""
    tokens = (sub["prompt_tokens"].cast(pl.Float64) * sub["batch_size"].fill_null(1)).unique()
    times = _finite(sub, "prefill_s")
    if tokens.len() == 1 and tokens[0] is not None and len(times) == sub.height:
        mean_time = positive_mean(times, level, n_unit="runs")
        if not mean_time.estimate or mean_time.estimate <= 0:
            return _no_value(level, mean_time.n, mean_time.note or "no positive mean time")
        return rate_of_mean_time(float(tokens[0]), mean_time, "prompt tokens / mean prefill time")
    return positive_mean(_finite(sub, "prefill_tokens_per_s"), level, n_unit="runs")


def per_run_mean(sub: pl.DataFrame, column: str, level: float) -> Estimate:
    """The mean of a per-run positive figure across runs; where no run has it, the reason."""
    values = _finite(sub, column)
    if len(values) == 0:
        reasons = sorted({r for r in sub[PHASE_REASON].to_list() if r}) if "energy" in column else []
        why = reasons[0] if len(reasons) == 1 else ("; ".join(reasons) or "not measured")
        return _no_value(level, 0, f"not enough data: {why}")
    if column == "kv_cache_bytes" and len(values) > 1 and np.all(values == values[0]):
        note = "the same in every run: a size the configuration fixes, so no interval"
        return Estimate(float(values[0]), None, None, level, len(values), "runs", "exact", note)
    return positive_mean(values, level, n_unit="runs")


def token_estimates(
    sub: pl.DataFrame, index: LatencyIndex, *, level: float, settings: BootstrapSettings, label: str
) -> dict[str, Estimate]:
    """Inter-token quantiles and the decode rate: summary's estimates of these runs (the module
    docstring); the runs' reported decode rates where none has per-token rows."""
    if not summary.run_latencies(index, sub["run_idx"].to_list()):
        out = {metric: _no_value(level, sub.height, NO_TOKENS_NOTE) for metric in ITL_METRICS}
        out["decode_tokens_per_s"] = positive_mean(_finite(sub, "decode_tokens_per_s"), level, n_unit="runs")
        return out
    latency = summary.latency_estimates(sub, index, level=level, settings=settings, label=label)
    out = {metric: latency[source] for metric, source in ITL_METRICS.items()}
    decode = summary.throughput_estimate(sub, latency["latency_mean_ms"], level)
    decode.method = f"batch_size / mean inter-token latency ({decode.method})"
    out["decode_tokens_per_s"] = decode
    return out


def group_estimates(
    sub: pl.DataFrame, index: LatencyIndex, *, level: float, settings: BootstrapSettings, label: str
) -> dict[str, Estimate]:
    """Every metric of one configuration's generation runs, in METRICS order."""
    out = token_estimates(sub, index, level=level, settings=settings, label=label)
    out["ttft_ms"] = per_run_mean(sub, "ttft_ms", level)
    out["prefill_tokens_per_s"] = prefill_rate(sub, level)
    for column in ("prefill_energy_per_token_j", "decode_energy_per_token_j", "kv_cache_bytes"):
        out[column] = per_run_mean(sub, column, level)
    out["rss_peak_bytes"] = positive_mean(sub["rss_peak_bytes"].to_numpy(), level, n_unit="runs")
    return {metric: out[metric] for metric in METRICS}


def analyse(data: AnalysisData, options: AnalysisOptions) -> AnalysisResult:
    """The registry's entry point: per --by group, or per configuration (summary's groups)."""
    runs = generation_runs(data)
    level = options.level
    if runs.height == 0:
        return unavailable(NAME, level, "no selected run is a generation run (collect --kind generation)")
    config = options.group_keys(data.runs) or default_config(data.runs)
    index = LatencyIndex(data.latencies)
    entries, rows = [], []
    for group, sub in iter_groups(runs, config):
        # summary's seed label: the same runs get the very bootstrap draws summary gives them
        label = group_label(summary.NAME, group)
        estimates = group_estimates(sub, index, level=level, settings=options.settings, label=label)
        metrics = [{"metric": m, **e.as_dict()} for m, e in estimates.items()]
        entries.append(
            {"group": group, "n": sub.height, "n_unit": "runs", "level": level, "metrics": metrics}
        )
        rows += [estimate_row(group, e, metric=m, n_runs=sub.height) for m, e in estimates.items()]
    fits = depth_fits(runs, config, level)
    frames = {"metrics": rows_frame(rows), **fits.frames}
    notes = [] if fits.entries else [fits.why_none]
    return AnalysisResult(
        NAME,
        level,
        [*entries, *fits.entries],
        frames,
        notes=[n for n in notes if n],
        chart_only={"depth_points", "depth_band"},
    )
