"""The peak RSS of an `edgestats` command in a child process, for the tests of bounded memory
(tests/store/test_query_streaming.py, tests/imports/test_import_memory.py).

Linux counts in a process's ru_maxrss the peak of the memory it had before exec, and a child
forked from pytest starts with pytest's (hundreds of MB once polars is loaded). So a small Python
process starts the command and reports the command's own peak (os.wait4): what the command
inherits before its exec is that small process's few MB.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile

MEASURE = """
import os, subprocess, sys
proc = subprocess.Popen(sys.argv[2:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
stderr = proc.stderr.read()
_, status, usage = os.wait4(proc.pid, 0)
with open(sys.argv[1], "w") as f:
    f.write(f"{os.waitstatus_to_exitcode(status)} {usage.ru_maxrss}\\n{stderr.decode(errors='replace')}")
"""


def peak_rss_bytes(*args: str) -> int:
    """`python -m edgestats ARGS`, its stdout on /dev/null: its peak RSS in bytes."""
    with tempfile.NamedTemporaryFile("r", suffix=".rss") as report:
        subprocess.run(
            [sys.executable, "-c", MEASURE, report.name, sys.executable, "-m", "edgestats", *args], check=True
        )
        status, text = report.read().split("\n", 1)
    code, maxrss_kib = map(int, status.split())
    assert code == 0, text
    return maxrss_kib * 1024
