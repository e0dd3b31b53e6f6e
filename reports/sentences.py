"""One plain sentence per analysis: what its figures show, in numbers, with an interval.

Written from the result frames, so the sentence always agrees with the table under it. A
result the data cannot support says why instead.
"""

from __future__ import annotations

from typing import Any, Callable

import polars as pl

from edgestats.reports.tables import format_interval, format_number

GROUP_EXCLUDE = {"metric", "n_runs", "estimate", "ci_low", "ci_high", "level", "n", "n_unit", "method", "note",
                 "phase", "share_of_total", "ratio", "load_exceeds_steady", "confident", "part", "quantity"}


def _pct(level: float) -> str:
    return f"{level * 100:g} %"


def _label(row: dict[str, Any], frame: pl.DataFrame) -> str:
    """The values of the columns that vary in the frame (falls back to all group columns)."""
    keys = [c for c in frame.columns if c not in GROUP_EXCLUDE and frame.schema[c] in (pl.String, pl.Int64, pl.Int32)]
    varying = [c for c in keys if frame[c].n_unique() > 1] or keys
    return " / ".join(str(row[c]) for c in varying if row.get(c) is not None) or "all runs"


def unavailable_sentence(result: Any) -> str:
    reasons = [e["reason"] for e in result.entries if "reason" in e]
    return (reasons[0][0].upper() + reasons[0][1:] + ".") if reasons else "This analysis has nothing to show for this DB."


def summary_sentence(result: Any) -> str:
    frame = result.frames.get("metrics")
    medians = frame.filter((pl.col("metric") == "latency_median_ms") & pl.col("estimate").is_not_null()).sort("estimate")
    if medians.height == 0:
        return "No configuration has a latency."
    fast, slow = medians.row(0, named=True), medians.row(-1, named=True)
    text = (f"Median steady-state latency of {_label(fast, medians)} is "
            f"{format_interval(fast['estimate'], fast['ci_low'], fast['ci_high'])} ms ({_pct(fast['level'])} interval)")
    if medians.height > 1:
        text += (f", the fastest of {medians.height} configurations; the slowest, {_label(slow, medians)}, takes "
                 f"{format_interval(slow['estimate'], slow['ci_low'], slow['ci_high'])} ms, "
                 f"{format_number(slow['estimate'] / fast['estimate'])}× as long")
    return text + "."


def breakdown_sentence(result: Any) -> str:
    ratios = result.frames.get("ratios")
    if ratios is None or ratios.height == 0:
        return "Phase times per configuration, with intervals across runs."
    steady = ratios.filter((pl.col("ratio") == "load_model / steady") & pl.col("estimate").is_not_null())
    if steady.height == 0:
        one = ratios.filter(pl.col("estimate").is_not_null()).sort("estimate")
        if one.height == 0:
            return "Phase times per configuration, with intervals across runs."
        row = one.row(-1, named=True)
        return (f"Loading the model takes as long as {format_interval(row['estimate'], row['ci_low'], row['ci_high'])} "
                f"single inferences ({_label(row, one)}, {_pct(row['level'])} interval).")
    exceeds = steady.filter(pl.col("estimate") > 1)
    confident = steady.filter(pl.col("ci_low").is_not_null() & (pl.col("ci_low") > 1))
    top = steady.sort("estimate").row(-1, named=True)
    return (f"Loading the model costs more than the whole steady-state run in {exceeds.height} of {steady.height} "
            f"configurations ({confident.height} with the whole {_pct(top['level'])} interval above 1); the largest ratio, "
            f"{_label(top, steady)}, is {format_interval(top['estimate'], top['ci_low'], top['ci_high'])}.")


def energy_sentence(result: Any) -> str:
    corr = result.frames.get("correlation")
    if corr is not None and corr.height:
        pearson = corr.filter(pl.col("method") == "pearson")
        if pearson.height and pearson["estimate"][0] is not None:
            row = pearson.row(0, named=True)
            return (f"Across {row['n']} configurations, energy per inference and latency correlate with Pearson's "
                    f"r = {format_interval(row['estimate'], row['ci_low'], row['ci_high'])} ({_pct(row['level'])} interval): "
                    "a configuration that is slower is " + ("also hungrier." if (row["ci_low"] or 0) > 0 else
                                                            "not reliably hungrier."))
    return "Energy per phase and per inference, with intervals, where a power source measured it."


def tradeoff_sentence(result: Any) -> str:
    pareto = result.frames.get("pareto")
    text = ""
    if pareto is not None and pareto.height:
        text = (f"{int(pareto['pareto'].sum())} of {pareto.height} configurations are on the memory–latency Pareto front "
                "(no other is both faster and smaller)")
    winners_entries = [e for e in result.entries if e.get("part") == "winners" and "metrics" in e]
    if winners_entries:
        single = sum(1 for e in winners_entries if e.get("single_winner"))
        text += ("; " if text else "") + (f"a single candidate is significantly best on every metric in {single} of "
                                          f"{len(winners_entries)} comparisons (Holm-corrected)")
    return (text[0].upper() + text[1:] + ".") if text else "Memory against latency per configuration."


def hyperparams_sentence(result: Any) -> str:
    terms = result.frames.get("terms")
    if terms is None or terms.height == 0:
        return "Mean response at each level of each hyperparameter, with intervals."
    fitted = terms.filter((pl.col("term") != "intercept") & pl.col("estimate").is_not_null())
    if fitted.height == 0:
        return "Mean response at each level of each hyperparameter, with intervals."
    parts = []
    for response, sub in fitted.group_by("response", maintain_order=True):
        row = sub.sort("p_value", nulls_last=True).row(0, named=True)
        r2 = f", R² = {format_number(row['r_squared'])}" if row.get("r_squared") is not None else ""
        parts.append(f"{response[0]} depends most clearly on {row['term']} (coefficient "
                     f"{format_interval(row['estimate'], row['ci_low'], row['ci_high'])}{r2})")
    return "In the fitted models, " + "; ".join(parts) + "."


def pipeline_sentence(result: Any) -> str:
    reductions = result.frames.get("reductions")
    if reductions is not None and reductions.height:
        stall = reductions.filter((pl.col("metric") == "stall_s") & pl.col("estimate").is_not_null())
        if stall.height:
            row = stall.row(0, named=True)
            return (f"Going from {row['from_workers']} to {row['to_workers']} data-loading workers cuts the median fetch stall "
                    f"by a factor of {format_interval(row['estimate'], row['ci_low'], row['ci_high'])} "
                    f"({_label(row, stall)}, {_pct(row['level'])} interval).")
    resources = result.frames.get("resources")
    if resources is not None and resources.height:
        row = resources.filter(pl.col("estimate").is_not_null()).sort("estimate").row(-1, named=True)
        return (f"{row['y']} rises with batch size with Spearman's ρ = "
                f"{format_interval(row['estimate'], row['ci_low'], row['ci_high'])} ({_pct(row['level'])} interval).")
    return "Fetch stalls against workers and storage, and resource use against batch size."


SENTENCES: dict[str, Callable[[Any], str]] = {
    "summary": summary_sentence, "breakdown": breakdown_sentence, "energy": energy_sentence,
    "tradeoff": tradeoff_sentence, "hyperparams": hyperparams_sentence, "pipeline": pipeline_sentence,
}
