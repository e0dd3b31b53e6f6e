"""`doctor` and `collect` in a real terminal: a pseudo-terminal of 80 and of 120 columns (set with
TIOCSWINSZ, COLUMNS unset) runs the real command in a child process; every line the terminal shows
fits its width, and every word arrives whole (the words on the screen are the words of the
unwrapped text, in order).
Cost: about 45 s of test time (four real runs: two doctors of three probes each, and two one-run
collects, the first preparing cnn9 where the shared model cache lacks it), measured on 2 cores
busy with other work (load average 10); less on an idle machine."""

from __future__ import annotations

import fcntl
import json
import os
import pty
import re
import select
import struct
import subprocess
import sys
import termios
from pathlib import Path

import pytest

from edgestats.formatting import wrap_line

pytestmark = pytest.mark.frameworks  # doctor's probe imports onnxruntime; collect runs it

# Escape sequences rich writes to a terminal: colours, cursor moves and erases (CSI), titles (OSC).
ESCAPES = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[()][0-9A-Za-z]|\x1b[=>]"
)

# The child: the real CLI, with the text it wraps also written whole to a side file (the reference
# the screen's words are compared with). Nothing else is replaced.
CHILD = """
import json, sys
from pathlib import Path
side = Path(sys.argv[1])
written = []
import edgestats.reports.terminal.collect as progress
import edgestats.reports.terminal.doctor as doctor_cli
from edgestats.cli import app

real_render, real_say, real_echo = doctor_cli.render_text, progress.say, progress.echo
def render_text(report, width=None):
    written.append(real_render(report))
    return real_render(report, width)
def say(console, message, *, markup=True):
    written.append(console.render_str(message, markup=markup).plain)
    real_say(console, message, markup=markup)
def echo(message, *, err=False):
    written.append(message)
    real_echo(message, err=err)
doctor_cli.render_text = render_text
progress.say = say
progress.echo = echo
try:
    app(sys.argv[2:], prog_name="edgestats")
finally:
    side.write_text(json.dumps(written))
"""


def in_terminal(args: list[str], columns: int, side: Path, timeout_s: float = 300) -> tuple[int, str]:
    """Run the CLI with `args` on a pseudo-terminal `columns` wide (stdin, stdout and stderr all
    on it, as in an interactive shell); its exit status and everything it wrote."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 50, columns, 0, 0))
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    env["TERM"] = "xterm-256color"
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(side), *args],
        stdin=slave,
        stdout=slave,
        stderr=slave,
        env=env,
        start_new_session=True,  # the pty becomes its controlling terminal
    )
    os.close(slave)
    chunks = []
    try:
        while True:
            ready, _, _ = select.select([master], [], [], timeout_s)
            assert ready, f"{args}: no output for {timeout_s} s"
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: the child closed the terminal
                break
            if not chunk:
                break
            chunks.append(chunk)
    finally:
        os.close(master)
    return child.wait(timeout=60), b"".join(chunks).decode("utf-8", errors="replace")


def screen_segments(raw: str) -> list[str]:
    """Every piece of text the terminal drew on one line: escapes removed, split at line feeds and
    carriage returns (a progress bar redraws its line after a return)."""
    return [seg for seg in re.split(r"\r\n|\n|\r", ESCAPES.sub("", raw)) if seg.strip()]


def assert_fits(raw: str, columns: int) -> list[str]:
    """Every line within the width, but for a line that is one word longer than the width (a long
    path): it cannot be wrapped without breaking the word, so it stands alone on its line."""
    segments = screen_segments(raw)
    too_long = [seg for seg in segments if len(seg.rstrip()) > columns and len(seg.split()) > 1]
    assert not too_long, f"{len(too_long)} lines wider than {columns} columns: {too_long}"
    return segments


def assert_words_whole(segments: list[str], written: list[str]) -> None:
    """The words of the unwrapped text appear on the screen whole and in order (other words may
    come between them: the progress bar's, the spinner's): a word cut in two would be two words."""
    screen = iter(" ".join(segments).split())
    for word in " ".join(written).split():
        assert any(token == word for token in screen), f"{word!r} is not on the screen whole"


@pytest.mark.parametrize("columns", [80, 120])
def test_doctor_fits_the_terminal(tmp_path, columns):
    # three probes, one per section, rather than every framework's import (test_doctor.py has those)
    args = ["doctor", "--only", "onnxruntime", "--only", "nvml", "--only", "polars"]
    status, raw = in_terminal(args, columns, tmp_path / "side.json")
    assert status == 0, raw
    written = json.loads((tmp_path / "side.json").read_text())
    assert len(written) == 1 and written[0].startswith("edgestats "), written
    segments = assert_fits(raw, columns)
    assert_words_whole(segments, written)
    if columns == 80:  # the report has lines longer than 80 columns: wrapping was exercised
        longest = max(written[0].splitlines(), key=len)
        assert len(longest) > columns and len(wrap_line(longest, columns)) > 1, longest


@pytest.mark.parametrize("columns", [80, 120])
def test_collect_fits_the_terminal(tmp_path, model_cache, columns):
    db = tmp_path / "r.duckdb"
    args = ["collect", "-f", "onnxruntime", "-m", "cnn9", "-n", "3", "--warmup", "1", "--sample-hz", "0"]
    args += ["--power", "auto", "--db", str(db), "--cache-dir", str(model_cache)]
    status, raw = in_terminal(args, columns, tmp_path / "side.json")
    assert status == 0, raw
    written = json.loads((tmp_path / "side.json").read_text())
    warning = next(line for line in written if line.startswith("warning: --iterations 3"))
    assert len(warning) > 120, warning  # a line that wraps at either width
    segments = assert_fits(raw, columns)
    assert_words_whole(segments, written)
    assert any(seg.startswith("ok onnxruntime") for seg in segments), segments
