"""What runs on a device (installed as `edgestats.collectors`).

This package must not import polars, statsmodels or altair: a device needs only duckdb,
pyarrow, psutil, typer and its framework. tests/test_import_boundaries.py checks it.
"""
