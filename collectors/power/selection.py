"""`--power`: which power source a collect or baseline uses, from the sources in
`edgestats.registry.power`. It says their names, which ones `auto` tries and in what order, which
ones read a file (NAME:PATH), and what doctor says of each (docs/architecture.md §7). Modules are
imported only when their source is probed, so a Raspberry Pi never imports pynvml."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from edgestats.collectors.power.base import SYSTEM_ROOT, PowerSource, PowerSourceError
from edgestats.registry import power as registry


def select_power_source(
    spec: str, root: Path = SYSTEM_ROOT, *, clock_offset_s: float = 0.0
) -> tuple[PowerSource | None, str, dict[str, str]]:
    """(source or None, chosen name, {source: why it was not used}) for a `--power` value.

    `auto` returns the first available of the registry's auto sources (reasons for those tried
    before it), or (None, "none", reasons) when there is none: a run without energy is still a
    run. A source named explicitly that is unusable raises PowerSourceError: the user asked for it.
    """
    spec = (spec or "").strip()
    if spec == "none":
        return None, "none", {}
    if spec == "auto":
        return _first_available(root)
    name, _, path = spec.partition(":")
    try:
        entry = registry.power_source(name)
    except KeyError:
        raise PowerSourceError(f"unknown power source {spec!r}; use one of {registry.spec_help()}") from None
    if entry.takes_path:
        if not path:
            raise PowerSourceError(f"--power {name} needs the meter's file: --power {entry.spec}")
        source = entry.source_class()(Path(path), clock_offset_s=clock_offset_s)
    elif path:
        raise PowerSourceError(
            f"--power {spec}: {name} reads this device and takes no path; use --power {name}"
        )
    else:
        source = entry.source_class()(root)
    ok, why = source.is_available()
    if not ok:
        source.close()
        raise PowerSourceError(f"power source {spec!r} is not available: {why}")
    return source, name, {}


def _first_available(root: Path) -> tuple[PowerSource | None, str, dict[str, str]]:
    reasons: dict[str, str] = {}
    for entry in auto_entries():
        source = entry.source_class()(root)
        ok, why = source.is_available()
        if ok:
            return source, entry.name, reasons
        source.close()
        reasons[entry.name] = why or "not available"
    return None, "none", reasons


def auto_entries() -> list[registry.PowerSourceEntry]:
    """The sources `--power auto` tries, in its order. Read at call time, so it follows the registry."""
    return [entry for entry in registry.POWER_SOURCES if entry.auto]


def path_source_hint() -> str:
    """How to name a source that reads a file, for messages that say where energy could come
    from: "--power csv:PATH (an external meter's CSV log, aligned by timestamp)"."""
    entries = [entry for entry in registry.POWER_SOURCES if entry.takes_path]
    return " or ".join(f"--power {entry.spec} ({entry.help})" for entry in entries) or "--power NAME"


def describe_sources(root: Path = SYSTEM_ROOT) -> list[dict[str, Any]]:
    """Every registered source for `edgestats doctor`, in registry order: usable or why not, and
    its rails. A source that reads a file is used only when given one, so it is not probed; its
    rails are those it names before reading (constructing a source touches no files)."""
    rows = []
    for entry in registry.POWER_SOURCES:
        if entry.takes_path:
            rows.append(
                {
                    "name": entry.name,
                    "usable": True,
                    "rails": entry.source_class()(Path()).rails(),
                    "takes_path": True,
                    "reason": f"{entry.help}, used only when given: --power {entry.spec}",
                }
            )
            continue
        source = entry.source_class()(root)
        ok, why = source.is_available()
        rows.append(
            {
                "name": entry.name,
                "usable": ok,
                "reason": why,
                "rails": source.rails() if ok else [],
                "takes_path": False,
            }
        )
        source.close()
    return rows
