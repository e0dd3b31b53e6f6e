"""edgestats.workflows.baseline and .prepare from Python: the commands' options as keywords (the
same declarations as their flags), --start read before anything is measured, and an unknown
keyword naming the valid ones. No framework: a meter's log stands for the power source."""

from __future__ import annotations

import pytest

from edgestats.options import OptionError
from edgestats.workflows.baseline import baseline
from edgestats.workflows.prepare import prepare


def meter_log(path, start_s: float = 1000.0, end_s: float = 1100.0):
    rows = [
        f"{start_s + k / 10:.3f},{2.0 + (0.05 if k % 2 else -0.05):.3f},5.1"
        for k in range(int((end_s - start_s) * 10))
    ]
    path.write_text("timestamp,power_w,voltage_v\n" + "\n".join(rows) + "\n")
    return path


def test_baseline_takes_its_options_as_keywords(tmp_path):
    meter = meter_log(tmp_path / "meter.csv")
    told, done = [], []
    row = baseline(
        tmp_path / "r.duckdb",
        power=f"csv:{meter}",
        seconds=30,
        start="1005",
        device_name="lab-pi",
        on_start=lambda: told.append("start"),
        on_progress=done.append,
    )
    assert told == ["start"] and row["device"] == "lab-pi" and abs(row["mean_power_w"] - 2.0) < 0.01
    assert row["n"] == 300


def test_baseline_refuses_a_start_time_before_measuring(tmp_path):
    told = []
    with pytest.raises(OptionError, match="'yesterday' is neither Unix seconds nor ISO 8601") as refused:
        baseline(tmp_path / "r.duckdb", power="csv:x.csv", start="yesterday", on_start=lambda: told.append(1))
    assert refused.value.flag == "--start" and not told and not (tmp_path / "r.duckdb").exists()
    with pytest.raises(TypeError, match="secs.*seconds"):
        baseline(tmp_path / "r.duckdb", secs=3)


def test_prepare_names_its_valid_keywords(tmp_path):
    with pytest.raises(TypeError, match="iterations.*framework"):
        prepare(tmp_path / "pack", framework="onnxruntime", model="cnn9", iterations=3)
    assert not (tmp_path / "pack").exists()
