"""Walking a Vega-Lite spec as the chart tests read it: every mark with its dataset and the facet
fields above it."""

from __future__ import annotations


def units(spec: dict, data: str | None = None, panels: tuple = ()):
    """(unit spec, its dataset name, the facet fields above it) of every mark in a spec."""
    data = (spec.get("data") or {}).get("name", data)
    facet = spec.get("facet") or {}
    fields = [
        f["field"]
        for f in ([facet] if "field" in facet else facet.values())
        if isinstance(f, dict) and "field" in f
    ]
    panels = (*panels, *fields)
    if "mark" in spec:
        yield spec, data, panels
    for child in [*spec.get("layer", []), *([spec["spec"]] if "spec" in spec else [])]:
        yield from units(child, data, panels)
