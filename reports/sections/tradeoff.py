"""The tradeoff section: memory against latency (Pareto front) and the best candidate per metric."""

from __future__ import annotations

from typing import Any

from edgestats.reports import charts_tradeoff
from edgestats.reports.sections import FigureSpec, drawable, figure, with_intervals

# `winners` is drawn through `contenders` (its rows per side, with each candidate's configuration).
DRAWN = frozenset({"pareto", "winners", "contenders"})


def figures(result: Any) -> list[FigureSpec]:
    frames = drawable(result)
    pareto = with_intervals(
        "Peak memory (MiB) against median latency; the Pareto front as a black step line, its points ringed",
        frames.get("pareto"),
        low="latency_median_ms_ci_low",
        high="latency_median_ms_ci_high",
        estimate="latency_median_ms",
        drawn="each point with its intervals",
    )
    winners = with_intervals(
        "Best (filled) and runner-up (hollow) per metric, each at the summary's estimate for that "
        "configuration",
        frames.get("contenders"),
        drawn="each with its interval",
    )
    return [
        *figure(frames, "pareto", "pareto", pareto, charts_tradeoff.pareto_chart),
        *figure(frames, "contenders", "winners", winners, charts_tradeoff.winners_chart),
    ]


def sentence(result: Any) -> str:
    pareto = result.frames.get("pareto")
    text = ""
    if pareto is not None and pareto.height:
        text = (
            f"{int(pareto['pareto'].sum())} of {pareto.height} configurations are on the memory–latency "
            "Pareto front "
            "(no other is both faster and smaller)"
        )
    winners_entries = [e for e in result.entries if e.get("part") == "winners" and "metrics" in e]
    if winners_entries:
        single = sum(1 for e in winners_entries if e.get("single_winner"))
        text += ("; " if text else "") + (
            f"a single candidate is significantly best on every metric in {single} of "
            f"{len(winners_entries)} comparisons (Holm-corrected)"
        )
    return (text[0].upper() + text[1:] + ".") if text else "Memory against latency per configuration."
