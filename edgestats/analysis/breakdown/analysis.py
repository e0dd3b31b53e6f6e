"""breakdown: where a run's time goes, and whether loading the model costs more than running it, by
how much. The phases are import, model load, first inference and steady inference; loading against
running is pCAMP's Insight 1.

Per run, phase seconds come from the `phases` rows (pCAMP's Table 3 profile). Imported runs
have only load_time_s / total_time_s / latency_ms: their steady time is latency × iterations
when iterations is known. Per configuration: the mean seconds of each phase with a t interval
across runs on the log scale (edgestats.analysis.estimators.bounded: a time's interval stays above 0), its
share of the mean total, and the ratio load_model / steady (ratio of means
over runs, paired: a bootstrap from 10 runs, the log-scale delta-method t below;
edgestats.analysis.estimators.ratios)
with its interval.
"""

from __future__ import annotations

import polars as pl

from edgestats.analysis.core.options import AnalysisOptions
from edgestats.analysis.core.result import (
    AnalysisResult,
    estimate_row,
    group_label,
    iter_groups,
    not_enough_entry,
    rows_frame,
    unavailable,
)
from edgestats.analysis.estimators.bounded import positive_mean
from edgestats.analysis.estimators.intervals import BootstrapSettings, Estimate
from edgestats.analysis.estimators.ratios import paired_ratio_of_means
from edgestats.analysis.load.frames import AnalysisData, default_config

NAME = "breakdown"
# compile: only runtimes that compile on the first call (torch.compile) have it; for the others it
# is NULL in every run and left out of their entries, as a phase no run has.
PHASES = ("import", "load_model", "compile", "first_inference", "steady")
# Everything else in `total`: loading inputs, the second inference, warm-up, process start.
OTHER = "other"


def phase_seconds(runs: pl.DataFrame, phases: pl.DataFrame | None) -> pl.DataFrame:
    """One row per run: run_idx, import_s, load_model_s, compile_s, first_inference_s, steady_s,
    total_s, per_inference_s, from phase rows where there are any, else from imported figures."""
    base = runs.select(
        "run_idx",
        pl.col("load_time_s").alias("reported_load_s"),
        pl.col("total_time_s").alias("reported_total_s"),
        (pl.col("latency_median_ms") / 1000.0).alias("per_inference_s"),
        pl.col("iterations"),
    )
    wanted = [*PHASES, "total"]
    if phases is not None and phases.height:
        # one row per run and phase already (phases_sql sums a phase recorded twice); "first", not
        # "sum", so a phase a run does not have is NULL, not 0 s (a sum of nothing)
        wide = phases.filter(pl.col("phase").is_in(wanted)).pivot(
            on="phase", index="run_idx", values="duration_s", aggregate_function="first"
        )
        known = (
            phases.filter(pl.col("phase") != "total")
            .group_by("run_idx")
            .agg(pl.col("duration_s").sum().alias("phases_sum_s"))
        )
        base = base.join(wide, on="run_idx", how="left").join(known, on="run_idx", how="left")
    for phase in wanted:
        if phase not in base.columns:
            base = base.with_columns(pl.lit(None, pl.Float64).alias(phase))
    if "phases_sum_s" not in base.columns:
        base = base.with_columns(pl.lit(None, pl.Float64).alias("phases_sum_s"))
    imported_steady = pl.when(pl.col("iterations") > 0).then(pl.col("per_inference_s") * pl.col("iterations"))
    return base.select(
        "run_idx",
        pl.col("import").alias("import_s"),
        pl.coalesce("load_model", "reported_load_s").alias("load_model_s"),
        pl.col("compile").alias("compile_s"),
        pl.col("first_inference").alias("first_inference_s"),
        pl.coalesce("steady", imported_steady).alias("steady_s"),
        pl.coalesce("total", "phases_sum_s", "reported_total_s").alias("total_s"),
        "per_inference_s",
    )


