"""The answers section, first on the page: per group, which candidate is fastest and every other
one's ratio to it. Each ratio has its interval and verdict, in one sentence per group (`sentences`),
and the same is shown across devices; the charts draw the ratios, one panel per group."""

from __future__ import annotations

from typing import Any

from edgestats.formatting import counted
from edgestats.reports import charts_answers
from edgestats.reports.sections import FigureSpec, drawable, figure, pct

DRAWN = frozenset({"answers", "across_devices"})


def figures(result: Any) -> list[FigureSpec]:
    frames = drawable(result)
    within = (
        "Each candidate's median latency as a multiple of its group's fastest (dot), with its "
        f"{pct(result.level)} interval (bar; Welch on the runs' medians), one panel per group; "
        "dashed: the fastest (1×)"
    )
    across = (
        "Each device's median latency as a multiple of the fastest device's, for the same model and "
        "candidate, with its interval; one panel per model and candidate"
    )
    return [
        *figure(frames, "answers", "ratios", within, charts_answers.ratio_chart),
        *figure(
            frames,
            "across_devices",
            "across_devices",
            across,
            lambda frame: charts_answers.ratio_chart(
                frame, category="device", x_title="times as long as the fastest device's (log)"
            ),
        ),
    ]


def sentences(result: Any) -> list[str]:
    """One sentence per group (the groups first, then across devices), as `analyze` prints them."""
    within = [e["sentence"] for e in result.entries if "sentence" in e and e.get("kind") != "across_devices"]
    across = [e["sentence"] for e in result.entries if e.get("kind") == "across_devices"]
    return within + across


def sentence(result: Any) -> str:
    """How many groups have a significantly fastest candidate, in one sentence (the per-group
    sentences are `sentences`)."""
    groups = [e for e in result.entries if "ratios" in e and e.get("kind") != "across_devices"]
    compared = [e for e in groups if e["ratios"]]
    if not compared:
        return (
            f"Each of {counted(len(groups), 'groups')} has a single candidate: nothing to compare."
            if groups
            else "No group has a median latency to compare."
        )
    clear = sum(1 for e in compared if all(r["verdict"] == "slower" for r in e["ratios"]))
    ties = sum(1 for e in compared for r in e["ratios"] if r["verdict"] == "no detectable difference")
    open_ = sum(1 for e in compared for r in e["ratios"] if r["verdict"] == "inconclusive")
    text = (
        f"In {clear} of {counted(len(compared), 'groups')} compared, the fastest candidate is "
        f"significantly faster than every other (Holm within the group, {pct(result.level)} intervals)"
    )
    extras = [
        f"no detectable difference in {counted(ties, 'ratios')}" if ties else "",
        f"inconclusive: {counted(open_, 'ratios')}, which more runs would resolve" if open_ else "",
    ]
    extras = [e for e in extras if e]
    return text + ("; " + "; ".join(extras) if extras else "") + "."
