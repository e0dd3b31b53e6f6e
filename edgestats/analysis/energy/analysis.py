"""energy: is a slower configuration also a hungrier one (pCAMP's Insight 3), and where does the
energy go (pCAMP's Figure 3)?

- correlation: across configurations (mean latency vs mean energy per inference), Pearson with
  its Fisher-z interval and Spearman with the Bonett–Wright one; per --by group (default all).
- fit: OLS energy_per_inference_j ~ latency_mean_ms through the configurations' means (one point
  per configuration, not per run), per device (or --by), with t intervals and R².
  Both live in edgestats.analysis.energy.fit, which says why the configuration is the unit and
  why the latency is the mean.
- phases: per configuration and phase, mean energy and mean power with t intervals across runs,
  on the log scale where every value is ≥ 0 (edgestats.analysis.estimators.bounded), so they stay above 0;
  energy above idle that comes out below 0 somewhere is a difference and keeps the plain t.
- points and band: what the time-energy chart draws. points are the configurations' means (with
  n_runs), the very points of the fit; band is that fitted line with the confidence band of its
  mean response, per fit group.

Unmeasured energy is NULL (never 0) and is left out; a group without any says so.
"""

from __future__ import annotations

import math

import polars as pl

from edgestats.analysis.core.options import AnalysisOptions
from edgestats.analysis.core.result import (
    AnalysisResult,
    estimate_row,
    iter_groups,
    not_enough_entry,
    rows_frame,
)
from edgestats.analysis.energy.fit import time_energy_parts
from edgestats.analysis.estimators.bounded import NEGATIVE_NOTE, clip_at_zero, log_mean_interval
from edgestats.analysis.estimators.intervals import Estimate, t_interval
from edgestats.analysis.load.frames import AnalysisData, default_config

NAME = "energy"
PHASES = ("import", "load_model", "first_inference", "steady", "total")
BASELINE_LEVEL = 0.95  # the views' energy intervals are 95 % ones


def single_run_interval(row: dict, level: float) -> Estimate | None:
    """For one run, the view's interval: it carries the idle baseline's uncertainty (a 95 %
    t interval of the idle mean), not run-to-run spread; only used at level 0.95."""
    if row["n_energy"] != 1 or abs(level - BASELINE_LEVEL) > 1e-9:
        return None
    if row["ci_low_j"] is None or row["ci_high_j"] is None:
        return None
    return clip_at_zero(
        Estimate(
            row["mean_energy_j"],
            min(row["ci_low_j"], row["ci_high_j"]),
            max(row["ci_low_j"], row["ci_high_j"]),
            level,
            1,
            "runs",
            "idle-baseline interval",
            "one run: the interval is the idle baseline's uncertainty, not run-to-run spread",
        )
    )


def moments_interval(
    n: int, mean: float | None, sd: float | None, minimum: float | None, level: float
) -> Estimate:
    """The mean's interval from (n, mean, sd) over runs: on the log scale when no value is below
    0 (then it stays above 0), the plain t otherwise (the quantity is a difference there)."""
    if minimum is not None and minimum < 0:
        plain = t_interval(n, mean, sd or 0.0, level, "runs")
        plain.note = f"{plain.note}; {NEGATIVE_NOTE}" if plain.note else NEGATIVE_NOTE
        return plain
    return log_mean_interval(n, mean if mean is not None else math.nan, sd or 0.0, level, "runs")


def phase_moments(runs: pl.DataFrame, phase_energy: pl.DataFrame, config: list[str]) -> pl.DataFrame:
    """Per configuration and phase: n, mean and sd of energy and of mean power over runs, in one
    polars aggregation (a filter per group and phase would cost a pass each)."""
    power = pl.when(pl.col("energy_j").is_not_null()).then(
        pl.coalesce(pl.col("mean_power_w"), pl.col("energy_j") / pl.col("duration_s"))
    )
    joined = (
        runs.select("run_idx", *config)
        .join(phase_energy.filter(pl.col("phase").is_in(PHASES)), on="run_idx")
        .with_columns(power.alias("_power_w"))
    )
    return joined.group_by([*config, "phase"], maintain_order=True).agg(
        pl.col("energy_j").count().alias("n_energy"),
        pl.col("energy_j").mean().alias("mean_energy_j"),
        pl.col("energy_j").std().alias("sd_energy_j"),
        pl.col("energy_j").min().alias("min_energy_j"),
        pl.col("_power_w").count().alias("n_power"),
        pl.col("_power_w").min().alias("min_power_w"),
        pl.col("_power_w").mean().alias("mean_power_w"),
        pl.col("_power_w").std().alias("sd_power_w"),
        pl.col("energy_ci_low_j").first().alias("ci_low_j"),
        pl.col("energy_ci_high_j").first().alias("ci_high_j"),
        pl.col("run_idx").n_unique().alias("n_runs"),
        pl.col("source").drop_nulls().unique().sort().alias("sources"),
        pl.col("energy_unavailable_reason").drop_nulls().unique().sort().alias("reasons"),
    )


