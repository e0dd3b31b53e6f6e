"""Paper tables of the answers and of the environment. The answers: which candidate is fastest, by
how much, how sure; the environment: each device's facts, and each framework, runtime and library
version that ran.

The answers table has one row per group and candidate, fastest first within a group: the
candidate's median latency [interval], its ratio to the fastest [interval] ("times as long as the
fastest", 1 for the fastest itself), the Holm-adjusted p within the group and the verdict in a
word; the verdict's full text ("inconclusive: 7 more runs per configuration would resolve ±5 %")
is its footnote. Built from the answers analysis' frames (edgestats/analysis/answers/analysis.py) and the
environment frames of edgestats.analysis.load.environment.
"""

from __future__ import annotations

from typing import Any

import polars as pl

from edgestats.formatting import MISSING, format_number
from edgestats.reports.page_tables import split_constant
from edgestats.reports.tables_wide import (
    Cell,
    Notes,
    PaperTable,
    common_line,
    interval_cell,
    is_numeric,
    level_line,
    text_cell,
)
from edgestats.reports.units import label_of

# verdicts whose word says it all; the others get their text as a footnote
PLAIN_VERDICTS = {"slower", "faster", "fastest"}


def _answer_row(r: dict, shown: list[str], metric: str, notes: Notes) -> list[Cell]:
    """One candidate of a group: its median [interval], its ratio to the fastest [interval], p, verdict."""
    fastest = bool(r.get("fastest"))
    verdict = "fastest" if fastest else str(r.get("verdict") or MISSING)
    text = r.get("verdict_text")
    marks = notes.ref(text) if verdict not in PLAIN_VERDICTS and text and text != verdict else ()
    ratio = (
        Cell("1")
        if fastest
        else interval_cell(r.get("ratio"), r.get("ratio_ci_low"), r.get("ratio_ci_high"), "ratio")
    )
    return [
        *(text_cell(r.get(c), c) for c in shown),
        interval_cell(r.get("estimate"), r.get("ci_low"), r.get("ci_high"), metric, notes.ref(r.get("note"))),
        ratio,
        Cell(MISSING if fastest or r.get("p_holm") is None else format_number(float(r["p_holm"]))),
        Cell(verdict, marks),
        text_cell(r.get("n_runs"), "n_runs"),
    ]


def answers_paper_table(
    key: str, caption: str, frame: pl.DataFrame, group_keys: list[str], candidate: str
) -> PaperTable:
    """One row per group × candidate: the group's keys (`group_keys`; one value everywhere: said
    under the table), then `candidate`, the column naming what is compared inside a group."""
    keys = [c for c in group_keys if c in frame.columns and c != candidate]
    shown, common = split_constant(frame, keys, frame.height)
    shown.append(candidate)  # even when one candidate is everywhere: it is what the row is about
    metric = str(frame["metric"][0]) if "metric" in frame.columns else "latency_median_ms"
    notes = Notes()
    rows = [_answer_row(r, shown, metric, notes) for r in frame.to_dicts()]
    header = [Cell(label_of(c)) for c in shown] + [
        Cell(label_of(metric)),
        Cell("× fastest", notes.ref("× fastest: how many times as long as the fastest of its group takes")),
        Cell("p (Holm)", notes.ref("p (Holm): Holm-adjusted p against the fastest, within the group")),
        Cell("verdict"),
        Cell("runs"),
    ]
    right = [is_numeric(frame, c) for c in shown] + [True, True, True, False, True]
    lines = common_line(common) + level_line(frame)
    return PaperTable(key, caption, header, right, rows, frame, lines, notes.texts)


def answers_tables(result: Any) -> list[PaperTable]:
    """The answers within groups (frame `answers`) and across devices (`across_devices`); the
    group keys are those of the analysis' entries."""
    frames = {k: f for k, f in result.frames.items() if f is not None and f.height}
    within = [e for e in result.entries if "reason" not in e and e.get("kind") != "across_devices"]
    across = [e for e in result.entries if e.get("kind") == "across_devices"]
    tables = []
    if "answers" in frames and within:
        tables.append(
            answers_paper_table(
                "answers",
                "Which is fastest, by how much, how sure",
                frames["answers"],
                list(within[0]["group"]),
                "candidate",
            )
        )
    if "across_devices" in frames and across:
        tables.append(
            answers_paper_table(
                "answers-across-devices",
                "The same model and candidate on each device",
                frames["across_devices"],
                list(across[0]["group"]),
                "device",
            )
        )
    return tables


# -- environment ----------------------------------------------------------------------------------

GIB = 1024**3
DEVICE_TABLE_COLUMNS = {
    "device": "device",
    "board": "board",
    "cpu_model": "CPU",
    "arch": "arch",
    "cores": "cores",
    "mem_total_bytes": "memory (GiB)",
    "gpu": "GPU",
    "accelerators": "accelerators",
    "os": "OS",
    "kernel": "kernel",
    "python": "Python",
    "power_mode": "power mode",
    "n_runs": "runs",
}
SOFTWARE_TABLE_COLUMNS = {
    "device": "device",
    "framework": "framework",
    "runtime": "runtime",
    "framework_version": "version",
    "libraries": "libraries",
    "python": "Python",
    "edgestats_version": "edgestats",
    "n_runs": "runs",
}


def _cell(value: object, column: str) -> Cell:
    if column == "mem_total_bytes" and isinstance(value, (int, float)):
        return Cell(format_number(value / GIB))
    return text_cell(value, column)


def facts_table(key: str, caption: str, frame: pl.DataFrame, labels: dict[str, str]) -> PaperTable:
    """The columns of `labels` that some row has a value in; one value everywhere: said once."""
    present = [c for c in labels if c in frame.columns and frame[c].null_count() < frame.height]
    candidates = [c for c in present if c not in ("device", "n_runs")]
    varying, _ = split_constant(frame, candidates, frame.height)
    common = [
        f"{labels[c]} {_cell(frame[c][0], c).text}"
        for c in candidates
        if c not in varying and frame.height >= 2
    ]
    shown = [c for c in present if c not in candidates or c in varying]
    rows = [[_cell(r[c], c) for c in shown] for r in frame.to_dicts()]
    right = [is_numeric(frame, c) for c in shown]
    return PaperTable(key, caption, [Cell(labels[c]) for c in shown], right, rows, frame, common_line(common))


def environment_tables(environment: dict[str, pl.DataFrame] | None) -> list[PaperTable]:
    """The devices' facts and the software versions, as load_environment read them."""
    if not environment:
        return []
    tables = []
    devices, software = environment.get("devices"), environment.get("software")
    if devices is not None and devices.height:
        tables.append(facts_table("environment-devices", "Devices", devices, DEVICE_TABLE_COLUMNS))
    if software is not None and software.height:
        tables.append(
            facts_table(
                "environment-software",
                "Software: framework, runtime and library versions per device",
                software,
                SOFTWARE_TABLE_COLUMNS,
            )
        )
    return tables
