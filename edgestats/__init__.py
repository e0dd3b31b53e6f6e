"""edgestats: a results database and statistics toolkit for deep learning on edge devices.

The library is the product; the `edgestats` command is a thin typer layer over it, and
`edgestats.open(...)` the Python API for notebooks (edgestats/api/, docs/python-api.md).
"""

from edgestats.version import __version__

__all__ = ["__version__"]

# The API's names, resolved on first use (PEP 562): `import edgestats`, which every command and
# the measured worker pay for, must not import polars, DuckDB or the API modules.
_API_NAMES = ("open", "Results", "Analysis", "Analyses", "ComparisonView", "ChartError")


def __getattr__(name: str):
    if name in _API_NAMES:
        from edgestats import api

        return getattr(api, name)
    raise AttributeError(f"module 'edgestats' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *_API_NAMES])
