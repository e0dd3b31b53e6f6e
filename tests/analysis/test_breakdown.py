"""breakdown (where an inference run's time goes, phase by phase) on a real DB built from pCAMP's
Table 3, on hand-built frames and on pCAMP's published rows. Separate from test_summary.py: the
phase breakdown is its own analysis, with its own data (phases, not latencies)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
import pyarrow as pa
import pytest
from analysis_builders import import_sample, runs_frame

from edgestats.analysis import AnalysisOptions, run_analyses
from edgestats.analysis.breakdown.analysis import breakdown
from edgestats.analysis.estimators.ratios import PAIRED_LOG_METHOD
from edgestats.store.results import Store

TABLE3 = {  # pCAMP Table 3, PyTorch on Jetson TX2 (s)
    "alexnet": {
        "import": 0.77,
        "load_model": 9.50,
        "load_first_input": 0.12,
        "first_inference": 2.34,
        "load_second_input": 0.075,
        "second_inference": 0.006,
        "steady": 1.35,
        "total": 14.17,
    },
    "squeezenet": {
        "import": 0.74,
        "load_model": 6.20,
        "load_first_input": 0.15,
        "first_inference": 1.76,
        "load_second_input": 0.07,
        "second_inference": 0.019,
        "steady": 1.45,
        "total": 10.41,
    },
}


def write_table3(db: Path, repeats: int = 1, jitter: float = 0.0) -> None:
    rng = np.random.default_rng(5)
    with Store.open(db) as store:
        device = store.register_device({"name": "Jetson TX2"})
        for model, phases in TABLE3.items():
            for _ in range(repeats):
                start, starts, ends = 0, [], []
                for phase, seconds in phases.items():
                    seconds *= 1 + jitter * rng.standard_normal()
                    begin = 0 if phase == "total" else start
                    end = (
                        begin + int(phases["total"] * 1e9) if phase == "total" else begin + int(seconds * 1e9)
                    )
                    starts.append(begin)
                    ends.append(end)
                    start = end if phase != "total" else start
                store.write_run(
                    {
                        "device_id": device,
                        "kind": "inference",
                        "status": "ok",
                        "framework": "pytorch",
                        "model": model,
                        "batch_size": 1,
                        "iterations": 100,
                    },
                    phases=pa.table(
                        {
                            "seq": pa.array(range(len(phases)), pa.int32()),
                            "phase": list(phases),
                            "start_ns": starts,
                            "end_ns": ends,
                        }
                    ),
                )


def test_breakdown_reproduces_pcamp_insight_1(tmp_path):
    """Table 3: loading AlexNet takes 9.50 s, 100 inferences 1.35 s — load costs 7× the run."""
    db = tmp_path / "t3.duckdb"
    write_table3(db)
    result = run_analyses(db, AnalysisOptions(only="breakdown"))["breakdown"]
    entries = {e["group"]["model"]: e for e in result.to_json()}
    alexnet = entries["alexnet"]
    assert alexnet["load_over_steady"]["estimate"] == pytest.approx(9.50 / 1.35, rel=1e-6)
    assert alexnet["load_exceeds_steady"] is True
    assert (
        alexnet["load_over_steady"]["ci_low"] is None
        and "1 run (an interval" in alexnet["load_over_steady"]["note"]
    )
    shares = {p["phase"]: p["share_of_total"] for p in alexnet["phases"]}
    assert shares["load_model"] == pytest.approx(9.50 / 14.17, rel=1e-6)
    # other = total - the four named phases: input loads, the second inference and 9 ms unaccounted
    assert shares["other"] == pytest.approx((14.17 - 0.77 - 9.50 - 2.34 - 1.35) / 14.17, rel=1e-4)
    assert entries["squeezenet"]["load_over_steady"]["estimate"] == pytest.approx(6.20 / 1.45, rel=1e-6)
    assert set(result.frames["ratios"]["ratio"]) == {"load_model / steady", "load_model / one inference"}


def test_breakdown_interval_across_repeated_runs(tmp_path):
    db = tmp_path / "t3r.duckdb"
    write_table3(db, repeats=6, jitter=0.05)
    (alexnet, _) = run_analyses(db, AnalysisOptions(only="breakdown", n_resamples=999))["breakdown"].to_json()
    ratio = alexnet["load_over_steady"]
    # 6 runs are too few to resample: the paired log-scale t interval (tests/analysis/test_ratio_intervals.py)
    assert ratio["n"] == 6 and ratio["method"] == PAIRED_LOG_METHOD
    assert 1 < ratio["ci_low"] < ratio["estimate"] < ratio["ci_high"]
    assert alexnet["confident"] is True


def test_breakdown_gives_compile_its_own_phase_only_where_runs_have_one():
    """torch.compile's compile phase is a phase of its own (not lumped into `other`); a runtime
    without one gets no compile phase at all, not a 0 s one."""

    runs = runs_frame(
        [
            {"runtime": "torch-compile", "latency_median_ms": 1.0, "iterations": 10},
            {"runtime": "torch-eager", "latency_median_ms": 1.0, "iterations": 10},
        ]
    )
    seconds = {
        0: {
            "import": 1.0,
            "load_model": 2.0,
            "compile": 1.5,
            "first_inference": 0.01,
            "steady": 0.03,
            "total": 4.7,
        },
        1: {"import": 1.0, "load_model": 0.02, "first_inference": 0.01, "steady": 0.03, "total": 1.2},
    }
    phases = pl.DataFrame(
        [
            {"run_idx": i, "phase": name, "seq": k, "duration_s": v}
            for i, by_phase in seconds.items()
            for k, (name, v) in enumerate(by_phase.items())
        ],
        schema={"run_idx": pl.Int32, "phase": pl.String, "seq": pl.Int64, "duration_s": pl.Float64},
    )
    entries = {
        e["group"]["runtime"]: {p["phase"]: p["estimate"] for p in e["phases"]}
        for e in breakdown(runs, phases, by=["runtime"]).to_json()
    }
    assert entries["torch-compile"]["compile"] == pytest.approx(1.5)
    assert entries["torch-compile"]["other"] == pytest.approx(4.7 - 1.0 - 2.0 - 1.5 - 0.01 - 0.03)
    assert "compile" not in entries["torch-eager"]
    assert entries["torch-eager"]["other"] == pytest.approx(1.2 - 1.0 - 0.02 - 0.01 - 0.03)


def test_breakdown_on_imported_pcamp_rows(tmp_path):
    db = import_sample(tmp_path / "p.duckdb", "pcamp_inference.csv", "inference")
    entries = run_analyses(db, AnalysisOptions(only="breakdown", by=["device", "model"]))[
        "breakdown"
    ].to_json()
    tx2 = next(e for e in entries if e["group"] == {"device": "Jetson TX2", "model": "alexnet"})
    # one model load costs as much as ~700 inferences of 13.5 ms
    assert tx2["load_over_one_inference"]["estimate"] == pytest.approx(9.50 / 0.0135)
    assert tx2["load_over_steady"]["estimate"] is None  # no iteration count in the row: no steady time