def _flag(ratio) -> dict:
    """Does loading cost more than the steady run? `confident` when the whole interval is > 1."""
    if ratio.estimate is None:
        return {"load_exceeds_steady": None, "confident": None}
    return {
        "load_exceeds_steady": ratio.estimate > 1.0,
        "confident": (ratio.ci_low > 1.0 or ratio.ci_high < 1.0) if ratio.has_interval else False,
    }


def _phase_means(
    sub: pl.DataFrame, total: Estimate, level: float
) -> list[tuple[str, Estimate, float | None]]:
    """(phase, mean seconds, share of the mean total) of each phase these runs have, `other` (the
    total less the known phases) included where the total is known."""
    out = []
    known_sum = sub.select(pl.sum_horizontal([f"{p}_s" for p in PHASES])).to_series()
    other = (sub["total_s"] - known_sum).to_numpy() if total.estimate is not None else None
    for phase in (*PHASES, OTHER):
        values = other if phase == OTHER else sub[f"{phase}_s"].to_numpy()
        if values is None:
            continue
        estimate = positive_mean(values, level)
        if estimate.estimate is None:
            continue
        share = estimate.estimate / total.estimate if total.estimate else None
        out.append((phase, estimate, share))
    return out


def _load_over(
    sub: pl.DataFrame, column: str, level: float, settings: BootstrapSettings, label: str
) -> Estimate:
    """load_model over `column` (a ratio of means over the runs, paired;
    edgestats.analysis.estimators.ratios)."""
    return paired_ratio_of_means(
        sub["load_model_s"].to_numpy(),
        sub[column].to_numpy(),
        level=level,
        settings=settings,
        label=label,
    )


def breakdown(
    runs: pl.DataFrame,
    phases: pl.DataFrame | None,
    *,
    by: list[str],
    level: float = 0.95,
    settings: BootstrapSettings | None = None,
) -> AnalysisResult:
    settings = settings or BootstrapSettings()
    seconds = phase_seconds(runs, phases)
    usable = seconds.filter(pl.col("load_model_s").is_not_null() | pl.col("total_s").is_not_null())
    if usable.height == 0:
        return unavailable(
            NAME, level, "no selected run has phase times or a reported load time", n=runs.height
        )
    joined = runs.select("run_idx", *by).join(usable, on="run_idx", how="inner")
    entries, phase_rows, ratio_rows = [], [], []
    for group, sub in iter_groups(joined, by):
        label = group_label(NAME, group)
        total = positive_mean(sub["total_s"].to_numpy(), level)
        phase_list = []
        for phase, estimate, share in _phase_means(sub, total, level):
            phase_list.append({"phase": phase, **estimate.as_dict(), "share_of_total": share})
            phase_rows.append(estimate_row(group, estimate, phase=phase, share_of_total=share))
        ratio = _load_over(sub, "steady_s", level, settings, f"{label}|steady")
        per_inference = _load_over(sub, "per_inference_s", level, settings, f"{label}|per-inference")
        if ratio.estimate is None and per_inference.estimate is None and not phase_list:
            entries.append(
                not_enough_entry(
                    "no load_model or steady time in these runs", group=group, n=sub.height, level=level
                )
            )
            continue
        entry = {
            "group": group,
            "n": sub.height,
            "n_unit": "runs",
            "level": level,
            "total_s": total.as_dict(),
            "phases": phase_list,
            "load_over_steady": ratio.as_dict(),
            "load_over_one_inference": per_inference.as_dict(),
            **_flag(ratio),
        }
        entries.append(entry)
        ratio_rows.append(estimate_row(group, ratio, ratio="load_model / steady", **_flag(ratio)))
        ratio_rows.append(estimate_row(group, per_inference, ratio="load_model / one inference"))
    return AnalysisResult(
        NAME, level, entries, {"phases": rows_frame(phase_rows), "ratios": rows_frame(ratio_rows)}
    )


def analyse(data: AnalysisData, options: AnalysisOptions) -> AnalysisResult:
    """The registry's entry point: per --by group, or per configuration."""
    config = options.group_keys(data.runs) or default_config(data.runs)
    return breakdown(data.runs, data.phases, by=config, level=options.level, settings=options.settings)
