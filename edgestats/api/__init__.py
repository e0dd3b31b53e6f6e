"""The Python API for notebooks (docs/python-api.md): results DBs opened from Python, analyses
as polars frames and the report's Altair charts.

    import edgestats
    results = edgestats.open("runs.duckdb")          # or a list of DBs, an export folder, a glob
    results.runs(framework="pytorch")                # polars frame, one row per run
    summary = results.analyze("summary", by=["framework"], level=0.95)
    summary.frame, summary.chart()                   # polars frame, Altair chart

It sits beside the CLI (docs/architecture.md §2): each method calls the library function the
matching command calls, with the command's options under the flags' names.
"""

from edgestats.api.results import Results, open  # noqa: A004  (edgestats.open)
from edgestats.api.views import Analyses, Analysis, ChartError, ComparisonView

__all__ = ["Analyses", "Analysis", "ChartError", "ComparisonView", "Results", "open"]
