"""What the notebook API returns: an analysis' frames, JSON and charts; a comparison's.

Nothing here computes: the figures come from the analysis layer (an AnalysisResult, a
Comparison) and the charts from the report's own builders (reports/report.py `figures_for`,
reports/compare_page.py), so a chart in a notebook is the chart `analyze --out` and
`compare --out` draw. Objects show themselves in Jupyter (`_repr_html_`): the report's sentence
and its tables, intervals merged into cells as the report's tables do.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any

import polars as pl

from edgestats.errors import EdgestatsError


class ChartError(EdgestatsError):
    """No such chart, or no chart at all (the data supports none of the analysis)."""


class Analysis:
    """One analysis' result: `.frame` / `.frames` (polars), `.json()`, `.chart()`, `.sentence`."""

    def __init__(self, result: Any):
        self.result = result  # the AnalysisResult, as the CLI and the report get it

    @property
    def name(self) -> str:
        return self.result.name

    @property
    def available(self) -> bool:
        """False when the data supports none of this analysis; `.reason` says why."""
        return self.result.available

    @property
    def reason(self) -> str | None:
        reasons = [e["reason"] for e in self.result.entries if "reason" in e]
        return None if self.available or not reasons else reasons[0]

    @property
    def frames(self) -> dict[str, pl.DataFrame]:
        """Every figure frame by key; keys in `.chart_only` only feed a chart (raw points, bands)."""
        return dict(self.result.frames)

    @property
    def frame(self) -> pl.DataFrame:
        """The main figure frame (the first one); empty when the analysis is unavailable."""
        return self.result.frame

    @property
    def chart_only(self) -> set[str]:
        return set(self.result.chart_only)

    @property
    def notes(self) -> list[str]:
        return list(dict.fromkeys(self.result.notes))

    def json(self) -> list[dict[str, Any]]:
        """The entries `edgestats analyze --json` prints under this analysis' name."""
        return json.loads(json.dumps(self.result.to_json(), allow_nan=False))

    @property
    def sentence(self) -> str:
        """The report's one sentence for this analysis, in numbers with intervals."""
        from edgestats.reports.report import section_module
        from edgestats.reports.sections import unavailable_sentence

        return (
            section_module(self.name).sentence(self.result)
            if self.available
            else unavailable_sentence(self.result)
        )

    def chart_keys(self) -> list[str]:
        """The keys of the charts the report draws for this analysis, in its order."""
        return [key for key, _, _ in self._figures()]

    def charts(self) -> dict[str, Any]:
        """Every chart the report draws for this analysis, by key (Altair charts)."""
        return {key: build() for key, _, build in self._figures()}

    def chart(self, key: str | None = None) -> Any:
        """The report's chart `key` (default: its first) as an Altair chart."""
        figures = self._figures()
        if not figures:
            raise ChartError(f"{self.name}: no chart to draw ({self.reason or 'no figure frame has rows'})")
        if key is None:
            return figures[0][2]()
        for figure_key, _, build in figures:
            if figure_key == key:
                return build()
        raise ChartError(f"{self.name}: no chart {key!r}; use one of {', '.join(k for k, _, _ in figures)}")

    def _figures(self) -> list[tuple[str, str, Any]]:
        if not self.available:
            return []
        from edgestats.reports.report import figures_for

        return figures_for(self.name, self.result)

    def _repr_html_(self) -> str:
        from edgestats.reports.page import esc, table_html
        from edgestats.reports.report import table_frames

        parts = [f"<h4>{esc(self.name)}</h4><p>{esc(self.sentence)}</p>"]
        if self.available:
            parts += [
                table_html(caption, frame) for _, caption, frame in table_frames(self.name, self.result)
            ]
        parts += [f"<p><em>note: {esc(note)}</em></p>" for note in self.notes]
        return "".join(parts)

    def __repr__(self) -> str:
        state = f"frames {', '.join(self.result.frames)}" if self.available else f"unavailable: {self.reason}"
        return f"<Analysis {self.name} ({state})>"


class Analyses(Mapping[str, Analysis]):
    """Several analyses by name, in registry order (what `analyze` without --only runs)."""

    def __init__(self, results: dict[str, Any]):
        self.results = results  # {name: AnalysisResult}, as run_analyses returns them
        self._views = {name: Analysis(result) for name, result in results.items()}

    def __getitem__(self, name: str) -> Analysis:
        return self._views[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._views)

    def __len__(self) -> int:
        return len(self._views)

    def json(self) -> dict[str, list[dict[str, Any]]]:
        """The document `edgestats analyze --json` prints: {analysis: [entries]}."""
        from edgestats.analysis import dumps

        return json.loads(dumps(self.results))

    def _repr_html_(self) -> str:
        return "".join(view._repr_html_() for view in self._views.values())

    def __repr__(self) -> str:
        return f"<Analyses {', '.join(self._views)}>"


class ComparisonView:
    """B against A (edgestats/analysis/compare.py): `.frame`, `.json()`, `.chart()`, `.regressions`."""

    def __init__(self, comparison: Any):
        self.comparison = comparison  # the Comparison, as `edgestats compare` gets it

    @property
    def frame(self) -> pl.DataFrame:
        """One row per matched configuration and metric: ratio B/A, interval, p, Holm's p, verdict."""
        return self.comparison.frame()

    @property
    def regressions(self) -> list[dict[str, Any]]:
        """The configurations whose median latency is significantly slower beyond the threshold
        (what makes `edgestats compare` exit 1)."""
        return self.comparison.regressions

    def json(self) -> dict[str, Any]:
        """The document `edgestats compare --format json` prints."""
        return json.loads(json.dumps(self.comparison.to_json(), allow_nan=False))

    @property
    def sentence(self) -> str:
        from edgestats.reports.compare_page import sentence

        return sentence(self.comparison)

    def chart(self) -> Any:
        """The ratio chart of `compare --out`: B/A per configuration and metric against the band."""
        from edgestats.reports.compare_page import chart_frame, ratio_chart

        frame = chart_frame(self.comparison)
        if frame.height == 0:
            raise ChartError("no matched configuration has a ratio to draw")
        return ratio_chart(frame, self.comparison.threshold)

    def _repr_html_(self) -> str:
        from edgestats.reports.compare_page import figures_table
        from edgestats.reports.page import esc, table_html

        notes = "".join(f"<p><em>note: {esc(n)}</em></p>" for n in self.comparison.notes)
        return (
            f"<p>{esc(self.sentence)}</p>"
            + table_html("Every matched configuration and metric", figures_table(self.comparison))
            + notes
        )

    def __repr__(self) -> str:
        return (
            f"<Comparison B={self.comparison.b.label!r} vs A={self.comparison.a.label!r}: "
            f"{len(self.comparison.matched)} matched, {len(self.regressions)} regressions>"
        )
