"""edgestats: a results database and statistics toolkit for deep learning on edge devices.

The library is the product; the `edgestats` command is a thin typer layer over it.
"""

__version__ = "0.1.0"
