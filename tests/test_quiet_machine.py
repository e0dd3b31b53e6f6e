"""The quiet lane's machine check (tests/quiet_machine.py, applied by conftest.py to tests marked
`quiet`) on fake machine states: the wait ends at the first quiet window, or at its bound with
the reason; a failed quiet test's report says how busy the machine was, in its summary line and
in full, or that it was quiet."""

from __future__ import annotations

from pathlib import Path

import pytest
from _pytest.reports import TestReport
from procfs_fakes import write_tree
from quiet_machine import Lane, Wait, busy_during, describe, tell_how_busy, wait_for_quiet

from edgestats.collectors.telemetry.procfs import CLK_TCK
from edgestats.collectors.telemetry.sentinel import MachineState


def state(t_s: float, busy_ticks: int, all_ticks: int, load: float = 0.5) -> MachineState:
    """A machine of 2 CPUs as the sentinel reads it; this process used no CPU (own_cpu_s 0)."""
    return MachineState(
        t_s=t_s,
        cpu_busy_ticks=busy_ticks,
        cpu_all_ticks=all_ticks,
        own_cpu_s=0.0,
        loadavg=[load, 0, 0],
        cpus=2,
    )


# 10 s on 2 CPUs: 20 s of CPU capacity; others used 17 s of it (85 %, 1.7 cores) or 0.4 s (2 %).
BEFORE = state(100.0, 0, 0, load=3.5)
BUSY = state(110.0, 17 * CLK_TCK, 20 * CLK_TCK)
QUIET = state(110.0, CLK_TCK * 2 // 5, 20 * CLK_TCK)


def failed_report() -> TestReport:
    try:
        assert 1.02 > 1.05, "comparison failed"
    except AssertionError as exc:
        longrepr = pytest.ExceptionInfo.from_exception(exc).getrepr()
    return TestReport("t.py::test_timing", ("t.py", 1, "test_timing"), {}, "failed", longrepr, "call")


def test_a_busy_machine_is_named_in_the_failure_with_how_busy_it_was():
    busy = busy_during(BEFORE, BUSY)
    assert busy["reasons"] == ["other processes used 85 % of 2 CPUs (> 10 %)"]
    text = describe(busy, Wait(120.4, ["other processes used 60 % of 2 CPUs (> 10 %)"]), BEFORE)
    assert text.startswith(
        "The machine was busy by the noise sentinel's rule (other processes used 85 % of 2 CPUs (> 10 %)): "
        "other processes used 85 % of 2 CPUs (1.70 cores) on average during the test's 10.0 s; 1-minute "
        "load average 3.5 before it."
    ), text
    assert "It waited 120 s for a quiet machine first and found none (other processes used 60 %" in text
    report = failed_report()
    tell_how_busy(report, busy, Wait(120.4, ["other processes used 60 % of 2 CPUs (> 10 %)"]), BEFORE)
    assert report.longrepr.reprcrash.message.startswith(
        "[machine busy: other processes used 85 % of 2 CPUs (> 10 %)] AssertionError: comparison failed"
    )
    assert "The machine was busy by the noise sentinel's rule" in str(report.longrepr)


def test_a_quiet_machine_says_the_failure_is_not_the_load():
    report = failed_report()
    tell_how_busy(report, busy_during(BEFORE, QUIET), Wait(), BEFORE)
    assert report.longrepr.reprcrash.message.startswith("[machine quiet] AssertionError")
    assert "The machine was quiet by the noise sentinel's rule: other processes used 2 % of 2 CPUs" in str(
        report.longrepr
    )
    assert "The failure is not the machine's load." in str(report.longrepr)


def fake_proc(root: Path, busy_ticks: int, all_ticks: int) -> None:
    idle = all_ticks - busy_ticks
    write_tree(
        root, {"proc/stat": f"cpu  {busy_ticks} 0 0 {idle} 0 0 0 0 0 0\n", "proc/loadavg": "0.1 0 0 1/9 1\n"}
    )


def test_the_wait_ends_at_the_first_quiet_window_or_at_its_bound(tmp_path: Path):
    windows = {"n": 0}

    def busy_then_quiet(window_s: float) -> None:  # one busy window (others use 90 %), then quiet ones
        windows["n"] += 1
        total = 1000 * windows["n"]
        fake_proc(tmp_path, 900 if windows["n"] == 1 else 900 + (total - 1000) // 100, total)

    fake_proc(tmp_path, 0, 0)
    lane = Lane()
    found = wait_for_quiet(lane, root=tmp_path, limit_s=5.0, window_s=0.01, sleep=busy_then_quiet)
    assert found.reasons is None and windows["n"] == 2  # the second window was quiet

    def always_busy(window_s: float) -> None:
        windows["n"] += 1
        fake_proc(tmp_path, 900 * windows["n"], 1000 * windows["n"])

    gave_up = wait_for_quiet(lane, root=tmp_path, limit_s=0.05, window_s=0.01, sleep=always_busy)
    assert gave_up.reasons and gave_up.reasons[0].startswith("other processes used 90 % of")
    assert 0.0 <= gave_up.waited_s <= 0.1 and lane.waited_s >= gave_up.waited_s
