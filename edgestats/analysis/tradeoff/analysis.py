"""tradeoff: memory against latency (pCAMP's Insight 2) and "no single winner" made precise.

- pareto: per device, each configuration's median latency and mean peak RSS with their
  intervals (as summary gives them), and which configurations no other one beats on both (on
  the estimates: the intervals show how firm each point's place is).
- winners: per stratum (default device × model × batch size: only like is compared with like),
  for every metric the best candidate and the runner-up, a candidate being one configuration
  (framework/runtime, and threads or precision where they vary inside the stratum), a two-sided
  Mann–Whitney U test between them (rank-based: latencies are skewed), Holm-corrected across
  every test in the table, with the probability of superiority and the runner-up's estimate over
  the best's as effect sizes. A stratum has a single winner only when one candidate is
  significantly best on every metric measured.

Every metric is tested with the run as unit: latency by each run's median latency (latencies
within one run share its process and are not independent: pooling them declared winners that a
re-run would not confirm), the others by their per-run figures. Every estimate and interval, in
the points and the winners alike, is the one summary gives the same runs (the same functions,
seeded alike): the median latency run-level on the log scale (Stein's interval after `collect
--until-precise`), memory and energy means and throughput with log-scale intervals; none leaves
the positive range, and none bootstraps a handful of run figures.
"""

from __future__ import annotations

import numpy as np
import polars as pl
from scipy import stats

from edgestats.analysis.core.options import AnalysisOptions
from edgestats.analysis.core.result import (
    AnalysisResult,
    group_label,
    iter_groups,
    not_enough_entry,
    rows_frame,
)
from edgestats.analysis.estimators.intervals import BootstrapSettings, finite_or_none
from edgestats.analysis.estimators.multiplicity import holm
from edgestats.analysis.load.frames import AnalysisData, LatencyIndex, default_config, present_columns
from edgestats.analysis.tradeoff.points import pareto_points, summary_estimate, summary_label

NAME = "tradeoff"
# metric -> True when lower is better
METRICS = {
    "latency_median_ms": True,
    "rss_peak_bytes": True,
    "energy_per_inference_j": True,
    "throughput_per_s": False,
}
CANDIDATE_COLUMNS = ("framework", "runtime")
# Keys whose values are compared as like with like when naming a winner (unless --by says otherwise).
STRATA = ("device", "model", "batch_size")


def _values(sub: pl.DataFrame, metric: str) -> np.ndarray:
    """The per-run figures of a metric (a run's median latency for latency): the test's units."""
    values = sub[metric].to_numpy().astype(float)
    return values[np.isfinite(values)]


def compare_metric(
    stratum: pl.DataFrame,
    metric: str,
    lower_is_better: bool,
    candidates: list[str],
    index: LatencyIndex,
    *,
    config: list[str],
    level: float,
    settings: BootstrapSettings,
    label: str,
) -> dict | None:
    """Best vs runner-up on one metric in one stratum; None when fewer than two candidates have it."""
    scored = _scored(
        stratum, metric, candidates, index, config=config, level=level, settings=settings, label=label
    )
    if len(scored) < 2:
        return None
    scored.sort(key=lambda item: item[0] if lower_is_better else -item[0])
    (best_figure, best, best_values, best_centre), (runner_figure, runner, runner_values, runner_centre) = (
        scored[:2]
    )
    result = {
        "metric": metric,
        "direction": "lower" if lower_is_better else "higher",
        "n_unit": "runs",
        "candidates": len(scored),
        "test": "mann-whitney-u (two-sided)",
    }
    for key, candidate, estimate in (("best", best, best_centre), ("runner_up", runner, runner_centre)):
        result[key] = {"candidate": candidate, **estimate.as_dict()}
    with np.errstate(divide="ignore", invalid="ignore"):
        result["runner_up_over_best"] = finite_or_none(runner_figure / best_figure) if best_figure else None
    result.update(_rank_test(best_values, runner_values, lower_is_better))
    return result


def _scored(
    stratum: pl.DataFrame,
    metric: str,
    candidates: list[str],
    index: LatencyIndex,
    *,
    config: list[str],
    level: float,
    settings: BootstrapSettings,
    label: str,
) -> list[tuple]:
    """(estimate, candidate, per-run values, Estimate) of each candidate measured on the metric: the
    estimate and interval summary gives the candidate's runs (seeded as summary seeds them where
    the candidate is one configuration), the per-run values for the rank test."""
    scored = []
    for candidate, sub in iter_groups(stratum, candidates):
        values = _values(sub, metric)
        if len(values) == 0:
            continue
        seed_label = summary_label(sub, config) or f"{label}|{_text(candidate)}"
        centre = summary_estimate(sub, metric, index, level=level, settings=settings, label=seed_label)
        if centre.estimate is not None:
            scored.append((centre.estimate, candidate, values, centre))
    return scored


