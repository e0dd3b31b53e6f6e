"""answers: per comparable group, which candidate is fastest, by how much the others are slower, and
how sure that is. The same is asked of one model and candidate across devices (docs/cli/analyze.md,
"answers").

A group is one value of the group keys (default device × model × batch size × precision, those
present; `--answer-by`), a candidate one value of the candidate keys inside it (default the other
configuration keys: framework, runtime, threads; `--answer-across`). The metric is the median
latency with the run as unit, the very estimate summary reports (edgestats.analysis.summary.analysis's
`median_estimate`: the geometric mean of the runs' medians with its log-scale t interval, seeded
as summary seeds it), so a candidate has one figure in both. The fastest is the candidate with the
lowest estimate; every other candidate's ratio to it ("times as long", >= 1 as an estimate) comes
from Welch's t on the log run medians (Welch 1947), its p-value is Holm-adjusted over every pair of
the group's candidates (Holm 1979; the fastest is picked from the same runs), and a verdict says it
in words (edgestats.analysis.answers.stats: slower, no detectable difference within ±X %, or
inconclusive with the runs that would resolve ±5 %, Kalibera & Jones 2013). Across devices: for
each model and candidate (and the other group keys) measured on more than one device, each device's
ratio to the fastest device, the same way.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl

from edgestats.analysis.answers import stats as st
from edgestats.analysis.answers.text import (
    candidate_label,
    group_text,
    label_keys,
    ratio_words,
    sentence_across,
    sentence_within,
)
from edgestats.analysis.core.options import AnalysisOptions
from edgestats.analysis.core.result import AnalysisResult, group_label, iter_groups, rows_frame, unavailable
from edgestats.analysis.estimators.hierarchical import per_run_quantiles, usable_runs
from edgestats.analysis.estimators.intervals import BootstrapSettings, Estimate
from edgestats.analysis.load.frames import AnalysisData, LatencyIndex, default_config, present_columns
from edgestats.analysis.summary.analysis import MEDIAN, median_estimate, run_latencies
from edgestats.analysis.tradeoff.points import summary_label

NAME = "answers"
# Generation runs (docs/generation.md) also keep their token counts in the group: the median latency
# of a generation run is its median inter-token latency, which the prompt and depth change, so the
# candidates are runtimes at the same prompt, new tokens and depth ("which decodes fastest").
METHOD = (
    "welch t on the log scale of run medians, each vs the fastest (chosen from the same runs); "
    "holm over all pairs in the group"
)
DEFAULT_BY = ("device", "model", "batch_size", "precision", "prompt_tokens", "new_tokens", "context_depth")


@dataclass
class Member:
    """One candidate of a comparison: its name, key values, summary's estimate, its run medians."""

    name: str
    keys: dict
    estimate: Estimate
    medians: np.ndarray


def answer_keys(runs: pl.DataFrame, options: AnalysisOptions) -> tuple[list[str], list[str]]:
    """The group keys and the candidate keys: as given, else each the configuration keys the
    other leaves (both unset: DEFAULT_BY, those present, and the rest)."""
    by, across = options.answer_keys(runs)
    config = default_config(runs)
    if not by and not across:
        by = present_columns(runs, DEFAULT_BY)
    if not by:
        by = [c for c in config if c not in across]
    if not across:
        across = [c for c in config if c not in by]
    return by, across


def run_medians(runs: pl.DataFrame, index: LatencyIndex) -> np.ndarray:
    """Each run's median latency, as summary's median takes them: from its steady latencies, or,
    for runs without per-inference rows (imported), the run's own figure."""
    by_run = usable_runs(run_latencies(index, runs["run_idx"].to_list()))
    if by_run:
        return per_run_quantiles(by_run, 0.5)
    values = runs[MEDIAN].to_numpy().astype(float)
    return values[np.isfinite(values) & (values > 0)]


def members_of(
    group_runs: pl.DataFrame,
    across: list[str],
    shown: list[str],
    index: LatencyIndex,
    *,
    config: list[str],
    level: float,
    settings: BootstrapSettings,
) -> list[Member]:
    """The group's candidates that have a median latency, fastest first."""
    members = []
    for keys, sub in iter_groups(group_runs, across):
        label = summary_label(sub, config) or group_label(NAME, keys)
        estimate = median_estimate(sub, index, level=level, settings=settings, label=label)
        medians = run_medians(sub, index)
        if estimate.estimate is not None and len(medians):
            members.append(Member(candidate_label(keys, shown), keys, estimate, medians))
    return sorted(members, key=lambda m: m.estimate.estimate)


