"""energy: is a slower configuration also a hungrier one (pCAMP's Insight 3), and where does the
energy go (pCAMP's Figure 3)?

- correlation: across configurations (mean latency vs mean energy per inference), Pearson with
  its Fisher-z interval and Spearman with the Bonett–Wright one; per --by group (default all).
- fit: OLS energy_per_inference_j ~ latency_ms over runs, per device (or --by), with the
  coefficients' intervals from statsmodels and R².
- phases: per configuration and phase, mean energy and mean power with t intervals across runs,
  on the log scale where every value is ≥ 0 (edgestats.analysis.bounded), so they stay above 0;
  energy above idle that comes out below 0 somewhere is a difference and keeps the plain t.
- points and band: what the time-energy chart draws. points are the runs (or, above
  MAX_SCATTER_POINTS runs, each configuration's means, so a page stays small); band is the OLS
  line through those same points with the confidence band of its mean response, per fit group.

Unmeasured energy is NULL (never 0) and is left out; a group without any says so.
"""

from __future__ import annotations

import math

import numpy as np
import polars as pl

from edgestats.analysis.bounded import NEGATIVE_NOTE, clip_at_zero, log_mean_interval
from edgestats.analysis.correlations import correlation
from edgestats.analysis.intervals import Estimate, finite_or_none, t_interval
from edgestats.analysis.load import AnalysisData, default_config
from edgestats.analysis.options import AnalysisOptions
from edgestats.analysis.result import AnalysisResult, estimate_row, iter_groups, not_enough_entry, rows_frame

NAME = "energy"
PHASES = ("import", "load_model", "first_inference", "steady", "total")
BASELINE_LEVEL = 0.95  # the views' energy intervals are 95 % ones
MAX_SCATTER_POINTS = 2000  # above this, one point per configuration (its means) instead of per run
BAND_STEPS = 40  # grid points along latency of the fitted line and its band
BAND_SCHEMA = {"x": pl.Float64, "fit": pl.Float64, "band_low": pl.Float64, "band_high": pl.Float64}


def configuration_means(runs: pl.DataFrame, config: list[str]) -> pl.DataFrame:
    """Mean latency and energy per inference of each configuration with energy measured."""
    return (
        runs.filter(
            pl.col("energy_per_inference_j").is_not_null() & pl.col("latency_median_ms").is_not_null()
        )
        .group_by(config, maintain_order=True)
        .agg(
            pl.col("latency_median_ms").mean().alias("latency_ms"),
            pl.col("energy_per_inference_j").mean(),
            pl.len().alias("n_runs"),
        )
    )


def correlations(runs: pl.DataFrame, config: list[str], by: list[str], level: float) -> tuple[list, list]:
    entries, rows = [], []
    points = configuration_means(runs, list(dict.fromkeys([*by, *config])))
    for group, sub in iter_groups(points, by):
        x, y = sub["latency_ms"].to_numpy(), sub["energy_per_inference_j"].to_numpy()
        results = [correlation(x, y, m, level=level) for m in ("pearson", "spearman")]
        entry = {
            "part": "correlation",
            "group": group,
            "n": sub.height,
            "n_unit": "configurations",
            "level": level,
            "x": "latency_ms",
            "y": "energy_per_inference_j",
            **{r.method: r.as_dict() for r in results},
        }
        entries.append(entry)
        rows += [
            estimate_row(
                group, r.estimate, part="correlation", method=r.method, p_value=finite_or_none(r.p_value)
            )
            for r in results
        ]
    return entries, rows


def ols_fit(x: np.ndarray, y: np.ndarray, level: float) -> dict:
    """energy = intercept + slope · latency by OLS, with statsmodels' coefficient intervals."""
    import statsmodels.api as sm

    n = len(x)
    if n < 3:
        return {"reason": f"not enough data: {n} runs (a line with an interval needs at least 3)"}
    if np.all(x == x[0]):
        return {"reason": "not enough data: every run has the same latency, so no slope can be fitted"}
    model = sm.OLS(y, sm.add_constant(x)).fit()
    ci = model.conf_int(alpha=1 - level)
    names = ("intercept_j", "slope_j_per_ms")
    terms = [
        {
            "term": name,
            "estimate": float(model.params[i]),
            "ci_low": float(ci[i][0]),
            "ci_high": float(ci[i][1]),
            "p_value": finite_or_none(model.pvalues[i]),
        }
        for i, name in enumerate(names)
    ]
    r2 = finite_or_none(model.rsquared)
    return {
        "terms": terms,
        "r_squared": r2,
        **({} if r2 is not None else {"note": "every run has the same energy: R² is undefined"}),
    }


