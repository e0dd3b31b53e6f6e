"""`Results`: one results DB, several, or a lake, opened for analysis from Python (docs/python-api.md).

Each method calls the library function its CLI command calls, with the same options under the
flags' own names (`--by` is `by=`, `--bca-max-n` is `bca_max_n=`, a repeatable flag takes a
string or a list), taken from the commands' declarations (edgestats/analysis/core/flags.py,
edgestats/analysis/compare/flags.py; the signatures help() shows too): `runs` and `analyze` what
`edgestats analyze` runs (edgestats.analysis), `sql` what `edgestats sql` runs
(edgestats.store.query, sandboxed), `compare` what `edgestats compare` runs
(edgestats.analysis.compare.flags.compare_from_flags). Options are checked as the CLI's are.
Every read is read-only and sandboxed; nothing is held open between calls, so a collect may store
runs into the DB while a notebook reads it.
"""

from __future__ import annotations

import inspect
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import polars as pl

from edgestats.analysis.compare.flags import COMPARE_OPTIONS
from edgestats.analysis.core.flags import ANALYSIS_OPTIONS, RUNS
from edgestats.api.sources import Source, source_of
from edgestats.api.views import Analyses, Analysis, ComparisonView
from edgestats.options import check_keywords, keyword_signature, tagged

# The options `runs` takes: analyze's that select runs (--where, the filters, --noisy).
RUN_OPTIONS = tagged(ANALYSIS_OPTIONS, RUNS)
SELF = inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)
# compare's side B: the second DB argument of `edgestats compare A B`
OTHER = inspect.Parameter(
    "other", inspect.Parameter.KEYWORD_ONLY, default=None, annotation="Results | str | os.PathLike | None"
)


def _unique_names(columns: list[str]) -> list[str]:
    """Column names as polars needs them, unique: a repeated name gets _1, _2 ... (as DuckDB's
    own frames do), so `SELECT a.x, b.x` keeps both columns."""
    seen: dict[str, int] = {}
    out = []
    for name in columns:
        count = seen.get(name, 0)
        seen[name] = count + 1
        out.append(name if count == 0 else f"{name}_{count}")
    return out


class Results:
    """Results DB(s) opened for analysis: `edgestats.open(...)` returns one."""

    def __init__(self, source: Source):
        self._source = source

    @property
    def spec(self) -> Path:
        """What the library functions read: the DB, the lake, or the glob standing for a list."""
        return self._source.spec

    def runs(self, **flags: Any) -> pl.DataFrame:
        """The runs `analyze` would use with these options (ok and diverged runs), one row each:
        run_summary's columns, the training and reported figures, and the derived ones
        (epoch_time_s, throughput_per_s, mem_peak_mb, mem_mean_mb). Every run, failed ones
        included, is in `sql("SELECT * FROM run_summary")`. Its keywords are analyze's that select
        runs (edgestats/analysis/core/flags.py, tagged `runs`)."""
        from edgestats.analysis import AnalysisOptions
        from edgestats.analysis.load.frames import load_data

        check_keywords(RUN_OPTIONS, flags, "runs")
        options = AnalysisOptions.from_flags(**flags)
        options.check()
        return load_data(self.spec, where=options.where, filters=options.filters).runs.drop("run_idx")

    runs.__signature__ = keyword_signature(RUN_OPTIONS, first=[SELF])

    def sql(self, query: str, *, read: Sequence[str | os.PathLike] = ()) -> pl.DataFrame:
        """`edgestats sql DB QUERY [--read PATH]`: the query's result as a frame, run in the same
        read-only sandbox (it reads the DB and the files in `read`, writes nothing)."""
        from edgestats.store.query import run_query

        result = run_query(self.spec, query, read=list(read))
        names = _unique_names(result.columns)
        columns = list(zip(*result.rows)) if result.rows else [()] * len(names)
        return pl.DataFrame(
            [pl.Series(name, list(values), strict=False) for name, values in zip(names, columns)]
        )

    def analyze(self, only: str | None = None, **flags: Any) -> Analysis | Analyses:
        """`edgestats analyze DB [--only NAME] ...`: one Analysis for `only`, or every analysis of
        the registry (an Analyses mapping, as without --only). The keywords are the flags' names
        (edgestats/analysis/core/flags.py); defaults are the CLI's."""
        from edgestats.analysis import AnalysisOptions, run_analyses

        check_keywords(ANALYSIS_OPTIONS, flags, "analyze")
        options = AnalysisOptions.from_flags(only=only, **flags)
        results = run_analyses(self.spec, options)  # checks the options as the CLI's are checked
        return Analysis(results[only]) if only is not None else Analyses(results)

    analyze.__signature__ = keyword_signature(ANALYSIS_OPTIONS, first=[SELF], positional=("only",))

    def compare(
        self,
        a: str | None = None,
        b: str | None = None,
        *,
        other: Results | str | os.PathLike | None = None,
        **flags: Any,
    ) -> ComparisonView:
        """`edgestats compare`: B against A. Side A is these results; side B is `other` (like
        `compare A.duckdb B.duckdb`) or these results again. `a`, `b` and `where` select runs
        (--a, --b, --where); without `other`, both `a` and `b` are needed. `threshold` is in
        percent, as --threshold is. The keywords are the flags' names
        (edgestats/analysis/compare/flags.py); defaults are the CLI's."""
        from edgestats.analysis.compare.flags import compare_from_flags
        from edgestats.analysis.load.frames import AnalysisInputError

        check_keywords(COMPARE_OPTIONS, flags, "compare")
        if other is None and (a is None or b is None):
            raise AnalysisInputError(
                "give other= (the results of side B), or both a= and b= to select the two "
                "sides of these results"
            )
        other_spec = (
            other.spec if isinstance(other, Results) else Path(other) if other is not None else self.spec
        )
        return ComparisonView(compare_from_flags(self.spec, other_spec, a=a, b=b, **flags))

    compare.__signature__ = keyword_signature(
        COMPARE_OPTIONS, first=[SELF], positional=("a", "b"), extra=[OTHER]
    )

    def close(self) -> None:
        """Drop the links made for a list of DB files (nothing else is held open)."""
        self._source.close()

    def __enter__(self) -> Results:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __del__(self) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<Results {self._source.label}>"


def open(where: str | os.PathLike | Sequence[str | os.PathLike]) -> Results:  # noqa: A001  (edgestats.open)
    """Open results for analysis: a DB file, a list of DB files (read as one, a run stored in
    several counting once), an export folder, or a glob of DB files ('results/*.duckdb').

    The DB (or the lake) is opened once here, read-only and sandboxed as every later read is, so
    a missing, damaged or too new file is reported at once, with the CLI's message; nothing is
    held open afterwards."""
    from edgestats.store.sandbox import sandboxed_store

    source = source_of(where)
    try:
        with sandboxed_store(source.spec):
            pass
    except BaseException:
        source.close()
        raise
    return Results(source)
