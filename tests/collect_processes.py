"""Running `edgestats collect` as a process of its own, as a user does, and finding the processes
it left: shared by the signal tests (tests/collectors/test_signals.py, tests/reliability/)."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from pathlib import Path


def collect_cmd(db: Path, cache: Path, *extra: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "edgestats",
        "collect",
        "--db",
        str(db),
        "-f",
        "onnxruntime",
        "-m",
        "cnn9",
        "--cache-dir",
        str(cache),
        "--warmup",
        "1",
        *extra,
    ]


def start(cmd: list[str]) -> subprocess.Popen:
    # Its own session, like a shell job: the test's signals go to collect alone, as kill(1) does.
    return subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True
    )


def processes_mentioning(text: str) -> list[int]:
    """PIDs whose command line holds `text` (the trial's folder): collect, its workers, preparers."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cmdline = (entry / "cmdline").read_bytes()
                state = (entry / "stat").read_text().split(") ")[-1][:1]
            except OSError:
                continue
            if text.encode() in cmdline and state != "Z":
                found.append(int(entry.name))
    return found


def none_left_within(text: str, seconds: float) -> list[int]:
    deadline = time.monotonic() + seconds
    while (left := processes_mentioning(text)) and time.monotonic() < deadline:
        time.sleep(0.05)
    return left


def read_lines(proc: subprocess.Popen, lines: list[str]) -> threading.Thread:
    thread = threading.Thread(target=lambda: lines.extend(proc.stdout), daemon=True)
    thread.start()
    return thread
