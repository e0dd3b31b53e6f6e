"""What to analyse and how: AnalysisOptions, the options of `edgestats analyze` one to one
(docs/cli/analyze.md), with their checks.

Its fields are derived from the declaration (core/flags.py): one per option, named by its key, and
`filters` for --device, --framework, ... (column -> values). Its own module so that every analysis
module can take an AnalysisOptions without importing the package that loops over them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import polars as pl

from edgestats.analysis.core.flags import ANALYSIS_OPTIONS
from edgestats.analysis.estimators.intervals import DEFAULT_RESAMPLES, BootstrapSettings
from edgestats.analysis.load.frames import FILTER_COLUMNS, AnalysisInputError, check_group_columns
from edgestats.options import check_keywords, declared_fields, fed, given, nested
from edgestats.registry.analyses import analysis_names

NOISY_MODES = ("include", "exclude")  # --noisy: keep noisy runs (counted in a note), or leave them out


@dataclass
@declared_fields(ANALYSIS_OPTIONS)
class AnalysisOptions:
    """What to analyse and how: a field per option of core/flags.py, named by its key (`level`,
    `n_resamples` for --resamples, `factors` for --factor ...) and defaulting as its flag does, and
    `filters` (column -> values) for --device, --framework ...; the CLI's options one to one."""

    @classmethod
    def from_flags(cls, **flags: Any) -> AnalysisOptions:
        """The options from `edgestats analyze`'s flags, by option name (--resamples is
        resamples=, --factor factor=): the one mapping the CLI and the Python API share. A
        repeatable option takes one string or several; one not given takes its default; the
        filters not given are left out. A name no option has is a TypeError naming the options."""
        check_keywords(ANALYSIS_OPTIONS, flags, "AnalysisOptions.from_flags")
        values = {opt.name: given(opt, flags[opt.name]) for opt in ANALYSIS_OPTIONS if opt.name in flags}
        return cls(**nested(fed(ANALYSIS_OPTIONS, values)))

    def __post_init__(self) -> None:
        # --noisy travels to the loader as the `noisy` filter (load.filters_sql)
        self.filters = {**self.filters, "noisy": [self.noisy]} if self.noisy != "include" else self.filters

    def check(self) -> None:
        names = analysis_names()
        if self.only is not None and self.only not in names:
            raise AnalysisInputError(f"--only {self.only!r}: use one of {', '.join(names)}")
        if not 0.5 <= self.level < 1:
            raise AnalysisInputError(
                f"--level {self.level}: give a confidence level between 0.5 and 1, e.g. 0.95"
            )
        if self.n_resamples < 100:
            raise AnalysisInputError(
                f"--resamples {self.n_resamples}: use at least 100 (default {DEFAULT_RESAMPLES})"
            )
        if self.noisy not in NOISY_MODES:
            raise AnalysisInputError(
                f"--noisy {self.noisy!r}: use include (the default: kept, counted in a note) or exclude"
            )
        unknown = [c for c in self.filters if c not in FILTER_COLUMNS]
        if unknown:
            raise AnalysisInputError(
                f"no filter option for {', '.join(unknown)}; filter with --where instead"
            )
        both = set(self.log_factors) & set(self.linear_factors)
        if both:
            raise AnalysisInputError(f"{', '.join(sorted(both))}: asked for both --log and --linear")
        both = set(self.answer_by) & set(self.answer_across)
        if both:
            raise AnalysisInputError(
                f"{', '.join(sorted(both))}: asked for both --answer-by and --answer-across; a key either "
                "groups what is compared or is what is compared"
            )

    @property
    def settings(self) -> BootstrapSettings:
        return BootstrapSettings(n_resamples=self.n_resamples, bca_max_n=self.bca_max_n, seed=self.seed)

    @property
    def selected(self) -> tuple[str, ...]:
        """The analyses to run, in registry order (read now, so an entry added at run time counts)."""
        return (self.only,) if self.only else analysis_names()

    def group_keys(self, runs: pl.DataFrame) -> list[str]:
        """--by, each checked to be a run column (AnalysisInputError listing the valid ones);
        --answer-by and --answer-across are checked here too, so a bad key fails once, before any
        analysis runs, whichever analyses are selected."""
        self.answer_keys(runs)
        return check_group_columns(self.by, runs)

    def answer_keys(self, runs: pl.DataFrame) -> tuple[list[str], list[str]]:
        """--answer-by and --answer-across, each checked to be a run column (as --by is)."""
        return (
            check_group_columns(self.answer_by, runs, "--answer-by"),
            check_group_columns(self.answer_across, runs, "--answer-across"),
        )
