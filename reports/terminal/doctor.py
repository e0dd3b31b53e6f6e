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

from edgestats.collectors.host.device_name import how_named
from edgestats.collectors.power.selection import auto_entries
from edgestats.formatting import terminal_width, wrap_text

# Section order and titles of the text output, by probe kind.
_SECTIONS = {
    "framework": "Frameworks and runtimes (edgestats collect)",
    "tool": "Tools",
    "analysis": "Analysis stack (edgestats analyze)",
    "module": "Other modules (--module)",
}
_DEVICE_ROWS = (
    "name",
    "hostname",
    "device_id",
    "board",
    "arch",
    "cpu",
    "memory",
    "gpu",
    "os",
    "kernel",
    "power_mode",
)


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


def render_text(report: dict[str, Any], width: int | None = None) -> str:
    """The report as aligned plain-ASCII text (edge boards' consoles are not always UTF-8); with
    `width` (the terminal's), lines longer than it wrap at spaces under their own column."""
    python = report["python"]
    lines = [
        f"edgestats {report['edgestats_version']} (Python {python['version']}, {python['executable']})",
        "",
    ]
    lines += _device_lines(report["device"])
    probes = list(report["probes"].values())
    # One column layout for all sections, so versions and times line up down the page.
    name_w = max((len(r["name"]) for r in probes), default=0)
    version_w = max((len(r["version"] or "-") for r in probes), default=0)
    for kind, title in _SECTIONS.items():
        results = [r for r in probes if r["kind"] == kind]
        if results:
            lines += ["", title] + [_probe_line(r, name_w, version_w) for r in results]
    lines += power_lines(report.get("power_sources", []), report.get("sensors", []))
    lines += noise_lines(report.get("noise", []))
    if report["probes"]:
        jobs = report["probe_jobs"]
        lines += [
            "",
            f"Import times: wall-clock seconds in a fresh process, {jobs} probe{'s' * (jobs != 1)} "
            "importing at a time (--jobs 1 for uncontended times).",
        ]
    return wrap_text("\n".join(lines), width)


def _device_lines(device: dict[str, Any]) -> list[str]:
    facts = device.get("facts") or {}
    values = {
        "name": how_named(device),
        "hostname": device.get("hostname"),
        "device_id": device.get("device_id"),
        "board": facts.get("board"),
        "arch": device.get("arch"),
        "cpu": _join_known(
            device.get("cpu_model"), f"{device['cores']} logical CPUs" if device.get("cores") else None
        ),
        "memory": _gib(device.get("mem_total_bytes")),
        "gpu": device.get("gpu"),
        "os": _join_known(
            device.get("os"), f"L4T {facts['l4t_release']}" if facts.get("l4t_release") else None
        ),
        "kernel": device.get("kernel"),
        "power_mode": _power_mode(device, facts),
    }
    width = max(len(k) for k in _DEVICE_ROWS)
    return ["Device"] + [
        f"  {k.replace('_', ' '):<{width}}  {values[k] if values[k] else '-'}" for k in _DEVICE_ROWS
    ]


def power_lines(sources: list[dict[str, Any]], sensors: list[dict[str, Any]]) -> list[str]:
    """Power sources (collect --power, baseline) and the sampler's sensors: usable, or why not."""
    lines: list[str] = []
    if sources:
        width = max(len(s["name"]) for s in sources)
        auto = ", ".join(entry.name for entry in auto_entries())
        lines += ["", f"Power sources (--power; auto takes the first usable of {auto})"]
        for s in sources:
            if not s["usable"]:
                state = f"no   {s['reason']}"
            elif s.get("takes_path"):  # read from a file given by --power NAME:PATH: nothing to probe
                state = f"yes  {s['reason'] or ''}"
            else:
                state = f"yes  rails: {', '.join(s['rails'])}"
            lines.append(f"  {s['name']:<{width}}  {state}")
    if sensors:
        width = max(len(s["name"]) for s in sensors)
        lines += ["", "Sensors (sampled by collect --sample-hz)"]
        lines += [
            f"  {s['name']:<{width}}  {'yes' if s['usable'] else 'no '}  {s['detail']}" for s in sensors
        ]
    return lines


def noise_lines(checks: list[dict[str, Any]]) -> list[str]:
    """What would make runs noisy here (collect's noise sentinel), and the fix for each problem."""
    if not checks:
        return []
    width = max(len(c["name"]) for c in checks)
    lines = ["", "Noise (what would disturb measurements here; collect flags noisy runs)"]
    for check in checks:
        state = {True: "ok  ", False: "warn", None: "-   "}[check["ok"]]
        lines.append(f"  {check['name']:<{width}}  {state}  {check['detail']}")
        if check["fix"]:
            lines.append(f"  {'':<{width}}        fix: {check['fix']}")
    return lines


def _power_mode(device: dict[str, Any], facts: dict[str, Any]) -> str | None:
    mode, governor = device.get("power_mode"), facts.get("cpu_governor")
    if mode and governor and mode != governor:
        return f"{mode} (CPU governor {governor})"
    return mode


def _probe_line(result: dict[str, Any], name_w: int, version_w: int) -> str:
    head = f"  {result['name']:<{name_w}}  "
    if not result["available"]:
        return f"{head}no   {result['reason']}"
    import_s = f"{result['import_s']:6.2f} s" if result["import_s"] is not None else "     - s"
    return (
        f"{head}yes  {result['version'] or '-':<{version_w}}  {import_s}  "
        f"{_summarise_detail(result['detail'])}"
    ).rstrip()


def _summarise_detail(detail: dict[str, Any]) -> str:
    """`key: value` pairs, with booleans as yes/no and lists joined; the module name is implied."""
    parts = []
    for key, value in detail.items():
        if key == "module":
            continue
        if isinstance(value, bool):
            value = "yes" if value else "no"
        elif isinstance(value, (list, tuple)):
            value = ", ".join(map(str, value)) or "none"
        elif value is None:
            value = "-"
        parts.append(f"{key.replace('_', ' ')}: {value}")
    return "; ".join(parts)


def _join_known(*parts: str | None) -> str | None:
    known = [p for p in parts if p]
    return ", ".join(known) if known else None


def _gib(n_bytes: int | None) -> str | None:
    return f"{n_bytes / 2**30:.1f} GiB" if n_bytes else None
