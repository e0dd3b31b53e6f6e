"""answers in words: the names of groups and candidates, each ratio's verdict text and each group's
one sentence. The sentence is hyperfine's style: the winner named, then every other candidate "ran
R× [low, high] as long", with Holm's p and the verdict. Numbers go through edgestats.formatting, as
everywhere else. The rules behind the words are in edgestats.analysis.answers.stats."""

from __future__ import annotations

import polars as pl

from edgestats.analysis.answers import stats as st
from edgestats.analysis.estimators import welch
from edgestats.formatting import format_interval

# Keys whose values name themselves (pi5, cnn9, onnxruntime, fp32); others are said with their key.
PLAIN_KEYS = ("device", "device_class", "framework", "runtime", "model", "precision", "candidate", "dataset")
ALWAYS_SHOWN = ("framework", "runtime")  # a candidate is named by these even where they do not vary
MIN_RUNS_ADVISED = 3  # one run measures no spread between runs; two give an interval on one df


def value_text(key: str, value: object) -> str:
    if key == "batch_size":
        return f"batch {value}"
    if key == "threads":
        return f"{value} thread{'' if value == 1 else 's'}"
    return str(value) if key in PLAIN_KEYS else f"{key} {value}"


def group_text(group: dict) -> str:
    """'pi5 / cnn9 / batch 1 / fp32': a group's values, keys said where a value needs one."""
    return " / ".join(value_text(k, v) for k, v in group.items() if v is not None) or "all runs"


def label_keys(runs: pl.DataFrame, across: list[str]) -> list[str]:
    """The candidate keys a candidate's name shows: framework and runtime, and the others where they
    take more than one value in the runs (the name is then the same in every group)."""
    shown = [k for k in across if k in ALWAYS_SHOWN or runs[k].n_unique() > 1]
    return shown or across[:1]


def candidate_label(keys: dict, shown: list[str]) -> str:
    """'onnxruntime', 'pytorch / torchscript', 'onnxruntime / 4 threads': the shown keys' values,
    missing ones and repeats (tflite's runtime is tflite) left out."""
    parts = [value_text(k, keys[k]) for k in shown if keys.get(k) is not None]
    return " / ".join(dict.fromkeys(parts)) or "all"


def times_text(estimate: float, low: float | None, high: float | None) -> str:
    """'1.80× [1.50, 2.10]' (or '1.80×' without an interval)."""
    text = format_interval(estimate, low, high)
    head, _, rest = text.partition(" ")
    return f"{head}×" + (f" {rest}" if rest else "")


def p_text(p_holm: float | None) -> str:
    if p_holm is None:
        return "no test"
    return "p_holm < 0.001" if p_holm < 0.001 else f"p_holm {p_holm:.2g}"


def _more_runs(more: int, target: float) -> str:
    runs = f"{more} more run{'s' if more != 1 else ''}"
    return f"inconclusive: {runs} per configuration would resolve ±{target * 100:g} %"


def inconclusive_text(
    ratio: st.Ratio, p_holm: float | None, n_runs: dict, level: float
) -> tuple[str, int | None]:
    """The advice of an inconclusive ratio, and the runs per configuration it names (None: none)."""
    if ratio.sd_fastest is None or ratio.sd_candidate is None:
        return (
            "inconclusive: one run measures no spread between runs; collect at least "
            f"{MIN_RUNS_ADVISED} runs per configuration",
            None,
        )
    if ratio.ci_low is None:
        return "inconclusive: every run's median is the same on both sides, so no interval", None
    for target in (welch.RESOLVE_TARGET, welch.RESOLVE_TARGET / 2):  # ±2.5 % decides either verdict
        needed = welch.runs_to_resolve(ratio.sd_fastest, ratio.sd_candidate, level, target)
        if needed is None:
            return (
                f"inconclusive: more than {welch.MAX_RUNS:,} runs per configuration would be needed to "
                f"resolve ±{target * 100:g} %",
                None,
            )
        more = needed - min(n_runs.values())
        if more > 0:
            return _more_runs(more, target), needed
    return (
        f"inconclusive: not significant after Holm's adjustment over the group's pairs ({p_text(p_holm)})",
        None,
    )


def ratio_words(ratio: st.Ratio, code: str, p_holm: float | None, n_runs: dict, level: float) -> dict:
    """The ratio's `verdict_text` and `runs_needed` (per configuration, for an inconclusive one)."""
    if code == st.SLOWER:
        est, _, bounds = times_text(ratio.estimate, ratio.ci_low, ratio.ci_high).partition(" ")
        return {"verdict_text": f"{est} slower {bounds}", "runs_needed": None}
    if code == st.SAME:
        margin = st.margin_pct_text(st.equivalence_margin(ratio.ci_low, ratio.ci_high))
        return {"verdict_text": f"no detectable difference within ±{margin} %", "runs_needed": None}
    text, needed = inconclusive_text(ratio, p_holm, n_runs, level)
    return {"verdict_text": text, "runs_needed": needed}


def _verdict_phrase(ratio: dict) -> str:
    short = "slower" if ratio["verdict"] == st.SLOWER else ratio["verdict_text"]
    return short if ratio["p_holm"] is None else f"{p_text(ratio['p_holm'])}: {short}"


def _ran(ratio: dict) -> str:
    return (
        f"ran {times_text(ratio['estimate'], ratio['ci_low'], ratio['ci_high'])} as long "
        f"({_verdict_phrase(ratio)})"
    )


def _figure(candidate: dict, group: dict) -> str:
    """'0.27 ms [0.21, 0.35]'; for generation runs 'inter-token 3.8 ms [3.5, 4.2]': their latency
    is a decode step's (the time to first token is apart, docs/generation.md)."""
    head, _, bounds = format_interval(
        candidate["estimate"], candidate["ci_low"], candidate["ci_high"]
    ).partition(" ")
    what = "inter-token " if group.get("new_tokens") is not None else ""
    return f"{what}{head} ms" + (f" {bounds}" if bounds else "")


def sentence_within(entry: dict) -> str:
    """'On pi5 / cnn9 / batch 1 / fp32: onnxruntime is fastest (0.27 ms [0.21, 0.35]); tflite ran
    1.80× [1.50, 2.10] as long (p_holm 0.003: slower).'"""
    fastest = entry["candidates"][0]
    head = f"On {entry['group_text']}: "
    if not entry["ratios"]:
        return f"{head}only {fastest['candidate']} was measured ({_figure(fastest, entry['group'])})."
    others = "; ".join(f"{r['candidate']} {_ran(r)}" for r in entry["ratios"])
    return f"{head}{fastest['candidate']} is fastest ({_figure(fastest, entry['group'])}); {others}."


def sentence_across(entry: dict) -> str:
    """'onnxruntime on cnn9 / batch 1: fastest on vm (0.12 ms [0.11, 0.13]); on pi5 it ran 2.3×
    [2.1, 2.5] as long (p_holm < 0.001: slower).'"""
    group = dict(entry["group"])
    candidate = group.pop("candidate")
    fastest = entry["candidates"][0]
    where = f" on {group_text(group)}" if group else ""
    others = "; ".join(f"on {r['candidate']} it {_ran(r)}" for r in entry["ratios"])
    return f"{candidate}{where}: fastest on {fastest['candidate']} ({_figure(fastest, group)}); {others}."