def _rank_test(best_values: np.ndarray, runner_values: np.ndarray, lower_is_better: bool) -> dict:
    """The Mann–Whitney U test of best against runner-up: its p-value and the probability of
    superiority, or a note where a side has fewer than 2 runs."""
    if len(best_values) < 2 or len(runner_values) < 2:
        return {
            "p_value": None,
            "prob_superiority": None,
            "note": f"not enough data for a test: {len(best_values)} vs {len(runner_values)} runs "
            "(each side needs at least 2)",
        }
    test = stats.mannwhitneyu(best_values, runner_values, alternative="two-sided")
    # U counts pairs where the first sample is larger: the best is "better" in the other direction.
    u_better = len(best_values) * len(runner_values) - test.statistic if lower_is_better else test.statistic
    return {
        "p_value": finite_or_none(test.pvalue),
        "prob_superiority": float(u_better / (len(best_values) * len(runner_values))),
    }


def holm_adjust(entries: list[dict], alpha: float) -> None:
    """Holm's step-down correction across every test in the table (in place)."""
    tests = [m for e in entries for m in e.get("metrics", []) if m.get("p_value") is not None]
    if not tests:
        return
    for metric, p_holm in zip(tests, holm([m["p_value"] for m in tests])):
        metric["p_holm"] = float(p_holm)
        metric["significant"] = bool(p_holm <= alpha)


def single_winner(metrics: list[dict]) -> dict | None:
    """The candidate that is significantly best on every metric compared, if there is one."""
    if not metrics or not all(m.get("significant") for m in metrics):
        return None
    winners = {tuple(sorted(m["best"]["candidate"].items())) for m in metrics}
    return dict(next(iter(winners))) if len(winners) == 1 else None


def tradeoff(
    runs: pl.DataFrame,
    latencies: pl.DataFrame | None,
    *,
    config: list[str],
    strata: list[str],
    level: float = 0.95,
    settings: BootstrapSettings | None = None,
) -> AnalysisResult:
    settings = settings or BootstrapSettings()
    index = LatencyIndex(latencies)
    candidates = candidate_columns(runs, config, strata)
    measured = runs.filter(pl.col("latency_median_ms").is_not_null() | pl.col("rss_peak_bytes").is_not_null())
    if measured.height == 0 or not candidates:
        why = (
            "no selected run has latency or memory"
            if measured.height == 0
            else "no framework/runtime to compare"
        )
        return AnalysisResult(NAME, level, [not_enough_entry(why, n=runs.height, level=level)])
    device = ["device"] if "device" in runs.columns else []
    points = pareto_points(measured, index, config, device, level=level, settings=settings)
    entries = _pareto_entries(points, device, level)
    winner_entries = [
        _winners_entry(stratum, group, candidates, index, config=config, level=level, settings=settings)
        for group, stratum in iter_groups(measured, strata)
    ]
    holm_adjust(winner_entries, 1 - level)
    rows = _settle_winners(winner_entries, level)
    entries += winner_entries
    frames = {"pareto": points, "winners": rows_frame(rows), "contenders": contender_rows(winner_entries)}
    return AnalysisResult(NAME, level, entries, frames, chart_only={"contenders"})


def candidate_columns(runs: pl.DataFrame, config: list[str], strata: list[str]) -> list[str]:
    """framework and runtime, and every other configuration column that varies inside a stratum
    (threads, precision ...): a candidate is then one configuration, whose figures are summary's."""
    named = [c for c in CANDIDATE_COLUMNS if c in runs.columns and runs[c].is_not_null().any()]
    others = [c for c in config if c in runs.columns and c not in (*CANDIDATE_COLUMNS, *strata)]
    present = [s for s in strata if s in runs.columns]
    if present and others:
        spread = runs.group_by(present).agg(pl.col(others).n_unique())
        others = [c for c in others if spread[c].max() > 1]
    else:
        others = [c for c in others if runs[c].n_unique() > 1]
    return [c for c in (*named, *others) if c not in strata]