def compare_members(members: list[Member], level: float) -> tuple[list[dict], list[dict]]:
    """The candidates' figures (fastest first) and each other one's ratio to the fastest, its p
    Holm-adjusted over every pair of candidates (the choice of the fastest included)."""
    fastest = members[0]
    candidates = [
        {
            "candidate": m.name,
            "metric": MEDIAN,
            **m.estimate.as_dict(),
            "n_runs": len(m.medians),
            "level": level,
        }
        for m in members
    ]
    ratios = [st.ratio_to_fastest(fastest.medians, m.medians, level) for m in members[1:]]
    # Holm over every pair of the group, not only those with the fastest: the fastest is chosen
    # from these data (stats' module docstring); row 0 is the fastest's pairs
    adjusted = st.holm_over_pairs(st.pairwise_p([m.medians for m in members]))[0]
    out = []
    for i, (member, ratio) in enumerate(zip(members[1:], ratios)):
        p_holm = None if ratio.p_value is None or np.isnan(adjusted[i + 1]) else float(adjusted[i + 1])
        code = st.verdict_code(ratio, p_holm, level)
        n_runs = {"candidate": len(member.medians), "fastest": len(fastest.medians)}
        out.append(
            {
                "candidate": member.name,
                "vs": fastest.name,
                "estimate": ratio.estimate,
                "ci_low": ratio.ci_low,
                "ci_high": ratio.ci_high,
                "level": level,
                "p_value": ratio.p_value,
                "p_holm": p_holm,
                "verdict": code,
                **ratio_words(ratio, code, p_holm, n_runs, level),
                "n_runs": n_runs,
                "n": sum(n_runs.values()),
                "n_unit": "runs",
                "method": METHOD,
            }
        )
    return candidates, out


def _entry(group: dict, members: list[Member], level: float, **fields) -> dict:
    candidates, ratios = compare_members(members, level)
    return {
        "group": group,
        **fields,
        "metric": MEDIAN,
        "direction": "lower",
        "fastest": members[0].name,
        "candidates": candidates,
        "ratios": ratios,
        "n": int(sum(len(m.medians) for m in members)),
        "n_unit": "runs",
        "level": level,
    }


def _rows(entry: dict, members: list[Member], extra: dict, name_column: str = "candidate") -> list[dict]:
    """The frame rows of one entry: one per candidate (a device, across devices), the fastest
    first with ratio 1."""
    ratio_of = {r["candidate"]: r for r in entry["ratios"]}
    rows = []
    for member, candidate in zip(members, entry["candidates"]):
        ratio = ratio_of.get(member.name)
        rows.append(
            {
                **extra,
                **member.keys,
                name_column: member.name,
                "group": entry["group_text"],
                "fastest": ratio is None,
                "metric": MEDIAN,
                **{k: candidate[k] for k in ("estimate", "ci_low", "ci_high", "note")},
                "ratio": 1.0 if ratio is None else ratio["estimate"],
                "ratio_ci_low": 1.0 if ratio is None else ratio["ci_low"],
                "ratio_ci_high": 1.0 if ratio is None else ratio["ci_high"],
                "p_holm": None if ratio is None else ratio["p_holm"],
                "verdict": st.FASTEST if ratio is None else ratio["verdict"],
                "verdict_text": st.FASTEST if ratio is None else ratio["verdict_text"],
                "n_runs": candidate["n_runs"],
                "n": candidate["n_runs"],
                "n_unit": "runs",
                "level": entry["level"],
            }
        )
    return rows


def answers(
    runs: pl.DataFrame,
    latencies: pl.DataFrame | None,
    *,
    by: list[str],
    across: list[str],
    level: float = 0.95,
    settings: BootstrapSettings | None = None,
) -> AnalysisResult:
    settings = settings or BootstrapSettings()
    measured = runs.filter(pl.col(MEDIAN).is_not_null())
    if measured.height == 0:
        return unavailable(NAME, level, "no selected run has a latency (answers need inference runs)")
    if not across:
        return unavailable(NAME, level, "no key left to compare candidates by: give --answer-across")
    index, config, shown = LatencyIndex(latencies), default_config(runs), label_keys(measured, across)
    entries, rows, per_device = [], [], {}
    for group, sub in iter_groups(measured, by):
        members = members_of(sub, across, shown, index, config=config, level=level, settings=settings)
        if not members:
            continue
        entry = _entry(group, members, level, candidate_keys=across, group_text=group_text(group))
        entry["sentence"] = sentence_within(entry)
        entries.append(entry)
        rows += _rows(entry, members, group)
        if "device" in group:
            other = tuple((k, v) for k, v in group.items() if k != "device")
            for member in members:
                per_device.setdefault((other, member.name), []).append((group["device"], member))
    if not entries:
        return unavailable(NAME, level, "no group has a run with a median latency", n=measured.height)
    across_entries, across_rows = across_devices(per_device, level)
    frames = {"answers": rows_frame(rows)}
    if across_rows:
        frames["across_devices"] = rows_frame(across_rows)
    return AnalysisResult(NAME, level, entries + across_entries, frames)


def across_devices(per_device: dict, level: float) -> tuple[list[dict], list[dict]]:
    """For each (other group keys, candidate) measured on more than one device: each device's
    ratio to the fastest device."""
    entries, rows = [], []
    for (other, name), placed in per_device.items():
        if len(placed) < 2:
            continue
        members = sorted(
            (Member(device, {"device": device}, m.estimate, m.medians) for device, m in placed),
            key=lambda m: m.estimate.estimate,
        )
        group = {**dict(other), "candidate": name}
        entry = _entry(group, members, level, kind="across_devices", group_text=group_text(group))
        entry["sentence"] = sentence_across(entry)
        entries.append(entry)
        keys = placed[0][1].keys
        rows += _rows(entry, members, {**dict(other), **keys, "candidate": name}, "device")
    return entries, rows


def analyse(data: AnalysisData, options: AnalysisOptions) -> AnalysisResult:
    """The registry's entry point: groups by --answer-by, candidates by --answer-across."""
    by, across = answer_keys(data.runs, options)
    return answers(
        data.runs, data.latencies, by=by, across=across, level=options.level, settings=options.settings
    )
