"""Paper tables as tables (before printing): one row per configuration, one column per metric,
"estimate [low, high]" in the header's unit, notes and methods as footnotes, never in a cell."""

from __future__ import annotations

import polars as pl
from table_builders import METHODS, NO_POWER, P99_NOTE, answers_result, metrics_frame

from edgestats.formatting import format_interval
from edgestats.reports.tables_answers_env import answers_tables, environment_tables
from edgestats.reports.tables_wide import long_paper_table, paper_table, summary_paper_table
from edgestats.reports.units import MIB


def texts(row) -> list[str]:
    return [cell.text for cell in row]


def test_summary_one_row_per_configuration_one_column_per_metric():
    table = summary_paper_table(metrics_frame())
    assert len(table.rows) == 4, "one row per configuration"
    assert texts(table.columns) == [
        "device",
        "framework",
        "median latency (ms)",
        "p99 latency (ms)",
        "throughput (/s)",
        "peak memory (MiB)",
        "runs",
    ], "constant keys and metrics with no figure leave the header; units in it"
    first = table.rows[0]
    assert texts(first)[:2] == ["pi_5", "onnxruntime"]
    assert first[2].full == format_interval(1.0, 0.9, 1.1) == "1.00 [0.90, 1.10]"
    assert first[5].full == "100 [90, 110]", "memory in MiB"
    assert first[3].full == "2.00" and first[3].notes, "no interval: its reason is a footnote"
    assert table.right == [False, False, True, True, True, True, True]


def test_summary_notes_and_methods_are_footnotes_under_the_table():
    table = summary_paper_table(metrics_frame())
    every_cell = [cell.full for row in table.rows for cell in row] + texts(table.columns)
    assert not any(P99_NOTE in c or "log scale" in c for c in every_cell), "no note inside a cell"
    p99 = table.rows[0][3]
    assert table.notes[p99.notes[0] - 1] == P99_NOTE
    median_header = table.columns[2]
    assert table.notes[median_header.notes[0] - 1] == "median latency (ms): run-level t on the log scale"
    assert table.notes.count(P99_NOTE) == 1, "a note said once, however many cells it explains"
    assert "for all rows: model cnn9 · batch 1" in table.lines
    assert "[low, high]: 95 % confidence interval" in table.lines
    absent = next(line for line in table.lines if line.startswith("no figure in any row"))
    assert "energy / inference (J)" in absent and f"(note {table.notes.index(NO_POWER) + 1})" in absent


def test_summary_csv_data_has_every_metric_as_numbers():
    data = summary_paper_table(metrics_frame()).data
    assert data.height == 4
    for metric in METHODS:
        assert (
            metric in data.columns
            and f"{metric}_ci_low" in data.columns
            and f"{metric}_ci_high" in data.columns
        )
    assert data["rss_peak_bytes"][0] == 100 * MIB, "the CSV keeps bytes"
    assert data["latency_p99_ms_note"][0] == P99_NOTE
    assert "latency_median_ms_note" not in data.columns, "no note column where no row has a note"


def test_a_frame_that_does_not_pivot_is_shown_long_with_its_notes_as_footnotes():
    frame = pl.DataFrame(
        {
            "part": ["steady", "total"],
            "method": ["Pearson, Fisher z", "Pearson, Fisher z"],
            "estimate": [0.9, 0.5],
            "ci_low": [0.8, None],
            "ci_high": [0.95, None],
            "level": [0.95, 0.95],
            "n": [12, 2],
            "n_unit": ["runs", "runs"],
            "note": [None, "n < 3: no interval"],
        }
    )
    table = paper_table("energy-correlation", "energy: correlation", frame)
    assert texts(table.columns) == ["part", "estimate", "n (runs)"]
    assert [c.full for c in table.rows[0]] == ["steady", "0.900 [0.800, 0.950]", "12"]
    assert table.rows[1][0].notes == (1,) and table.notes == ["n < 3: no interval"]
    assert "method: Pearson, Fisher z" in table.lines
    assert long_paper_table("k", "c", frame).data.columns == frame.columns, "the CSV keeps every column"


def test_a_long_frame_by_phase_pivots_wide():
    frame = pl.DataFrame(
        {
            "framework": ["onnxruntime"] * 2 + ["tflite"] * 2,
            "phase": ["import", "steady"] * 2,
            "estimate": [0.5, 2.0, 0.2, 1.0],
            "ci_low": [0.4, 1.8, 0.1, 0.9],
            "ci_high": [0.6, 2.2, 0.3, 1.1],
            "level": [0.95] * 4,
        }
    )
    table = paper_table("breakdown-phases", "breakdown: phases", frame)
    assert texts(table.columns) == ["framework", "import (s)", "steady (s)"]
    assert [c.full for c in table.rows[1]] == ["tflite", "0.200 [0.100, 0.300]", "1.00 [0.90, 1.10]"]