def contender_rows(winner_entries: list[dict]) -> pl.DataFrame:
    """What the winners chart draws: one row per stratum, metric and side (best, runner-up), with
    the candidate's configuration columns, the stratum's name (the group values that differ
    between strata) and the candidate's estimate and interval (summary's)."""
    groups = [e["group"] for e in winner_entries if "metrics" in e]
    shown = [k for k in (groups[0] if groups else {}) if len({str(g.get(k)) for g in groups}) > 1]
    rows = [
        {
            **entry["group"],
            **metric[side]["candidate"],
            "stratum": _text({k: entry["group"][k] for k in shown or entry["group"]}),
            "metric": metric["metric"],
            "side": side,
            "candidate": _text(metric[side]["candidate"]),
            **{k: metric[side][k] for k in ("estimate", "ci_low", "ci_high", "level", "n", "n_unit", "note")},
            "p_holm": metric["p_holm"],
            "significant": metric["significant"],
        }
        for entry in winner_entries
        for metric in entry.get("metrics", [])
        for side in ("best", "runner_up")
    ]
    return rows_frame(rows)


def _pareto_entries(points: pl.DataFrame, device: list[str], level: float) -> list[dict]:
    """Per device, the configurations on the Pareto front."""
    entries: list[dict] = []
    for group, sub in iter_groups(points, device) if points.height else []:
        front = sub.filter(pl.col("pareto")).drop("pareto").to_dicts()
        entries.append(
            {
                "part": "pareto",
                "group": group,
                "n": sub.height,
                "n_unit": "configurations",
                "level": level,
                "x": "latency_median_ms",
                "y": "rss_peak_bytes",
                "pareto": front,
            }
        )
    return entries


def _winners_entry(
    stratum: pl.DataFrame,
    group: dict,
    candidates: list[str],
    index: LatencyIndex,
    *,
    config: list[str],
    level: float,
    settings: BootstrapSettings,
) -> dict:
    """One stratum's comparison of its best candidate with the runner-up on every metric, before Holm."""
    label = group_label(NAME, group)
    metrics = [
        m
        for metric, lower in METRICS.items()
        if metric in stratum.columns
        and (
            m := compare_metric(
                stratum,
                metric,
                lower,
                candidates,
                index,
                config=config,
                level=level,
                settings=settings,
                label=label,
            )
        )
    ]
    if not metrics:
        return not_enough_entry(
            "fewer than two candidates measured here",
            group=group,
            n=stratum.height,
            level=level,
            part="winners",
        )
    return {
        "part": "winners",
        "group": group,
        "n": stratum.height,
        "n_unit": "runs",
        "level": level,
        "candidate_keys": candidates,
        "metrics": metrics,
    }


def _settle_winners(winner_entries: list[dict], level: float) -> list[dict]:
    """After Holm: each metric's significance (None where there was no test), each stratum's single
    winner or the note that there is none; returns the rows of the `winners` frame."""
    rows = []
    for entry in winner_entries:
        if "metrics" not in entry:
            continue
        for metric in entry["metrics"]:
            metric.setdefault("p_holm", None)
            metric.setdefault("significant", False if metric.get("p_value") is not None else None)
            rows.append(_winner_row(entry["group"], metric, level))
        winner = single_winner(entry["metrics"])
        entry["single_winner"] = winner
        if winner is None:
            entry["note"] = "no single winner: no candidate is significantly best on every metric"
    return rows


def _winner_row(group: dict, metric: dict, level: float) -> dict:
    return {
        **group,
        "metric": metric["metric"],
        "best": _text(metric["best"]["candidate"]),
        "runner_up": _text(metric["runner_up"]["candidate"]),
        "estimate": metric["best"]["estimate"],
        "ci_low": metric["best"]["ci_low"],
        "ci_high": metric["best"]["ci_high"],
        "runner_up_estimate": metric["runner_up"]["estimate"],
        "runner_up_over_best": metric["runner_up_over_best"],
        "p_value": metric["p_value"],
        "p_holm": metric["p_holm"],
        "significant": metric["significant"],
        "level": level,
        "n": metric["best"]["n"],
        "n_runner_up": metric["runner_up"]["n"],
        "n_unit": metric["n_unit"],
    }


def _text(candidate: dict) -> str:
    """A candidate's (or stratum's) name: its values, missing ones (an imported run has no runtime)
    and repeats (tflite's runtime is tflite) left out; a number says what it counts (threads 4)."""
    named = ("device", "framework", "runtime", "model")
    parts = (str(v) if k in named else f"{k} {v}" for k, v in candidate.items() if v is not None)
    return " / ".join(dict.fromkeys(parts)) or "all"


def analyse(data: AnalysisData, options: AnalysisOptions) -> AnalysisResult:
    """The registry's entry point: candidates are full configurations, compared within --by strata."""
    runs = data.runs
    return tradeoff(
        runs,
        data.latencies,
        config=default_config(runs),
        strata=options.group_keys(runs) or present_columns(runs, STRATA),
        level=options.level,
        settings=options.settings,
    )
