"""Every chart as a PNG or SVG file, rendered by vl-convert (no browser, works offline)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from edgestats.errors import EdgestatsError

IMAGE_FORMATS = ("png", "svg")
PNG_SCALE = 2  # twice the on-screen size: sharp in a paper or on a high-DPI screen


class ImageFormatError(EdgestatsError):
    """An unknown image format."""


def vegalite_version() -> str:
    """The Vega-Lite version Altair writes specs for ("6.4"), so vl-convert compiles them with
    the same one."""
    import altair as alt

    major, minor = alt.SCHEMA_VERSION.lstrip("v").split(".")[:2]
    return f"{major}.{minor}"


def chart_image(spec: dict[str, Any], fmt: str) -> bytes:
    import vl_convert

    if fmt == "png":
        return vl_convert.vegalite_to_png(spec, vl_version=vegalite_version(), scale=PNG_SCALE)
    if fmt == "svg":
        return vl_convert.vegalite_to_svg(spec, vl_version=vegalite_version()).encode("utf-8")
    raise ImageFormatError(f"unknown image format {fmt!r}: use one of {', '.join(IMAGE_FORMATS)}")


def write_images(specs: dict[str, dict[str, Any]], out_dir: Path, formats: list[str]) -> list[Path]:
    """`images/<name>.<fmt>` for every spec (name -> Vega-Lite dict) and format."""
    unknown = [f for f in formats if f not in IMAGE_FORMATS]
    if unknown:
        raise ImageFormatError(f"unknown image format(s) {unknown}: use {', '.join(IMAGE_FORMATS)}")
    if not formats:
        return []
    folder = out_dir / "images"
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for name, spec in specs.items():
        for fmt in formats:
            path = folder / f"{name}.{fmt}"
            path.write_bytes(chart_image(spec, fmt))
            written.append(path)
    return written
