"""The answers at the top of the page: the fastest candidate per group and how the others compare,
then devices compared. Per group, which candidate is fastest, how many times as long each other one
takes, and how sure that is; then, per model and runtime measured on several devices, how the
devices compare.

Drawn from the answers analysis' frames (edgestats/analysis/answers/analysis.py): `answers` (one row per
group x candidate) and `across_devices` (one row per model x runtime x device). Each group is one
table row, so the first screen of a laptop holds them all; every other candidate is a line of its
cell with its ratio [interval], the Holm-adjusted p and the runs on each side. The row carries the
group's filter fields (data-f-device, data-f-model) and each line its own (framework, runtime or
device), so the page's filter hides the answers of what it leaves out.
"""

from __future__ import annotations

import html
from typing import Any

import polars as pl

from edgestats.formatting import format_interval, format_number, is_missing
from edgestats.reports.page_tables import Footnotes, filter_attrs, value_cell
from edgestats.reports.units import label_of

VERDICT_CLASS = {
    "slower": "verdict-slower",
    "no detectable difference": "verdict-same",
    "inconclusive": "verdict-unsure",
}
# What the two tables answer, and which fields of a row say what a group is and what a line is.
# (frame, caption, the group's filter fields, a line's filter fields, the column naming a line).
TABLES = (
    (
        "answers",
        "Which is fastest, per device and model",
        ("device", "model"),
        ("framework", "runtime"),
        "candidate",
    ),
    (
        "across_devices",
        "The same model and runtime on several devices",
        ("model", "framework", "runtime"),
        ("device",),
        "device",
    ),
)


def esc(value: object) -> str:
    return html.escape("" if value is None else str(value), quote=True)


def fields(row: dict, keys: tuple[str, ...]) -> dict[str, str]:
    """The filter fields of a row that it has a column for: an unknown value is "" (hidden when
    that field is chosen), a column the frame lacks is left out (the row stays)."""
    return {k: "" if row[k] is None else str(row[k]) for k in keys if k in row}


def p_text(p: object) -> str:
    if is_missing(p):
        return ""
    return "p_holm < 0.001" if float(p) < 0.001 else f"p_holm {format_number(float(p))}"


class Reasons:
    """Why a comparison is inconclusive and what would settle it, lettered under the tables: said
    once however many lines it fits (the page's numbered notes are the analyses' notes)."""

    def __init__(self) -> None:
        self.letters: dict[str, str] = {}

    def ref(self, why: str) -> str:
        if not why:
            return ""
        letter = self.letters.setdefault(why, "abcdefghijklmnopqrstuvwxyz"[len(self.letters) % 26])
        return f"<sup class=why>{letter}</sup>"

    def html(self) -> str:
        said = "; ".join(f"{letter}: {esc(why)}" for why, letter in self.letters.items())
        return f"<p class=tablefoot>{said}.</p>" if said else ""


def other_line(row: dict, fastest: dict, keys: tuple[str, ...], label: str, reasons: Reasons) -> str:
    """One candidate against the fastest: "pytorch 1.19× slower [1.16, 1.22] p_holm < 0.001 · runs 4 vs 4"."""
    verdict, text = row.get("verdict") or "", row.get("verdict_text") or ""
    mark = ""
    if verdict == "slower":
        said = text
    else:
        ratio = format_interval(row.get("ratio"), row.get("ratio_ci_low"), row.get("ratio_ci_high"))
        # "inconclusive: <why and what to do>": the why is a footnote, said once for every line it fits
        head, _, why = text.partition(": ") if verdict == "inconclusive" else (text, "", "")
        said, mark = f"{ratio}× as long: {head or verdict}", reasons.ref(why)
    details = [p_text(row.get("p_holm")), f"runs {row.get('n_runs')} vs {fastest.get('n_runs')}"]
    css = VERDICT_CLASS.get(verdict, "verdict")
    return (
        f"<li{filter_attrs(fields(row, keys))}><b>{esc(row[label])}</b> "
        f"<span class={css}>{esc(said)}</span>{mark} "
        f"<span class=ci>{esc(' · '.join(d for d in details if d))}</span></li>"
    )


def group_row(rows: list[dict], keys: tuple, label: str, notes: tuple[Footnotes, Reasons]) -> str:
    notes, reasons = notes
    group_keys, line_keys = keys
    fastest = next((r for r in rows if r.get("fastest")), rows[0])
    best = value_cell(
        fastest.get("estimate"),
        fastest.get("ci_low"),
        fastest.get("ci_high"),
        str(fastest.get("metric") or "latency_median_ms"),
        notes.ref(fastest.get("note")),
    )
    others = [r for r in rows if r is not fastest]
    lines = "".join(other_line(r, fastest, line_keys, label, reasons) for r in others)
    return (
        f"<tr{filter_attrs(fields(fastest, group_keys))}><td>{esc(fastest.get('group'))}</td>"
        f"<td class=fastest>{esc(fastest[label])}</td><td class=num>{best.html}</td>"
        f"<td>{f'<ul>{lines}</ul>' if lines else 'the only one measured'}</td></tr>"
    )


def answers_table(key: str, caption: str, frame: pl.DataFrame, keys: tuple, notes: tuple) -> str:
    """One row per group: its name, the fastest and its figure, every other one as a line."""
    *keys, label = keys
    groups: dict[object, list[dict]] = {}
    for row in frame.to_dicts():
        groups.setdefault(row.get("group"), []).append(row)
    metric = str(frame["metric"][0]) if "metric" in frame.columns else "latency_median_ms"
    body = "".join(group_row(rows, tuple(keys), label, notes) for rows in groups.values())
    return (
        f"<div class=tablehead><span class=cap>{esc(caption)}</span> "
        f"<span class=shape>{len(groups):,} groups</span></div>"
        f'<div class=table-wrap><table class=answers id="table-{esc(key)}"><thead><tr>'
        "<th scope=col>group</th><th scope=col>fastest</th>"
        f"<th class=num scope=col>{esc(label_of(metric))}</th>"
        f"<th scope=col>the others, times as long as the fastest</th></tr></thead>"
        f"<tbody>{body}</tbody></table></div>"
    )


def answers_html(result: Any, notes: Footnotes) -> str:
    """The answers tables of an answers result ("" when it has no groups)."""
    frames = getattr(result, "frames", {}) or {}
    parts, marks = [], (notes, Reasons())
    for key, caption, group_keys, line_keys, label in TABLES:
        frame = frames.get(key)
        if frame is not None and frame.height and {"group", label} <= set(frame.columns):
            parts.append(
                answers_table(f"answers-{key}", caption, frame, (group_keys, line_keys, label), marks)
            )
    if not parts:
        return ""
    level = next(
        (f" at {f['level'].drop_nulls()[0] * 100:g} %" for f in frames.values() if _has_level(f)), ""
    )
    foot = (
        "Ratios: times as long as the fastest (2.00× slower: it takes twice as long), from the runs' "
        f"medians, with their interval{level}; p_holm: Welch's test on the log scale of the runs' "
        "medians, Holm-adjusted within the group."
    )
    return "\n".join([*parts, marks[1].html(), f"<p class=tablefoot>{esc(foot)}</p>"])


def _has_level(frame: pl.DataFrame | None) -> bool:
    return frame is not None and "level" in frame.columns and frame["level"].drop_nulls().len() > 0
