"""Paper tables: each estimate printed with its interval, in LaTeX, Markdown and CSV."""

from __future__ import annotations

import csv
import io

import polars as pl
import pytest

from edgestats.formatting import format_interval, format_number
from edgestats.reports.tables import (
    MIB,
    TableFormatError,
    in_mib,
    interval_columns,
    report_table,
    to_csv,
    to_latex,
    to_markdown,
    write_tables,
)


def latency_frame() -> pl.DataFrame:
    return pl.DataFrame(
        {
            "device": ["jetson|nano", "pi_4"],
            "latency_median_ms": [12.345, 1234.5],
            "latency_median_ms_ci_low": [11.91, 1200.1],
            "latency_median_ms_ci_high": [12.84, None],
            "n": [30, 1],
            "level": [0.95, 0.95],
        }
    )


def test_numbers_keep_three_significant_digits():
    assert format_number(12.345) == "12.3"
    assert format_number(0.012345) == "0.0123"
    assert format_number(98765.4) == "98,765"
    assert format_number(30) == "30"
    assert format_number(None) == format_number(float("nan")) == "–"
    assert format_number(1.5e-6) == "1.50e-06"


def test_interval_bounds_take_the_estimates_decimals():
    assert format_interval(12.345, 11.91, 12.84) == "12.3 [11.9, 12.8]"
    assert format_interval(0.5, 0.41, 0.6) == "0.500 [0.410, 0.600]"
    assert format_interval(7.0, None, 8.0) == "7.00", "a missing bound means no interval, never a made-up one"


def test_both_interval_conventions_are_found():
    assert interval_columns(["x", "x_ci_low", "x_ci_high", "y"]) == {"x": ("x_ci_low", "x_ci_high")}
    assert interval_columns(["phase", "estimate", "ci_low", "ci_high", "level"]) == {
        "estimate": ("ci_low", "ci_high")
    }
    assert interval_columns(["x_ci_low", "x_ci_high"]) == {}, "bounds without their estimate are left alone"


def test_report_table_merges_interval_and_names_the_level():
    table = report_table(latency_frame())
    assert table.columns == ["device", "latency_median_ms [95 % CI]", "n"]
    assert table.row(0) == ("jetson|nano", "12.3 [11.9, 12.8]", "30")
    assert table.row(1) == ("pi_4", "1,234", "1")


def test_markdown_escapes_pipes_and_right_aligns_numbers():
    text = to_markdown(latency_frame())
    lines = text.splitlines()
    assert lines[0] == "| device | latency_median_ms [95 % CI] | n |"
    assert lines[1] == "|---|---:|---:|"
    assert lines[2] == r"| jetson\|nano | 12.3 [11.9, 12.8] | 30 |"


def test_latex_is_a_booktabs_table_with_specials_escaped():
    text = to_latex(latency_frame(), caption="Median latency, 95% CI", label="tab:lat")
    assert r"\begin{tabular}{lrr}" in text and r"\toprule" in text and r"\bottomrule" in text
    assert r"\caption{Median latency, 95\% CI}" in text
    assert r"latency\_median\_ms [95 \% CI] & n \\" in text
    assert r"jetson\textbar{}nano & 12.3 [11.9, 12.8] & 30 \\" in text
    assert r"pi\_4 & 1,234 & 1 \\" in text


def test_csv_keeps_numbers_and_bounds_as_columns():
    rows = list(csv.DictReader(io.StringIO(to_csv(latency_frame()))))
    assert rows[0]["latency_median_ms_ci_low"] == "11.91" and rows[1]["latency_median_ms_ci_high"] == ""
    assert float(rows[1]["latency_median_ms"]) == 1234.5


def test_nested_columns_are_left_out_of_every_format():
    frame = latency_frame().with_columns(pl.Series("run_ids", [["a"], ["b", "c"]]))
    assert "run_ids" not in report_table(frame).columns
    assert "run_ids" not in to_csv(frame).splitlines()[0]


def test_write_tables_one_file_per_table(tmp_path):
    paths = write_tables({"summary": ("Latency", latency_frame())}, tmp_path, "markdown")
    assert paths == [tmp_path / "tables" / "summary.md"]
    with pytest.raises(TableFormatError, match="latex, markdown, csv"):
        write_tables({}, tmp_path, "xlsx")


def test_memory_is_in_mib_for_papers_and_bytes_in_csv():
    wide = pl.DataFrame(
        {
            "model": ["cnn9"],
            "rss_peak_bytes": [77_873_152.0],
            "rss_peak_bytes_ci_low": [70 * MIB],
            "rss_peak_bytes_ci_high": [80 * MIB],
            "level": [0.95],
        }
    )
    assert report_table(wide).row(0) == ("cnn9", "74.3 [70.0, 80.0]")
    assert report_table(wide).columns == ["model", "rss_peak_mib [95 % CI]"]
    long = pl.DataFrame(
        {
            "metric": ["rss_peak_bytes", "latency_median_ms"],
            "estimate": [77_873_152.0, 12.345],
            "ci_low": [None, 11.91],
            "ci_high": [None, 12.84],
            "level": [0.95, 0.95],
        }
    )
    assert report_table(long).rows() == [("rss_peak_mib", "74.3"), ("latency_median_ms", "12.3 [11.9, 12.8]")]
    assert "77873152.0" in to_csv(long), "CSV keeps the numbers as the analysis wrote them"
    assert in_mib(long)["estimate"][1] == 12.345, "only the memory rows are scaled"
