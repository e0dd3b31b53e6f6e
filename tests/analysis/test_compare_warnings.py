"""compare's warnings (edgestats/analysis/compare/cautions.py) on hand-made per-run frames: noisy
runs counted per side with their reasons grouped, the between-run spread (coefficient of
variation of run medians) against numpy's, only the matched configurations' runs counted, and
no warning (and the same verdicts) where the runs are quiet and tight."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
import pytest

from edgestats.analysis.compare.cautions import SPREAD_LIMIT_CV, reason_kind
from edgestats.analysis.compare.comparison import Selection, compare_runs

A, B = Selection(Path("a.duckdb")), Selection(Path("b.duckdb"))
CPU = "other processes used 85 % of 4 CPUs (> 10 %)"
LOAD = "load average 5.2 before the run (> 1 per CPU)"


def runs_frame(medians_ms: dict[str, list[float]], reasons: dict[str, list[str | None]] | None = None):
    """Per-run rows as load_data gives them; `reasons` holds each run's noise_reason (None: quiet)."""
    rows = []
    for model, ms in medians_ms.items():
        flags = (reasons or {}).get(model, [None] * len(ms))
        rows += [
            {
                "model": model,
                "run_id": f"{model}-{j}",
                "run_idx": j,
                "latency_median_ms": m,
                "noisy": why is not None,
                "noise_reason": why,
            }
            for j, (m, why) in enumerate(zip(ms, flags))
        ]
    return pl.DataFrame(rows, schema_overrides={"noise_reason": pl.Utf8})


TIGHT_A = {"cnn9": [10.0, 10.1, 9.9], "resnet": [40.0, 40.4, 39.8]}
TIGHT_B = {"cnn9": [10.2, 10.1, 10.3], "resnet": [40.1, 39.9, 40.3]}


@pytest.mark.parametrize(
    ("reason", "kind"),
    [
        (CPU, "other processes used … of … CPUs"),
        (LOAD, "load average … before the run"),
        ("swapped 12.5 MiB (> 1 MiB)", "swapped …"),
        ("3 thermal throttle events", "… thermal throttle events"),
        ("firmware throttling (get_throttled 0x50005)", "firmware throttling"),
        ("CPU frequency capped to 1500 MHz during the run", "CPU frequency capped to … during the run"),
        ("temperature 81 C (>= 80 C)", "temperature …"),
        ("governor changed to powersave", "governor changed to powersave"),
    ],
)
def test_a_reason_s_kind_drops_its_figures(reason, kind):
    assert reason_kind(reason) == kind


def test_noisy_runs_are_counted_per_side_with_their_reasons():
    reasons_a = {"cnn9": [f"{CPU}; {LOAD}", CPU, None], "resnet": [None, None, None]}
    reasons_b = {"resnet": [LOAD, None, None]}
    comparison = compare_runs(A, B, runs_frame(TIGHT_A, reasons_a), runs_frame(TIGHT_B, reasons_b))
    [warning] = comparison.warnings
    document = warning.as_dict()
    assert document["kind"] == "noisy"
    assert document["n_noisy"] == {"a": 2, "b": 1} and document["n_runs"] == {"a": 6, "b": 6}
    assert document["reasons"] == {"other processes used … of … CPUs": 2, "load average … before the run": 2}
    assert "3 of 12 runs compared were flagged noisy" in warning.message
    assert "2 of 6 on A, 1 of 6 on B" in warning.message
    assert "edgestats doctor" in warning.next_step and "noisy IS NOT TRUE" in warning.next_step
    assert comparison.to_json()["warnings"] == [document]


def test_noisy_runs_of_an_unmatched_configuration_do_not_count():
    a = {**TIGHT_A, "mobilenet": [3.0, 3.1]}
    reasons = {"mobilenet": [CPU, CPU]}
    comparison = compare_runs(A, B, runs_frame(a, reasons), runs_frame(TIGHT_B))
    assert comparison.unmatched and comparison.warnings == []


def test_a_wide_between_run_spread_is_named_with_its_coefficient_of_variation():
    wide_b = {"cnn9": TIGHT_B["cnn9"], "resnet": [40.0, 52.0, 33.0]}
    comparison = compare_runs(A, B, runs_frame(TIGHT_A), runs_frame(wide_b))
    [warning] = comparison.warnings
    values = np.array(wide_b["resnet"])
    cv = np.std(values, ddof=1) / np.mean(values)
    assert cv > SPREAD_LIMIT_CV
    [entry] = warning.details["configurations"]
    assert entry["side"] == "b" and entry["config"] == {"model": "resnet"} and entry["n_runs"] == 3
    assert entry["cv"] == pytest.approx(cv, rel=1e-12)
    assert f"{cv:.0%} over 3 runs of B, model=resnet" in warning.message
    assert "in 1 of 2 configurations" in warning.message
    assert "collect --until-precise" in warning.next_step


def test_quiet_tight_runs_give_no_warning_and_a_warning_never_changes_a_verdict():
    quiet = compare_runs(A, B, runs_frame(TIGHT_A), runs_frame(TIGHT_B))
    assert quiet.warnings == [] and quiet.to_json()["warnings"] == []
    flagged = {m: [CPU] * len(ms) for m, ms in TIGHT_A.items()}
    noisy = compare_runs(A, B, runs_frame(TIGHT_A, flagged), runs_frame(TIGHT_B, flagged))
    assert [w.kind for w in noisy.warnings] == ["noisy"]
    assert [t.as_dict() for _, ts in noisy.matched for t in ts] == [
        t.as_dict() for _, ts in quiet.matched for t in ts
    ]
    assert noisy.regressions == quiet.regressions


def test_runs_without_a_noise_column_give_no_noise_warning():
    """Frames of imports and older DBs may lack the sentinel's columns."""
    plain = runs_frame(TIGHT_A).drop("noisy", "noise_reason")
    assert compare_runs(A, B, plain, runs_frame(TIGHT_B)).warnings == []
