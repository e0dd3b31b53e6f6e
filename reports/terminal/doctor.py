"""What `edgestats doctor` prints. A spinner while the probes import, then the report, as text
(collectors/doctor.py's render_text, at the terminal's width) or as one JSON object.

stdout is the report alone; the spinner is on stderr.
"""

from __future__ import annotations

import json
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import typer

from edgestats.collectors.doctor import render_text
from edgestats.formatting import terminal_width


@contextmanager
def probe_status() -> Iterator[ProbeStatus]:
    """The spinner on stderr while the report is built; its ProbeStatus is the report's progress."""
    from rich.console import Console

    console = Console(stderr=True)  # stdout stays the report (or its JSON)
    with console.status("edgestats doctor: reading this device", spinner="line") as status:
        yield ProbeStatus(status)


def print_report(report: dict[str, Any], *, as_json: bool) -> None:
    if as_json:
        typer.echo(json.dumps(report, indent=2, default=str))
    else:
        typer.echo(render_text(report, terminal_width(sys.stdout)))  # a pipe or log: whole lines


class ProbeStatus:
    """The spinner's text while the probes run: how many are done and which imports are still
    running (TensorFlow alone takes seconds; before this, doctor printed nothing for 4-8 s)."""

    def __init__(self, status) -> None:
        self.status, self.pending, self.total = status, [], 0
        self.lock = threading.Lock()  # done() is called from the probes' threads

    def start(self, names: list[str]) -> None:
        self.pending, self.total = list(names), len(names)
        self._show()

    def done(self, result: dict) -> None:
        with self.lock:
            self.pending.remove(result["name"])
            self._show()

    def _show(self) -> None:
        waiting = ", ".join(self.pending[:3]) + (", ..." if len(self.pending) > 3 else "")
        text = f"doctor: imports {self.total - len(self.pending)}/{self.total} done" + (
            f" (waiting for {waiting})" if waiting else "; reading sensors and load"
        )
        self.status.update(text)
