"""`edgestats doctor`: what this device is and which frameworks/runtimes can run on it.

The command parses, builds the report (collectors/doctor.py) under the terminal's spinner and
hands it to reports/terminal/doctor.py to print.
"""

from __future__ import annotations

import typer

from edgestats.cli.common import handle_errors

# Cheap to import (the report's heavy parts load when it is built), so `edgestats --help` stays
# fast; the probe names in --only's help come from the registries through it.
from edgestats.collectors.doctor import DEFAULT_TIMEOUT_S, doctor_report, only_help
from edgestats.reports.terminal.doctor import print_report, probe_status


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
    with probe_status() as progress:
        report = doctor_report(
            probes=only or None, modules=module or (), timeout_s=timeout, max_workers=jobs, progress=progress
        )
    print_report(report, as_json=as_json)


def register(app: typer.Typer) -> None:
    app.command("doctor")(doctor)
