"""energy: is a slower configuration also a hungrier one (pCAMP's Insight 3), and where does the
energy go (pCAMP's Figure 3)?

- correlation: across configurations (mean latency vs mean energy per inference), Pearson with
  its Fisher-z interval and Spearman with the Bonett–Wright one; per --by group (default all).
- fit: OLS energy_per_inference_j ~ latency_ms over runs, per device (or --by), with the
  coefficients' intervals from statsmodels and R².
- phases: per configuration and phase, mean energy and mean power with t intervals across runs.

Unmeasured energy is NULL (never 0) and is left out; a group without any says so.
"""

from __future__ import annotations

import numpy as np
import polars as pl

from edgestats.analysis.intervals import Estimate, correlation, finite_or_none, mean_t
from edgestats.analysis.result import AnalysisResult, estimate_row, iter_groups, not_enough_entry, rows_frame

NAME = "energy"
PHASES = ("import", "load_model", "first_inference", "steady", "total")
BASELINE_LEVEL = 0.95  # the views' energy intervals are 95 % ones


def configuration_means(runs: pl.DataFrame, config: list[str]) -> pl.DataFrame:
    """Mean latency and energy per inference of each configuration with energy measured."""
    return (runs.filter(pl.col("energy_per_inference_j").is_not_null() & pl.col("latency_median_ms").is_not_null())
            .group_by(config, maintain_order=True)
            .agg(pl.col("latency_median_ms").mean().alias("latency_ms"),
                 pl.col("energy_per_inference_j").mean(), pl.len().alias("n_runs")))


def correlations(runs: pl.DataFrame, config: list[str], by: list[str], level: float) -> tuple[list, list]:
    entries, rows = [], []
    points = configuration_means(runs, list(dict.fromkeys([*by, *config])))
    for group, sub in iter_groups(points, by):
        x, y = sub["latency_ms"].to_numpy(), sub["energy_per_inference_j"].to_numpy()
        results = [correlation(x, y, m, level=level) for m in ("pearson", "spearman")]
        entry = {"part": "correlation", "group": group, "n": sub.height, "n_unit": "configurations", "level": level,
                 "x": "latency_ms", "y": "energy_per_inference_j", **{r.method: r.as_dict() for r in results}}
        entries.append(entry)
        rows += [estimate_row(group, r.estimate, part="correlation", method=r.method, p_value=finite_or_none(r.p_value))
                 for r in results]
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
    terms = [{"term": name, "estimate": float(model.params[i]), "ci_low": float(ci[i][0]), "ci_high": float(ci[i][1]),
              "p_value": finite_or_none(model.pvalues[i])} for i, name in enumerate(names)]
    r2 = finite_or_none(model.rsquared)
    return {"terms": terms, "r_squared": r2,
            **({} if r2 is not None else {"note": "every run has the same energy: R² is undefined"})}


def fits(runs: pl.DataFrame, by: list[str], level: float) -> tuple[list, list]:
    entries, rows = [], []
    points = runs.filter(pl.col("energy_per_inference_j").is_not_null() & pl.col("latency_median_ms").is_not_null())
    for group, sub in iter_groups(points, by):
        fit = ols_fit(sub["latency_median_ms"].to_numpy().astype(float), sub["energy_per_inference_j"].to_numpy().astype(float), level)
        entries.append({"part": "fit", "group": group, "n": sub.height, "n_unit": "runs", "level": level,
                        "model": "energy_per_inference_j ~ latency_ms", **fit})
        for term in fit.get("terms", []):
            rows.append({**group, "part": "fit", **term, "level": level, "n": sub.height, "r_squared": fit["r_squared"]})
    return entries, rows


