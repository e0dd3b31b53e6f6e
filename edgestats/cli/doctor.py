"""`edgestats doctor`: what this device is and which frameworks/runtimes can run on it."""

from __future__ import annotations

import json
import sys
import threading

import typer

from edgestats.cli.common import handle_errors

# Cheap to import (the report's heavy parts load when it is built), so `edgestats --help` stays
# fast; the probe names in --only's help come from the registries through it.
from edgestats.collectors.doctor import DEFAULT_TIMEOUT_S, doctor_report, only_help, render_text
from edgestats.formatting import terminal_width


@handle_errors
def doctor(
    as_json: bool = typer.Option(
        False, "--json", help="Print the report as one JSON object on stdout (fields: docs/cli/doctor.md)."
    ),
    module: list[str] | None = typer.Option(
        None,
        "--module",
        "-m",
        metavar="MODULE",
        help="Also check that this Python module imports (e.g. tensorrt). Repeatable.",
    ),
    only: list[str] | None = typer.Option(None, "--only", metavar="NAME", help=only_help()),
    timeout: float = typer.Option(
        DEFAULT_TIMEOUT_S,
        "--timeout",
        min=1.0,
        metavar="SECONDS",
        help="Give up on an import that takes longer than this (it is reported as not available).",
    ),
    jobs: int | None = typer.Option(
        None,
        "--jobs",
        "-j",
        min=1,
        help="How many probes import at once (default: one per CPU, at least 2). "
        "Lower it on a board with little RAM; 1 gives uncontended import times.",
    ),
) -> None:
    """Show this device's facts and which frameworks, runtimes and tools are usable here.

    Device: hostname, the stable device_id that `collect` stores, board, CPU, memory, GPU,
    OS, kernel and power mode (Jetson nvpmodel mode or CPU governor).

    Frameworks (one per runtime `collect --framework` knows), tools (nvml) and the analysis
    stack (polars, statsmodels, altair, vl_convert): each is imported in a fresh process,
    several at once, and reported with its version, import time and details (CUDA, TorchScript,
    ONNX Runtime providers, which TFLite interpreter), or with the reason it is not usable
    and what to install. Then the power sources (--power), the sampler's sensors, and what would
    make measurements noisy here (governor, turbo, background CPU and the busiest processes,
    load, swap, temperature, throttling), each problem with its fix.

    Exits 0 whatever is missing: doctor reports, it does not judge.
    """
    from rich.console import Console

    console = Console(stderr=True)  # stdout stays the report (or its JSON)
    with console.status("edgestats doctor: reading this device", spinner="line") as status:
        report = doctor_report(
            probes=only or None,
            modules=module or (),
            timeout_s=timeout,
            max_workers=jobs,
            progress=ProbeStatus(status),
        )
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


def register(app: typer.Typer) -> None:
    app.command("doctor")(doctor)
