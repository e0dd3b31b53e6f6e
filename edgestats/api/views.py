"""What the notebook API returns: an analysis' frames, JSON and charts; a comparison's.

Nothing here computes: the figures come from the analysis layer (an AnalysisResult, a
Comparison) and the charts from the report's own builders (reports/report.py `figures_for`,
reports/compare_page.py), so a chart in a notebook is the chart `analyze --out` and
`compare --out` draw. Objects show themselves in Jupyter (`_repr_html_`): the report's sentence
(and, for `answers`, its one sentence per group) and its tables, intervals merged into cells as the
report's tables do; a comparison leads with its warnings and gives its overall ratio. `print()`
gives the sentences as text.
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
        from edgestats.reports.captions import unavailable_sentence
        from edgestats.reports.report import section_module

        return (
            section_module(self.name).sentence(self.result)
            if self.available
            else unavailable_sentence(self.result)
        )

    @property
    def sentences(self) -> list[str]:
        """The report's sentence per group, where the analysis answers group by group (answers:
        "On pi5 / cnn9 / batch 1 / fp32, onnxruntime is the fastest ...", as `analyze` prints
        them); empty for the others (their `.sentence` says it all)."""
        from edgestats.reports.report import section_module

        per_group = getattr(section_module(self.name), "sentences", None)
        return list(per_group(self.result)) if self.available and per_group is not None else []

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
        from edgestats.reports.page import esc

        parts = [f"<h4>{esc(self.name)}</h4><p>{esc(self.sentence)}</p>"]
        if self.sentences:
            parts.append("<ul>" + "".join(f"<li>{esc(s)}</li>" for s in self.sentences) + "</ul>")
        parts += self._tables_html() if self.available else []
        parts += [f"<p><em>note: {esc(note)}</em></p>" for note in self.notes]
        return "".join(parts)

    def _tables_html(self) -> list[str]:
        """The page's compact answers tables for answers (a group a row); else the report's tables."""
        from edgestats.reports.page import table_html
        from edgestats.reports.page_answers import answers_html
        from edgestats.reports.page_tables import Footnotes
        from edgestats.reports.report import table_frames

        if self.name == "answers":
            notes = Footnotes()
            compact = answers_html(self.result, notes)
            if compact:
                return [compact, notes.html().replace("<h2>Notes</h2>", "")]
        return [table_html(caption, frame) for _, caption, frame in table_frames(self.name, self.result)]

    def __str__(self) -> str:
        """The sentence, then one line per group's sentence (answers), then the notes."""
        lines = [f"{self.name}: {self.sentence}", *[f"- {s}" for s in self.sentences]]
        return "\n".join(lines + [f"note: {note}" for note in self.notes])

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

    def __str__(self) -> str:
        return "\n\n".join(str(view) for view in self._views.values())

    def __repr__(self) -> str:
        return f"<Analyses {', '.join(self._views)}>"


class ComparisonView:
    """B against A (edgestats/analysis/compare/comparison.py): `.frame`, `.json()`, `.chart()`,
    `.regressions`,
    `.overall` (the geometric mean of B/A across configurations) and `.warnings`."""

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

    @property
    def overall(self) -> pl.DataFrame:
        """One row per metric: the geometric mean of the ratios B/A across the matched
        configurations, with its interval (`estimate`, `ci_low`, `ci_high`, `n_configurations`)."""
        rows = [o.as_dict() for o in self.comparison.overall]
        return pl.DataFrame(rows, infer_schema_length=None) if rows else pl.DataFrame()

    @property
    def warnings(self) -> list[dict[str, Any]]:
        """Why the result may be unstable (noisy runs, a wide spread between runs), each with its
        `message` and `next_step`: the JSON's `warnings`, empty when there is nothing to warn about."""
        return self.json()["warnings"]

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

    def _warning_lines(self) -> list[str]:
        """pyperf's "WARNING: the result may be unstable", then each cause with its next step."""
        from edgestats.analysis.compare.cautions import HEADLINE

        if not self.comparison.warnings:
            return []
        return [f"WARNING: {HEADLINE}"] + [
            f"- {w.message}. Next: {w.next_step}." for w in self.comparison.warnings
        ]

    def _overall_texts(self) -> list[str]:
        """'median latency 0.679 [0.152, 3.030] over 2 configurations' per metric."""
        from edgestats.analysis.compare.comparison import METRICS
        from edgestats.formatting import counted, format_interval

        return [
            f"{METRICS[o.metric][0]} {format_interval(o.estimate, o.ci_low, o.ci_high)} over "
            f"{counted(o.n_configurations, 'configurations')}" + (f" ({o.note})" if o.note else "")
            for o in self.comparison.overall
        ]

    def _repr_html_(self) -> str:
        from edgestats.reports.compare_page import figures_table, overall_table
        from edgestats.reports.page import esc, table_html

        head, *causes = self._warning_lines() or [""]
        banner = (
            f"<div role=alert><p><strong>{esc(head)}</strong></p>"
            + "<ul>"
            + "".join(f"<li>{esc(c[2:])}</li>" for c in causes)
            + "</ul></div>"
            if head
            else ""
        )
        overall = (
            table_html(
                "Overall: the geometric mean of B/A across the matched configurations",
                overall_table(self.comparison),
            )
            if self.comparison.overall
            else ""
        )
        notes = "".join(f"<p><em>note: {esc(n)}</em></p>" for n in self.comparison.notes)
        return (
            banner
            + f"<p>{esc(self.sentence)}</p>"
            + table_html("Every matched configuration and metric", figures_table(self.comparison))
            + overall
            + notes
        )

    def __str__(self) -> str:
        """The warnings, the sentence and the overall ratio per metric, as text."""
        overall = [f"overall B/A: {text}" for text in self._overall_texts()]
        return "\n".join([*self._warning_lines(), self.sentence, *overall])

    def __repr__(self) -> str:
        overall = "; ".join(f"overall {text}" for text in self._overall_texts())
        warned = len(self.comparison.warnings)
        return (
            f"<Comparison B={self.comparison.b.label!r} vs A={self.comparison.a.label!r}: "
            f"{len(self.comparison.matched)} matched, {len(self.regressions)} regressions"
            + (f"; {overall}" if overall else "")
            + (
                f"; {warned} warning{'' if warned == 1 else 's'}: the result may be unstable"
                if warned
                else ""
            )
            + ">"
        )