def single_run_interval(one: pl.DataFrame, level: float) -> Estimate | None:
    """For one run, the view's interval: it carries the idle baseline's uncertainty (a 95 %
    t interval of the idle mean), not run-to-run spread; only used at level 0.95."""
    if one.height != 1 or abs(level - BASELINE_LEVEL) > 1e-9 or "energy_ci_low_j" not in one.columns:
        return None
    row = one.row(0, named=True)
    if row["energy_ci_low_j"] is None or row["energy_ci_high_j"] is None:
        return None
    return Estimate(row["energy_j"], min(row["energy_ci_low_j"], row["energy_ci_high_j"]),
                    max(row["energy_ci_low_j"], row["energy_ci_high_j"]), level, 1, "runs", "idle-baseline interval",
                    "one run: the interval is the idle baseline's uncertainty, not run-to-run spread")


def phase_profile(runs: pl.DataFrame, phase_energy: pl.DataFrame | None, config: list[str], level: float) -> tuple[list, list]:
    if phase_energy is None or phase_energy.height == 0:
        return [], []
    joined = runs.select("run_idx", *config).join(phase_energy.filter(pl.col("phase").is_in(PHASES)), on="run_idx")
    entries, rows = [], []
    for group, sub in iter_groups(joined, config):
        measured = sub.filter(pl.col("energy_j").is_not_null())
        if measured.height == 0:
            reasons = sorted({r for r in sub["energy_unavailable_reason"].to_list() if r})
            entries.append(not_enough_entry("energy was not measured for these runs" + (f" ({'; '.join(reasons)})" if reasons else ""),
                                            group=group, n=sub["run_idx"].n_unique(), level=level, part="phases"))
            continue
        phase_list = []
        for phase in PHASES:
            one = measured.filter(pl.col("phase") == phase)
            if one.height == 0:
                continue
            energy = single_run_interval(one, level) or mean_t(one["energy_j"].to_numpy(), level)
            power_values = one["mean_power_w"].to_numpy().astype(float)
            if not np.isfinite(power_values).any():
                power_values = (one["energy_j"] / one["duration_s"]).to_numpy()
            power = mean_t(power_values, level)
            phase_list.append({"phase": phase, "energy_j": energy.as_dict(), "mean_power_w": power.as_dict(),
                               "sources": sorted({s for s in one["source"].to_list() if s})})
            rows.append(estimate_row(group, energy, part="phases", phase=phase, quantity="energy_j"))
            rows.append(estimate_row(group, power, part="phases", phase=phase, quantity="mean_power_w"))
        entries.append({"part": "phases", "group": group, "n": measured["run_idx"].n_unique(),
                        "n_unit": "runs", "level": level, "phases": phase_list})
    return entries, rows


def energy(runs: pl.DataFrame, phase_energy: pl.DataFrame | None, *, config: list[str], by: list[str],
           level: float = 0.95) -> AnalysisResult:
    has_energy = runs["energy_per_inference_j"].is_not_null().any()
    has_phase_energy = phase_energy is not None and phase_energy["energy_j"].is_not_null().any()
    if not has_energy and not has_phase_energy:
        return AnalysisResult(NAME, level, [not_enough_entry(
            "no selected run has energy measured (collect with a power source, e.g. --power rapl, or import energy_j)",
            n=runs.height, level=level)])
    entries, frames = [], {}
    if has_energy:
        corr_entries, corr_rows = correlations(runs, config, by, level)
        fit_by = by or (["device"] if "device" in runs.columns else [])
        fit_entries, fit_rows = fits(runs, fit_by, level)
        entries += corr_entries + fit_entries
        frames["correlation"] = rows_frame(corr_rows)
        frames["fit"] = rows_frame(fit_rows)
        points = runs.filter(pl.col("energy_per_inference_j").is_not_null())
        frames["points"] = points.select(*[c for c in dict.fromkeys([*config, *fit_by])], "run_idx",
                                         "latency_median_ms", "energy_per_inference_j")
    phase_entries, phase_rows = phase_profile(runs, phase_energy, config, level)
    entries += phase_entries
    if phase_rows:
        frames["phases"] = rows_frame(phase_rows)
    return AnalysisResult(NAME, level, entries, frames)
