"""Nothing collect started outlives it, however it dies (issue 39): its workers and model preparers
are spawned with the kernel's parent-death signal (collectors/core/processes.py `spawn_group`,
PR_SET_PDEATHSIG), so a SIGKILL of collect leaves no process computing 1 s later.

The first test spawns a child through `spawn_group` from a parent that is then SIGKILLed (cheap:
the preparer and the worker are both spawned so); the second runs a real collect (ONNX Runtime,
cnn9, the session's model cache) and SIGKILLs it mid-measurement.
Cost: about 6 s (the collect's start and its first latencies).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid

import pytest
from collect_processes import collect_cmd, none_left_within, processes_mentioning, read_lines, start


def test_a_child_of_spawn_group_dies_with_its_parent_killed_by_sigkill():
    marker = f"edgestats-child-{uuid.uuid4()}"
    parent_code = (
        "import os, sys, time\n"
        "from edgestats.collectors.core.processes import spawn_group\n"
        "child = spawn_group([sys.executable, '-c', 'import time; time.sleep(60)', os.environ['MARK']])\n"
        "print(child.pid, flush=True)\n"
        "time.sleep(60)\n"
    )
    parent = subprocess.Popen(  # the marker in its environment, not on its command line
        [sys.executable, "-c", parent_code],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "MARK": marker},
    )
    try:
        child = int(parent.stdout.readline())
        assert processes_mentioning(marker) == [child], "the child is running before the kill"
        os.kill(parent.pid, signal.SIGKILL)
        parent.wait(timeout=10)
        left = none_left_within(marker, 1.0)
    finally:
        parent.kill()
        for pid in processes_mentioning(marker):
            os.kill(pid, signal.SIGKILL)  # only what this test started: its marker is unique
    assert left == [], f"the child {child} was still running 1 s after its parent was SIGKILLed"


@pytest.mark.frameworks  # runs ONNX Runtime workers
@pytest.mark.slow
def test_sigkill_of_collect_mid_run_leaves_no_worker_after_one_second(tmp_path, model_cache):
    """Was: the worker was alive and computing 1, 5, 10 and 20 s after its collect was killed."""
    db = tmp_path / "r.duckdb"
    proc = start(collect_cmd(db, model_cache, "-n", "1000000"))  # the cap: it would run for minutes
    lines: list[str] = []
    reader = read_lines(proc, lines)
    spool = tmp_path / ".r.duckdb.spool"
    deadline = time.monotonic() + 60
    while not any(p.read_text().count('"t": "lat"') > 5 for p in spool.glob("*.jsonl")):  # measuring now
        assert time.monotonic() < deadline and proc.poll() is None, "".join(lines)
        time.sleep(0.05)
    workers = [pid for pid in processes_mentioning(str(tmp_path)) if pid != proc.pid]
    assert workers, "a worker is measuring"
    os.kill(proc.pid, signal.SIGKILL)
    assert proc.wait(timeout=10) == -signal.SIGKILL
    reader.join(5)
    left = none_left_within(str(tmp_path), 1.0)
    for pid in left:
        os.kill(pid, signal.SIGKILL)  # the test's own leftovers (their command line names its folder)
    assert left == [], f"workers {left} still running 1 s after collect was SIGKILLed"
    recovered = subprocess.run(
        collect_cmd(db, model_cache, "-n", "3"), capture_output=True, text=True, timeout=120
    )  # the next collect stores the killed run from its spool: nothing lost
    assert recovered.returncode == 0, recovered.stdout + recovered.stderr
    assert "Traceback" not in recovered.stdout + recovered.stderr