def fits(runs: pl.DataFrame, by: list[str], level: float) -> tuple[list, list]:
    entries, rows = [], []
    points = runs.filter(
        pl.col("energy_per_inference_j").is_not_null() & pl.col("latency_median_ms").is_not_null()
    )
    for group, sub in iter_groups(points, by):
        fit = ols_fit(
            sub["latency_median_ms"].to_numpy().astype(float),
            sub["energy_per_inference_j"].to_numpy().astype(float),
            level,
        )
        entries.append(
            {
                "part": "fit",
                "group": group,
                "n": sub.height,
                "n_unit": "runs",
                "level": level,
                "model": "energy_per_inference_j ~ latency_ms",
                **fit,
            }
        )
        for term in fit.get("terms", []):
            rows.append(
                {
                    **group,
                    "part": "fit",
                    **term,
                    "level": level,
                    "n": sub.height,
                    "r_squared": fit["r_squared"],
                }
            )
    return entries, rows


def ols_band(x: np.ndarray, y: np.ndarray, level: float, steps: int = BAND_STEPS) -> pl.DataFrame:
    """The OLS line y = a + b·x on a grid over x's range, with the confidence band of the mean
    response: ŷ ± t·s·sqrt(1/n + (x − x̄)² / Sxx). Empty when no line can be fitted (n < 3 or x
    constant), so a chart then shows the points alone."""
    from scipy import stats

    n = len(x)
    sxx = float(((x - x.mean()) ** 2).sum()) if n else 0.0
    if n < 3 or sxx == 0:
        return pl.DataFrame(schema=BAND_SCHEMA)
    slope = float(((x - x.mean()) * (y - y.mean())).sum()) / sxx
    intercept = float(y.mean()) - slope * float(x.mean())
    residual_sd = math.sqrt(float(((y - intercept - slope * x) ** 2).sum()) / (n - 2))
    t = float(stats.t.ppf(0.5 + level / 2, n - 2))
    grid = np.linspace(float(x.min()), float(x.max()), steps)
    fit = intercept + slope * grid
    half = t * residual_sd * np.sqrt(1.0 / n + (grid - x.mean()) ** 2 / sxx)
    return pl.DataFrame({"x": grid, "fit": fit, "band_low": fit - half, "band_high": fit + half})


def scatter_points(runs: pl.DataFrame, keys: list[str]) -> pl.DataFrame:
    """The points of the time-energy chart: one per run with both figures measured, or one per
    configuration (`keys`) with its means when there are too many runs to draw; n_runs says which."""
    measured = runs.filter(
        pl.col("energy_per_inference_j").is_not_null() & pl.col("latency_median_ms").is_not_null()
    )
    points = measured.select(*keys, "run_idx", "latency_median_ms", "energy_per_inference_j")
    if points.height <= MAX_SCATTER_POINTS:
        return points.with_columns(pl.lit(1).alias("n_runs"))
    return points.group_by(keys, maintain_order=True).agg(
        pl.col("latency_median_ms").mean(), pl.col("energy_per_inference_j").mean(), pl.len().alias("n_runs")
    )


def fit_bands(points: pl.DataFrame, fit_by: list[str], level: float) -> pl.DataFrame:
    """Per fit group, the OLS band (`ols_band`) through exactly the points the chart draws, with
    the group's keys and the level; groups where no line can be fitted have no rows."""
    bands = []
    for _, sub in points.group_by(fit_by, maintain_order=True) if fit_by else [((), points)]:
        band = ols_band(
            sub["latency_median_ms"].to_numpy().astype(float),
            sub["energy_per_inference_j"].to_numpy().astype(float),
            level,
        )
        bands.append(
            band.with_columns(*(pl.lit(sub[k][0]).alias(k) for k in fit_by), pl.lit(level).alias("level"))
        )
    if not bands:
        return pl.DataFrame(
            schema={**BAND_SCHEMA, **{k: points.schema[k] for k in fit_by}, "level": pl.Float64}
        )
    return pl.concat(bands, how="diagonal_relaxed")


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
        corr_entries, corr_rows = correlations(runs, config, by, level)
        fit_by = by or (["device"] if "device" in runs.columns else [])
        fit_entries, fit_rows = fits(runs, fit_by, level)
        entries += corr_entries + fit_entries
        frames["correlation"] = rows_frame(corr_rows)
        frames["fit"] = rows_frame(fit_rows)
        frames["points"] = scatter_points(runs, list(dict.fromkeys([*config, *fit_by])))
        frames["band"] = fit_bands(frames["points"], fit_by, level)
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
