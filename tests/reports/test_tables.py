"""What the page's and the paper tables share: number formats, where intervals are, CSV, escaping."""

from __future__ import annotations

import csv
import io

import polars as pl

from edgestats.formatting import format_interval, format_number
from edgestats.reports.tables import interval_columns, latex_escape, markdown_escape, to_csv


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


def test_csv_keeps_numbers_and_bounds_as_columns():
    rows = list(csv.DictReader(io.StringIO(to_csv(latency_frame()))))
    assert rows[0]["latency_median_ms_ci_low"] == "11.91" and rows[1]["latency_median_ms_ci_high"] == ""
    assert float(rows[1]["latency_median_ms"]) == 1234.5


def test_nested_columns_are_left_out_of_the_csv():
    frame = latency_frame().with_columns(pl.Series("run_ids", [["a"], ["b", "c"]]))
    assert "run_ids" not in to_csv(frame).splitlines()[0]


def test_markdown_escape_keeps_a_cell_one_cell():
    assert markdown_escape("jetson|nano\\x\ny") == r"jetson\|nano\\x y"


def test_latex_escape_specials_and_symbols():
    assert latex_escape("pi_4 50% #1 & {x} ~^ \\") == (
        r"pi\_4 50\% \#1 \& \{x\} \textasciitilde{}\textasciicircum{} \textbackslash{}"
    )
    assert latex_escape("<a|b>") == r"\textless{}a\textbar{}b\textgreater{}"
    assert latex_escape("1.8× ±4 % – µs ≥ 2 · 3 …") == (
        r"1.8$\times$ $\pm$4 \% -- $\mu$s $\geq$ 2 $\cdot$ 3 \dots{}"
    )


def test_latex_escape_accents_and_other_scripts():
    assert latex_escape("été") == r"{\'{e}}t{\'{e}}"
    assert latex_escape("Straße") == r"Stra{\ss}e"
    assert latex_escape("板卡") == "??", (
        "a character pdflatex cannot set without a package is replaced, not fatal"
    )
