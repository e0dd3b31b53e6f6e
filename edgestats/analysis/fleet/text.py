"""fleet in words: each unit against its class and each class's one sentence. A unit reads "pi5-03
ran 1.12× [1.05, 1.20] as long as its class: slower"; a class's sentence gives its SDs first.
Numbers go through edgestats.formatting; the ratio's and the group's words are answers'
(edgestats.analysis.answers.text)."""

from __future__ import annotations

from edgestats.analysis.answers.text import p_text, times_text, value_text
from edgestats.analysis.fleet import stats as st
from edgestats.formatting import counted, format_interval

__all__ = ["group_text", "sentence", "unit_text"]

UNTESTED = "a test needs a spread between runs of one unit (collect at least 2 runs a unit)"
COMPONENT_WORDS = {
    "between_unit": "between units",
    "between_run": "between runs",
    "within_run": "within a run",
}


def group_text(group: dict) -> str:
    """'pi5 / onnxruntime / cnn9 / batch 1': answers' words for the values, a repeat (a runtime
    named as its framework) said once."""
    parts = [value_text(k, v) for k, v in group.items() if v is not None]
    return " / ".join(dict.fromkeys(parts)) or "all runs"


def unit_text(row: dict) -> str:
    """'pi5-03 ran 1.12× [1.05, 1.20] as long as its class: slower (p_holm 0.002)'."""
    if row["ratio"] is None:
        return f"{row['device']}: no ratio to its class"
    ratio = times_text(row["ratio"], row["ratio_ci_low"], row["ratio_ci_high"])
    if row["p_holm"] is None:
        return (
            f"{row['device']} ran {ratio} as long as its class: no test (no spread between runs to test by)"
        )
    return f"{row['device']} ran {ratio} as long as its class: {row['verdict']} ({p_text(row['p_holm'])})"


def component_text(part: dict) -> str:
    """'between units 1.2 % [0, 3.4]' (an SD of log latency, as a percent)."""
    if part["estimate"] is None:
        return f"{COMPONENT_WORDS[part['component']]} unknown"
    figure = format_interval(part["estimate"], part["ci_low"], part["ci_high"])
    return f"{COMPONENT_WORDS[part['component']]} {figure} %"


def sentence(entry: dict) -> str:
    """The class's sentence: the SD of each component, then every flagged unit's ratio, then how
    many are as their class."""
    parts = [component_text(p) for p in entry["components"]]
    head = (
        f"{entry['group_text']}: {counted(entry['units'], 'units')}, SD {parts[0]} "
        f"({', '.join(parts[1:])}; {entry['level'] * 100:g} % intervals)"
    )
    if all(r["p_holm"] is None for r in entry["unit_ratios"]):
        return f"{head}; no unit could be tested against its class: {UNTESTED}."
    flagged = [r["verdict_text"] for r in entry["unit_ratios"] if r["verdict"] != st.LIKE_CLASS]
    alike = len(entry["unit_ratios"]) - len(flagged)
    if not flagged:
        return f"{head}; no unit differs from its class (Holm across its units)."
    rest = f"; {counted(alike, 'other units')} as their class" if alike else ""
    return f"{head}; " + "; ".join(flagged) + rest + "."
