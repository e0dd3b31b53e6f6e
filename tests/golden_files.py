"""Golden files: which ones a test run rewrites (EDGESTATS_UPDATE_GOLDEN, docs/architecture.md §8),
and a chart spec normalised to compare with its golden.

The variable takes comma-separated names. `1` or `all` rewrites every golden file (what any value
meant before names); otherwise a name selects the golden files whose stem (the file name without
.input.json, .spec.json or .txt) is that name or starts with `name.`, and a chart's spec when the
name is its builder's or its analysis': `EDGESTATS_UPDATE_GOLDEN=summary` rewrites summary.*.input.json
and the specs of summary's charts, nothing else, so a new analysis writes only its own files.

Its own module because two test modules keep golden files (the charts, the schema) and read the
variable the same way.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable
from pathlib import Path

VARIABLE = "EDGESTATS_UPDATE_GOLDEN"
EVERYTHING = frozenset({"1", "all"})


def requested_names() -> frozenset[str]:
    """The names the variable holds (empty when it is unset or blank)."""
    return frozenset(name.strip() for name in os.environ.get(VARIABLE, "").split(",") if name.strip())


def is_requested(stem: str, *groups: str) -> bool:
    """Whether the golden file `stem` is to be rewritten; `groups` are other names that select it
    (a chart spec's analysis)."""
    names = requested_names()
    if names & EVERYTHING:
        return True
    return stem in names or stem.partition(".")[0] in names or any(g in names for g in groups)


def any_requested(names: Iterable[str]) -> bool:
    return any(is_requested(name) for name in names)


def golden_names(folder: Path) -> set[str]:
    """Every name that selects a file under `folder`: its stem, and the part before the first dot."""
    stems = {path.name.removesuffix(".input.json").removesuffix(".spec.json") for path in folder.rglob("*.*")}
    return {*(stem.removesuffix(".txt") for stem in stems), *(stem.partition(".")[0] for stem in stems)}


def unknown_names(known: set[str]) -> list[str]:
    """Requested names that select nothing `known` (a typo would otherwise rewrite nothing, silently)."""
    return sorted(name for name in requested_names() - EVERYTHING if name not in known)


def normalise(spec: dict) -> dict:
    """A chart spec stable across runs and platforms: dataset names are content hashes (renamed in
    order of appearance), floats rounded to 6 significant digits, the $schema URL dropped."""
    text = json.dumps(spec, sort_keys=True)
    names = {}
    for name in re.findall(r'"(data-[0-9a-f]{32})"', text):
        names.setdefault(name, f"data-{len(names)}")
    for old, new in names.items():
        text = text.replace(old, new)
    spec = json.loads(text)
    spec.pop("$schema", None)
    return _round(spec)


def _round(value):
    if isinstance(value, float):
        return float(f"{value:.6g}")
    if isinstance(value, dict):
        return {k: _round(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_round(v) for v in value]
    return value
