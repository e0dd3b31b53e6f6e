"""The At a glance table's "next step" beside a wide interval: the runs summary's `next_step` says
would reach ±5 % (tests/analysis/test_next_step.py checks that count against an independent
computation), its reason as the cell's title, and one footnote naming `collect --until-precise`;
no column when every median is precise and rests on 3 runs or more."""

from __future__ import annotations

import html
import re

import numpy as np
from analysis_builders import latencies_frame, runs_frame

from edgestats.analysis.estimators.intervals import BootstrapSettings
from edgestats.analysis.summary.analysis import summarise
from edgestats.reports.headline import NEXT_STEP_COLUMN, headline_table
from edgestats.reports.page_tables import Footnotes

SETTINGS = BootstrapSettings(n_resamples=999, bca_max_n=100, seed=3)


def summary_of(spread_by_model: dict[str, tuple[int, float]]):
    """summary of collected runs: per model, (runs, between-run log SD), 40 latencies a run."""
    rng = np.random.default_rng(11)
    rows, per_run = [], {}
    for model, (n_runs, between) in spread_by_model.items():
        for centre in rng.normal(np.log(4.0), between, n_runs):
            latencies = np.exp(rng.normal(centre, 0.03, 40))
            per_run[len(rows)] = latencies.tolist()
            rows.append(
                {
                    "model": model,
                    "latency_median_ms": float(np.median(latencies)),
                    "latency_mean_ms": float(latencies.mean()),
                    "n_latencies": 40,
                }
            )
    return summarise(runs_frame(rows), latencies_frame(per_run), by=["model"], settings=SETTINGS)


def text(markup: str) -> str:
    return html.unescape(re.sub(r"<[^>]+>", " ", markup)).split()


def test_wide_and_single_run_rows_say_how_many_runs_and_the_command():
    summary = summary_of({"noisy": (3, 0.5), "single": (1, 0.01), "steady": (6, 0.005)})
    notes = Footnotes()
    table = headline_table(summary, notes)
    column = table.columns.index(NEXT_STEP_COLUMN)
    cells = {text(row[0].html)[0]: row[column] for row in table.rows}
    steps = {e["group"]["model"]: e["metrics"][0].get("next_step") for e in summary.to_json()}
    runs = steps["noisy"]["runs_needed"]
    assert runs > 3 and text(cells["noisy"].html)[:5] == [f"{runs:,}", "runs", "for", "±5", "%"]
    assert cells["noisy"].sort == runs and html.escape(steps["noisy"]["text"]) in cells["noisy"].html
    assert text(cells["single"].html)[:3] == ["3", "runs", "or"] and steps["single"]["runs_needed"] is None
    assert cells["steady"].html == "" and steps["steady"] is None
    commands = [n for n in notes.numbers if "edgestats collect --until-precise 5%" in n]
    assert len(commands) == 1, "one footnote, shared by every row with a next step"


def test_no_next_step_column_when_every_median_is_precise():
    table = headline_table(summary_of({"a": (5, 0.005), "b": (4, 0.005)}), Footnotes())
    assert NEXT_STEP_COLUMN not in table.columns
