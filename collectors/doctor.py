"""`edgestats doctor` as a library: what this device is and what can run on it.

`doctor_report()` builds one JSON-ready dict (the `--json` output, documented in
docs/cli/doctor.md); reports/terminal/doctor.py's `render_text()` turns it into the readable
table the command prints.

This is the one place doctor is composed: the probes (one per registered runtime, plus the
tools and the analysis stack), the power sources (one per registered source) and the sensors
come from the registries in `edgestats.registry` through the public functions of
collectors.host, collectors.power and collectors.telemetry. The CLI takes its choices and help
from here. Importing this module is cheap (standard library and the registries); the device
facts and the sensors, which load more, are imported when a report is built.
"""

from __future__ import annotations

import platform
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Protocol

from edgestats.collectors.host.probes import DEFAULT_TIMEOUT_S, default_jobs, probe_names, run_probes
from edgestats.collectors.power.selection import describe_sources
from edgestats.version import __version__

__all__ = ["DEFAULT_TIMEOUT_S", "doctor_report", "only_help", "probe_names"]


class ProbeProgress(Protocol):
    """What a caller showing progress hears: the probes about to run, then each result (from
    the probe's thread) as it finishes."""

    def start(self, names: list[str]) -> None: ...

    def done(self, result: dict[str, Any]) -> None: ...


def only_help() -> str:
    """`doctor --only` help: every probe name, frameworks from the runtime registry first."""
    return f"Run only these probes (repeatable): {', '.join(probe_names())}."


def doctor_report(
    root: Path = Path("/"),
    *,
    probes: Iterable[str] | None = None,
    modules: Iterable[str] = (),
    timeout_s: float = DEFAULT_TIMEOUT_S,
    max_workers: int | None = None,
    progress: ProbeProgress | None = None,
) -> dict[str, Any]:
    """Device facts plus one probe result per framework/tool (all registered ones by default).

    `modules` adds ad-hoc import checks for any module name; `timeout_s` bounds each probe;
    `max_workers` is how many probes import at once (default: one per CPU, at least 2);
    `progress` hears of each probe as it starts and finishes.
    """
    # Imported here: facts loads the store (duckdb) for the device id, the sensors pyarrow.
    from edgestats.collectors.host.facts import read_device_facts
    from edgestats.collectors.telemetry.noise_checks import noise_checks
    from edgestats.collectors.telemetry.session import describe_sensors

    jobs = max_workers or default_jobs()
    results = run_probes(
        probes,
        modules=modules,
        timeout_s=timeout_s,
        max_workers=jobs,
        on_start=progress.start if progress else None,
        on_done=progress.done if progress else None,
    )
    return {
        "edgestats_version": __version__,
        "python": {"version": platform.python_version(), "executable": sys.executable},
        "device": read_device_facts(Path(root)),
        # Import times depend on how many probes shared the CPUs.
        "probe_jobs": min(jobs, len(results)),
        "probes": results,
        "power_sources": describe_sources(Path(root)),
        "sensors": describe_sensors(Path(root)),
        # after the probes, whose imports would otherwise count as background load
        "noise": noise_checks(Path(root)),
    }
