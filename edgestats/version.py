"""The edgestats release, written into every run, export manifest and report it makes. Its own
module so that any layer can read it without importing the package root, which resolves the
Python API lazily (edgestats/__init__.py)."""

__version__ = "0.1.0"
