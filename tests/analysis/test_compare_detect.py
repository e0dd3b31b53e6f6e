"""compare's minimum detectable effect in words and the runs that would settle an inconclusive
verdict (edgestats/analysis/compare/detect.py): the words at each boundary and over twenty orders
of magnitude; the runs a side against an independent computation (scipy's Welch interval on
samples built with exactly the measured SDs); and, through compare_runs, a 2-run comparison of
noisy runs whose detectable change is astronomically large says so in words and keeps the number."""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from scipy import stats

from edgestats.analysis.compare.comparison import Selection, compare_runs
from edgestats.analysis.compare.detect import change_text, detect_text, resolve_step
from edgestats.analysis.estimators.welch import Design

A, B = Selection(Path("a.duckdb")), Selection(Path("b.duckdb"))


@pytest.mark.parametrize(
    ("mde_pct", "said"),
    [
        (7.86, "could detect ≥ 7.9%"),
        (43.2, "could detect ≥ 43%"),
        (99.4, "could detect ≥ 99%"),
        (100.0, "could detect only a change ≥ 2×"),
        (210.0, "could detect only a change ≥ 3.1×"),
        (8578.7, "could detect only a change ≥ 86.8×"),
        (9_901.0, "could detect no change below 100×"),
        (4.34e17, "could detect no change below 100×"),
        (None, "could detect no change of any size"),
        (math.inf, "could detect no change of any size"),
    ],
)
def test_the_detectable_change_in_words(mde_pct, said):
    assert detect_text(mde_pct) == said


def test_no_figure_a_reader_cannot_use_over_twenty_orders_of_magnitude():
    """From 0.1 % to 1e20 %: at most 4 significant figures, no exponent, never a figure above 100×."""
    for pct in np.logspace(-1, 20, 400):
        text = detect_text(float(pct))
        figures = re.findall(r"[\d.,]+", text)
        assert "e+" not in text and len(text) <= 40, text
        assert all(len(f.replace(",", "").replace(".", "")) <= 4 for f in figures), text
        shown = change_text(float(pct))
        if shown is not None and shown.endswith("×"):
            assert 2 <= float(shown[:-1]) <= 100
            assert float(shown[:-1]) == pytest.approx(1 + pct / 100, rel=0.005)  # 3 significant figures


def exact_sd_sample(rng: np.random.Generator, n: int, sd: float) -> np.ndarray:
    """n values whose sample SD (ddof=1) is exactly sd."""
    z = rng.normal(size=n)
    return (z - z.mean()) / z.std(ddof=1) * sd


def welch_half_width(sd_a: float, sd_b: float, n: int, level: float) -> float:
    """Half the width of scipy's Welch interval of the difference of means, n values a side with
    these sample SDs (independent of edgestats' formulas)."""
    rng = np.random.default_rng(n)
    a, b = exact_sd_sample(rng, n, sd_a), exact_sd_sample(rng, n, sd_b)
    low, high = stats.ttest_ind(b, a, equal_var=False).confidence_interval(level)
    return (high - low) / 2


@pytest.mark.parametrize(
    ("sd_a", "n_a", "sd_b", "n_b", "level"),
    [(0.08, 3, 0.05, 3, 0.95), (0.03, 2, 0.06, 2, 0.95), (0.05, 4, 0.05, 4, 0.9), (0.02, 5, 0.07, 3, 0.95)],
)
def test_the_runs_to_resolve_are_the_fewest_whose_welch_interval_is_within_the_threshold(
    sd_a, n_a, sd_b, n_b, level
):
    step = resolve_step(Design(sd_a, n_a, sd_b, n_b), level=level, threshold=0.05)
    assert step is not None and step["target_rel_half_width"] == 0.05
    n = step["runs_needed"]
    assert n < 100  # below 100 runs the count is exact (past it, steps of 2 %)
    assert (
        welch_half_width(sd_a, sd_b, n, level)
        <= math.log1p(0.05)
        < welch_half_width(sd_a, sd_b, n - 1, level)
    )
    assert step["more_runs"] == n - min(n_a, n_b)
    said = f"about {step['more_runs']} more runs a side" if n_a == n_b else f"about {n} runs a side"
    assert step["text"] == f"{said} would resolve ±5%"


def test_runs_that_already_reach_the_threshold_are_told_the_half_threshold():
    """An inconclusive interval that straddles the band's edge: ±5 % is already reached with 6 runs
    at SD 0.02, so the step names the runs for ±2.5 %."""
    step = resolve_step(Design(0.02, 6, 0.02, 6), level=0.95, threshold=0.05)
    assert step["target_rel_half_width"] == 0.025
    n = step["runs_needed"]
    assert (
        welch_half_width(0.02, 0.02, n, 0.95) <= math.log1p(0.025) < welch_half_width(0.02, 0.02, n - 1, 0.95)
    )


def test_a_spread_no_count_of_runs_resolves_says_so():
    step = resolve_step(Design(3.0, 2, 3.0, 2), level=0.95, threshold=0.05)
    assert step["runs_needed"] is None and step["text"].startswith("more than 10,000 runs a side")


def test_two_noisy_runs_a_side_say_no_change_below_100x_and_keep_the_number():
    """The case behind "could detect ≥ 434,234,365,500,553,216%": 2 runs a side, run medians a
    factor of 3 apart. The JSON keeps the figure; the words say what it means; the next step
    names the runs (an independent check of the count as above)."""
    runs = pl.DataFrame(
        {
            "model": ["cnn9"] * 4,
            "framework": ["pytorch"] * 2 + ["onnxruntime"] * 2,
            "run_id": ["a1", "a2", "b1", "b2"],
            "run_idx": [0, 1, 2, 3],
            "latency_median_ms": [5.0, 16.0, 4.0, 13.0],
        }
    )
    a, b = runs.filter(pl.col("framework") == "pytorch"), runs.filter(pl.col("framework") == "onnxruntime")
    comparison = compare_runs(A, B, a, b)
    [(_, [test])] = comparison.matched
    document = test.as_dict()
    assert test.verdict == "inconclusive"
    assert document["min_detectable_pct"] is None or document["min_detectable_pct"] > 9_900
    assert document["min_detectable_text"] in (
        "could detect no change below 100×",
        "could detect no change of any size",
    )
    sd_a, sd_b = np.std(np.log([5.0, 16.0]), ddof=1), np.std(np.log([4.0, 13.0]), ddof=1)
    n = document["next_step"]["runs_needed"]
    assert welch_half_width(sd_a, sd_b, n, 0.95) <= math.log1p(0.05)
    assert n < 100 or welch_half_width(sd_a, sd_b, int(n * 0.97), 0.95) > math.log1p(0.05)
    assert document["next_step"]["more_runs"] == n - 2
    assert comparison.frame()["next_step"].to_list() == [document["next_step"]["text"]]
