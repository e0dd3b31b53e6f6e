"""Whether the runs behind a summary reached a steady state: the counts and notes the summary shows.

`collect` judges every run it stores by change-point analysis of its latencies (docs/methodology.md
§1, "Steady state"; the device side's collectors/steady_state.py): runs.steady_from is the iteration where its
steady state begins, runs.no_steady_state says it never reached one. This module only counts those
stored verdicts per group of runs; it estimates nothing. Runs not judged (imported, stored before
schema 0008, too few latencies) have NULL in both and are not counted.
"""

from __future__ import annotations

import polars as pl

from edgestats.analysis.core.result import AnalysisResult, iter_groups
from edgestats.formatting import counted

COLUMNS = ("steady_from", "no_steady_state", "warmup")


def steadiness_counts(runs: pl.DataFrame) -> dict[str, int] | None:
    """Of these runs: how many were judged, how many reached no steady state, and how many reached it
    only after their warm-up ended (steady_from > warmup: their first steady-phase latencies were
    still warming up). None where the frame lacks the columns or no run was judged."""
    if any(c not in runs.columns for c in COLUMNS):
        return None
    judged = runs.filter(pl.col("no_steady_state").is_not_null())
    if judged.height == 0:
        return None
    late = judged.filter(pl.col("steady_from") > pl.col("warmup"))  # NULL in either: not late
    return {
        "n_runs_judged": judged.height,
        "n_no_steady_state": int(judged["no_steady_state"].sum()),
        "n_steady_after_warmup": late.height,
    }


def steadiness_note(counts: dict[str, int]) -> str | None:
    """One plain sentence on the runs that did not settle, or None when all did, within their warm-up."""
    judged, never, late = (
        counts["n_runs_judged"],
        counts["n_no_steady_state"],
        counts["n_steady_after_warmup"],
    )
    parts = []
    if never:
        parts.append(
            f"{never} of {counted(judged, 'runs')} reached no steady state: their latencies still drift "
            "at the end of the run (runs.no_steady_state)"
        )
    if late:
        parts.append(
            f"{late} of {counted(judged, 'runs')} became steady only after their warm-up (runs.steady_from "
            "> warmup): their first steady-phase latencies were still warming up; --warmup auto waits "
            "for the steady state"
        )
    return "; ".join(parts) or None


def with_steadiness(result: AnalysisResult, runs: pl.DataFrame, by: list[str]) -> AnalysisResult:
    """`result` (the summary of `runs` grouped by `by`, one entry per group in iter_groups' order)
    with each entry's `steady_state` counts where its runs were judged, and one note over all groups."""
    totals = {"n_runs_judged": 0, "n_no_steady_state": 0, "n_steady_after_warmup": 0}
    for entry, (group, sub) in zip(result.entries, iter_groups(runs, by), strict=False):
        counts = steadiness_counts(sub) if entry.get("group") == group else None
        if counts is None:
            continue
        entry["steady_state"] = {**counts, "note": steadiness_note(counts)}
        totals = {k: totals[k] + counts[k] for k in totals}
    note = steadiness_note(totals) if totals["n_runs_judged"] else None
    if note:
        result.notes.append(note)
    return result