def phase_profile(
    runs: pl.DataFrame, phase_energy: pl.DataFrame | None, config: list[str], level: float
) -> tuple[list, list]:
    if phase_energy is None or phase_energy.height == 0:
        return [], []
    moments = phase_moments(runs, phase_energy, config)
    entries, rows = [], []
    order = {p: i for i, p in enumerate(PHASES)}
    for group, sub in iter_groups(moments, config):
        measured = [r for r in sub.to_dicts() if r["n_energy"] > 0]
        if not measured:
            reasons = sorted({r for row in sub.to_dicts() for r in row["reasons"]})
            entries.append(
                not_enough_entry(
                    "energy was not measured for these runs"
                    + (f" ({'; '.join(reasons)})" if reasons else ""),
                    group=group,
                    n=int(sub["n_runs"].max()),
                    level=level,
                    part="phases",
                )
            )
            continue
        phase_list = []
        for row in sorted(measured, key=lambda r: order[r["phase"]]):
            energy_estimate = single_run_interval(row, level) or moments_interval(
                row["n_energy"], row["mean_energy_j"], row["sd_energy_j"], row["min_energy_j"], level
            )
            power = moments_interval(
                row["n_power"], row["mean_power_w"], row["sd_power_w"], row["min_power_w"], level
            )
            phase_list.append(
                {
                    "phase": row["phase"],
                    "energy_j": energy_estimate.as_dict(),
                    "mean_power_w": power.as_dict(),
                    "sources": row["sources"],
                }
            )
            rows.append(
                estimate_row(group, energy_estimate, part="phases", phase=row["phase"], quantity="energy_j")
            )
            rows.append(
                estimate_row(group, power, part="phases", phase=row["phase"], quantity="mean_power_w")
            )
        entries.append(
            {
                "part": "phases",
                "group": group,
                "n": max(r["n_energy"] for r in measured),
                "n_unit": "runs",
                "level": level,
                "phases": phase_list,
            }
        )
    return entries, rows


def energy(
    runs: pl.DataFrame,
    phase_energy: pl.DataFrame | None,
    *,
    config: list[str],
    by: list[str],
    level: float = 0.95,
) -> AnalysisResult:
    has_energy = runs["energy_per_inference_j"].is_not_null().any()
    has_phase_energy = phase_energy is not None and phase_energy["energy_j"].is_not_null().any()
    if not has_energy and not has_phase_energy:
        return AnalysisResult(
            NAME,
            level,
            [
                not_enough_entry(
                    "no selected run has energy measured (collect with a power source, e.g. --power rapl, "
                    "or import energy_j)",
                    n=runs.height,
                    level=level,
                )
            ],
        )
    entries, frames = [], {}
    if has_energy:
        fit_by = by or (["device"] if "device" in runs.columns else [])
        line_entries, rows, chart = time_energy_parts(runs, config, by, fit_by, level)
        entries += line_entries
        frames["correlation"] = rows_frame(rows["correlation"])
        frames["fit"] = rows_frame(rows["fit"])
        frames.update(chart)
    phase_entries, phase_rows = phase_profile(runs, phase_energy, config, level)
    entries += phase_entries
    if phase_rows:
        frames["phases"] = rows_frame(phase_rows)
    return AnalysisResult(NAME, level, entries, frames, chart_only={"points", "band"})


def analyse(data: AnalysisData, options: AnalysisOptions) -> AnalysisResult:
    """The registry's entry point: configurations are always the full ones; --by splits the fits."""
    return energy(
        data.runs,
        data.phase_energy,
        config=default_config(data.runs),
        by=options.group_keys(data.runs),
        level=options.level,
    )