def test_answers_table_ratio_to_the_fastest_with_verdicts():
    (table,) = answers_tables(answers_result())
    assert texts(table.columns) == [
        "candidate",
        "median latency (ms)",
        "× fastest",
        "p (Holm)",
        "verdict",
        "runs",
    ]
    assert [c.full for c in table.rows[0]][2:5] == ["1", "–", "fastest"]
    assert [c.full for c in table.rows[1]][2:5] == ["1.80 [1.50, 2.10]", "0.00300", "slower"]
    inconclusive = table.rows[2][4]
    assert (
        inconclusive.text == "inconclusive"
        and table.notes[inconclusive.notes[0] - 1] == "inconclusive: 7 more runs"
    )
    assert not table.rows[1][4].notes, "'slower' needs no footnote: the ratio says by how much"
    assert "for all rows: device pi5 · model cnn9 · batch 1" in table.lines


def test_environment_tables_say_constant_facts_once():
    devices = pl.DataFrame(
        {
            "device": ["pi5", "vm"],
            "cpu_model": ["Cortex-A76", "Xeon"],
            "mem_total_bytes": [8 * 1024**3, 64 * 1024**3],
            "gpu": [None, None],
            "python": ["3.11.2", "3.11.2"],
            "board": ["Raspberry Pi 5", None],
            "n_runs": [3, 2],
        }
    )
    software = pl.DataFrame(
        {
            "device": ["pi5"],
            "framework": ["onnxruntime"],
            "runtime": ["onnxruntime"],
            "framework_version": ["1.20.1"],
            "libraries": ["numpy 2.1.3"],
            "python": ["3.11.2"],
            "edgestats_version": ["0.1.0"],
            "n_runs": [3],
        }
    )
    dev, soft = environment_tables({"devices": devices, "software": software})
    assert texts(dev.columns) == ["device", "board", "CPU", "memory (GiB)", "runs"]
    assert texts(dev.rows[1]) == ["vm", "–", "Xeon", "64.0", "2"]
    assert dev.lines == ["for all rows: Python 3.11.2"]
    assert texts(soft.rows[0]) == [
        "pi5",
        "onnxruntime",
        "onnxruntime",
        "1.20.1",
        "numpy 2.1.3",
        "3.11.2",
        "0.1.0",
        "3",
    ]
    assert environment_tables(None) == []


def test_a_configuration_is_one_row_even_where_its_figures_rest_on_different_runs():
    frame = metrics_frame().with_columns(
        pl.when(pl.col("metric") == "rss_peak_bytes").then(2).otherwise(pl.col("n_runs")).alias("n_runs")
    )
    table = summary_paper_table(frame)
    assert len(table.rows) == 4 and [row[-1].text for row in table.rows] == ["3"] * 4
    assert table.data.height == 4 and table.data["n_runs"].to_list() == [3] * 4


def test_answers_across_devices_one_row_per_device():
    result = answers_result()
    across = pl.DataFrame(
        {
            "model": ["cnn9", "cnn9"],
            "candidate": ["onnxruntime", "onnxruntime"],
            "device": ["pi5", "vm"],
            "fastest": [True, False],
            "metric": ["latency_median_ms"] * 2,
            "estimate": [0.27, 1.35],
            "ci_low": [0.25, 1.2],
            "ci_high": [0.29, 1.5],
            "ratio": [1.0, 5.0],
            "ratio_ci_low": [1.0, 4.1],
            "ratio_ci_high": [1.0, 6.1],
            "p_holm": [None, 0.001],
            "verdict": ["fastest", "slower"],
            "verdict_text": ["fastest", "5.00× slower [4.10, 6.10]"],
            "n_runs": [3, 3],
            "level": [0.95, 0.95],
        }
    )
    result.frames["across_devices"] = across
    result.entries.append({"group": {"model": "cnn9", "candidate": "onnxruntime"}, "kind": "across_devices"})
    within, between = answers_tables(result)
    assert between.key == "answers-across-devices"
    assert texts(between.columns)[0] == "device" and len(between.rows) == 2
    assert [c.full for c in between.rows[1]][:3] == ["vm", "1.35 [1.20, 1.50]", "5.00 [4.10, 6.10]"]
    assert "for all rows: model cnn9 · candidate onnxruntime" in between.lines
