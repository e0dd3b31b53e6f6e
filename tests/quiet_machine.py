"""The quiet lane's machine check (tests marked `quiet`, applied by tests/conftest.py): before the
test, wait for a quiet machine by the noise sentinel's own rule (collectors/telemetry/sentinel.py:
other processes' CPU over a 1 s window, swap, throttling, temperature); during it, measure how busy
the machine was; when it fails, say so in its failure, so that a busy machine is not read as a
broken product. A quiet test that failed 2 of 5 times on a loaded machine passed 5 of 5 on a
quiet one, and said only "comparison failed".

The wait is bounded (WAIT_S per test, WAIT_TOTAL_S for the lane; EDGESTATS_TEST_QUIET_WAIT_S sets
the first, 0 turns waiting off): a machine that never quiets down still runs the tests, and
their failures then say how busy it was.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from edgestats.collectors.telemetry.sentinel import (
    SYSTEM_ROOT,
    MachineState,
    NoiseThresholds,
    cpu_count,
    during,
    judge,
    wait_until_quiet,
)

WAIT_S = float(os.environ.get("EDGESTATS_TEST_QUIET_WAIT_S", "120"))
WAIT_TOTAL_S = 2.5 * WAIT_S  # a machine busy all along costs the lane this much, not WAIT_S per test
LIMITS = NoiseThresholds()  # the sentinel's defaults: above 10 % of the CPUs used by others is busy


@dataclass
class Wait:
    """What the wait before a test found: seconds waited, and why the machine was still busy."""

    waited_s: float = 0.0
    reasons: list[str] | None = None  # None: quiet (or no wait asked)


@dataclass
class Lane:
    """The lane's waiting so far (one per session)."""

    waited_s: float = 0.0


def wait_for_quiet(
    lane: Lane,
    *,
    root: Path = SYSTEM_ROOT,
    limit_s: float = WAIT_S,
    window_s: float = 1.0,
    sleep: Callable[[float], None] = time.sleep,
) -> Wait:
    """Wait until a window of `window_s` is quiet, up to `limit_s` (and what is left of the lane's)."""
    allowed_s = min(limit_s, WAIT_TOTAL_S - lane.waited_s)
    if allowed_s < window_s:
        return Wait()
    found = wait_until_quiet(LIMITS, allowed_s, root=root, window_s=window_s, sleep=sleep)
    lane.waited_s += found["waited_s"]
    return Wait(found["waited_s"], None if found["quiet"] else found["reasons"])


def busy_during(before: MachineState, after: MachineState) -> dict[str, Any]:
    """The sentinel's figures of the test's window, and its reasons to call it busy ([]: quiet)."""
    figures = during(before, after)
    return {
        **figures,
        "reasons": judge(before, after, figures, LIMITS, load=False),
        "cpus": cpu_count(before),
    }


def describe(busy: dict[str, Any], wait: Wait, before: MachineState) -> str:
    """How busy the machine was, for a quiet test's failure: one paragraph."""
    load = f"; 1-minute load average {before.loadavg[0]:g} before it" if before.loadavg else ""
    if "outside_cpu_pct" in busy:
        used = (
            f"other processes used {busy['outside_cpu_pct']:.0f} % of {busy['cpus']} CPUs "
            f"({busy['outside_cpu_cores']:.2f} cores) on average during the test's {busy['seconds']:.1f} s"
        )
    else:
        used = "the CPU time of other processes could not be read here"
    if wait.reasons:
        waited = (
            f" It waited {wait.waited_s:.0f} s for a quiet machine first and found none ({wait.reasons[0]})."
        )
    else:
        waited = f" It waited {wait.waited_s:.0f} s for a quiet machine first." if wait.waited_s >= 1 else ""
    if busy["reasons"]:
        return (
            f"The machine was busy by the noise sentinel's rule ({'; '.join(busy['reasons'])}): {used}{load}."
            f"{waited} A timing test fails on a busy machine for the machine's sake: run the quiet lane "
            "again when the machine is quiet (`make test` runs it alone, after the parallel lane)."
        )
    return (
        f"The machine was quiet by the noise sentinel's rule: {used} (busy above {LIMITS.cpu_pct:g} %)"
        f"{load}.{waited} The failure is not the machine's load."
    )


def tell_how_busy(report: Any, busy: dict[str, Any], wait: Wait, before: MachineState) -> None:
    """Add how busy the machine was to a failed test's report: before its summary line's message
    ("[machine busy: ...]" or "[machine quiet]"), and in full in a section below its traceback."""
    text = describe(busy, wait, before)
    crash = getattr(report.longrepr, "reprcrash", None)
    if crash is not None:
        crash.message = (
            f"[machine busy: {busy['reasons'][0]}] " if busy["reasons"] else "[machine quiet] "
        ) + (crash.message)
    if hasattr(report.longrepr, "addsection"):
        report.longrepr.addsection("the machine during this quiet test", text)
    else:  # pytest.fail(pytrace=False): the failure is a string
        report.longrepr = f"{report.longrepr}\n\n{text}"
