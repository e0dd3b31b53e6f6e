"""What to analyse and how: the options of `edgestats analyze`, one to one (docs/cli/analyze.md).

Its own module so that every analysis module can take an AnalysisOptions without importing
the package that loops over them (edgestats.analysis imports the analyses through the registry).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import polars as pl

from edgestats.analysis.estimators.intervals import (
    DEFAULT_BCA_MAX_N,
    DEFAULT_LEVEL,
    DEFAULT_RESAMPLES,
    BootstrapSettings,
)
from edgestats.analysis.load.frames import FILTER_COLUMNS, AnalysisInputError, check_group_columns
from edgestats.registry.analyses import analysis_names

NOISY_MODES = ("include", "exclude")  # --noisy: keep noisy runs (counted in a note), or leave them out


@dataclass
class AnalysisOptions:
    """What to analyse and how; the CLI's options one to one (docs/cli/analyze.md)."""

    only: str | None = None
    where: str | None = None
    filters: dict[str, list[str]] = field(default_factory=dict)
    by: list[str] = field(default_factory=list)
    level: float = DEFAULT_LEVEL
    seed: int = 0
    n_resamples: int = DEFAULT_RESAMPLES
    bca_max_n: int = DEFAULT_BCA_MAX_N
    response: str | None = None
    factors: list[str] = field(default_factory=list)
    interactions: bool = False
    best: str | None = None
    constraint: str | None = None
    log_factors: list[str] = field(default_factory=list)
    linear_factors: list[str] = field(default_factory=list)
    noisy: str = "include"
    answer_by: list[str] = field(default_factory=list)  # answers' group keys (--answer-by)
    answer_across: list[str] = field(default_factory=list)  # answers' candidate keys (--answer-across)

    @classmethod
    def from_flags(
        cls,
        *,
        only: str | None = None,
        where: str | None = None,
        by=(),
        level: float = DEFAULT_LEVEL,
        seed: int = 0,
        resamples: int = DEFAULT_RESAMPLES,
        bca_max_n: int = DEFAULT_BCA_MAX_N,
        filters: dict[str, list[str]] | None = None,
        noisy: str = "include",
        response: str | None = None,
        factor=(),
        interaction: bool = False,
        best: str | None = None,
        constraint: str | None = None,
        log=(),
        linear=(),
        answer_by=(),
        answer_across=(),
    ) -> AnalysisOptions:
        """The options from `edgestats analyze`'s flags, by their flag names (--resamples,
        --factor, --log ...): the one mapping the CLI and the Python API share. `filters` holds
        --device, --framework, ... (column -> values); empty ones are dropped."""
        return cls(
            only=only,
            where=where,
            filters={k: list(v) for k, v in (filters or {}).items() if v},
            by=list(by),
            level=level,
            seed=seed,
            n_resamples=resamples,
            bca_max_n=bca_max_n,
            response=response,
            factors=list(factor),
            interactions=interaction,
            best=best,
            constraint=constraint,
            log_factors=list(log),
            linear_factors=list(linear),
            noisy=noisy,
            answer_by=list(answer_by),
            answer_across=list(answer_across),
        )

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
