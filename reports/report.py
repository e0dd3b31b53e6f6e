"""`write_report`: analysis results as index.html, analysis.json, and on request every chart as
PNG/SVG and every table as LaTeX/Markdown/CSV.

The page is built from what the caller loaded and hands in: the results, the DB's overview
(the header) and the power trace of one run (edgestats.analysis.load.overview / load_power_trace). Nothing
here opens a DB. Sections come from the analysis registry: the title of each entry, and the
figures and sentence of its module under reports/sections/.
"""

from __future__ import annotations

import os
import tempfile
import traceback
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from edgestats.analysis import dumps
from edgestats.analysis.load.overview import Overview
from edgestats.analysis.load.power_trace import PowerTrace
from edgestats.errors import EdgestatsError
from edgestats.registry import analyses as registry
from edgestats.registry import resolve
from edgestats.reports.captions import unavailable_sentence, with_intervals
from edgestats.reports.charts_common import (
    ESTIMATE_COLUMNS,
    estimate_interval_chart,
    facet_column,
    filter_fields,
    label_column,
    no_data_chart,
    varying,
)
from edgestats.reports.charts_energy import power_over_time_chart
from edgestats.reports.images import IMAGE_FORMATS, write_images
from edgestats.reports.page import Figure, Section, element_id, render_page
from edgestats.reports.tables import TABLE_FORMATS
from edgestats.reports.tables_write import write_tables

# Columns of result frames that mean nothing to a reader of a table.
HIDDEN_COLUMNS = ("run_idx",)


class ReportError(EdgestatsError):
    """The report cannot be written where or as asked."""


@dataclass
class ReportFiles:
    index: Path
    analysis_json: Path
    images: list[Path] = field(default_factory=list)
    tables: list[Path] = field(default_factory=list)
    chart_errors: list[str] = field(default_factory=list)


# -- charts per analysis -------------------------------------------------------------------------


def section_module(name: str) -> Any:
    """The reports/sections module of a registry entry."""
    return resolve(registry.analysis(name).section)


def section_title(name: str) -> str:
    try:
        return registry.analysis(name).title
    except KeyError:  # a result of an analysis no longer in the registry: still shown, under its name
        return name


def figures_for(name: str, result: Any) -> list[tuple[str, str, Callable[[], Any]]]:
    """(key, title, build) for each chart of an analysis' section module; frames it does not
    draw (its DRAWN) but that carry intervals get the generic estimate-and-interval chart."""
    return [*section_module(name).figures(result), *generic_figures(name, result)]


def generic_figures(name: str, result: Any) -> list[tuple[str, str, Callable[[], Any]]]:
    """The generic estimate-and-interval chart of each frame with intervals the section does not draw."""
    drawn = getattr(section_module(name), "DRAWN", frozenset())
    out = []
    for frame_key, frame in result.frames.items():
        if (
            frame is not None
            and frame.height
            and frame_key not in drawn
            and {"estimate", "ci_low", "ci_high"} <= set(frame.columns)
        ):
            out.append(
                (
                    frame_key,
                    with_intervals(frame_key.replace("_", " "), frame),
                    lambda f=frame: generic_interval_chart(f),
                )
            )
    return out


def generic_interval_chart(frame: pl.DataFrame):
    """Estimates with intervals of any tidy frame: one row per group, faceted when the frame
    has several devices or frameworks."""
    keys = [
        c
        for c in frame.columns
        if c not in ESTIMATE_COLUMNS
        and frame.schema[c] in (pl.String, pl.Int64, pl.Int32, pl.Boolean, pl.Float64)
        and c not in ("p_value", "p_holm", "share_of_total", "n_runs", "r_squared")
    ]
    facet_by = facet_column(frame.select(keys))
    labelled = label_column(frame, [c for c in varying(frame, keys) if c != facet_by] or keys)
    labelled = labelled.with_columns(*(pl.col(c).cast(pl.Float64) for c in ("estimate", "ci_low", "ci_high")))
    columns = [
        *filter_fields(labelled, "config", *([facet_by] if facet_by else [])),
        "estimate",
        "ci_low",
        "ci_high",
        "level",
        "n",
    ]
    return estimate_interval_chart(
        labelled.select([c for c in columns if c in labelled.columns]).filter(
            pl.col("estimate").is_not_null()
        ),
        category="config",
        x_title="estimate",
        facet_by=facet_by,
    )


# -- sections ------------------------------------------------------------------------------------


def table_frames(name: str, result: Any) -> list[tuple[str, str, pl.DataFrame]]:
    """(key, caption, frame) of every figure frame worth a table."""
    out = []
    for key, frame in result.frames.items():
        if (
            frame is None or frame.height == 0 or key in getattr(result, "chart_only", ())
        ):  # points, bands: charts only
            continue
        out.append(
            (
                f"{name}-{key}",
                f"{name}: {key.replace('_', ' ')}",
                frame.drop([c for c in HIDDEN_COLUMNS if c in frame.columns]),
            )
        )
    return out


def build_section(name: str, result: Any, errors: list[str]) -> Section:
    available = getattr(result, "available", True)
    if not available:
        return Section(
            name, section_title(name), unavailable_sentence(result), notes=list(getattr(result, "notes", []))
        )
    generic = {key for key, _, _ in generic_figures(name, result)}
    figures = []
    for key, title, build in figures_for(name, result):
        try:
            figures.append(Figure(key, title, build().to_dict(), secondary=key in generic))
        except Exception as exc:  # noqa: BLE001  (one bad chart must not cost the user the whole report)
            errors.append(f"{name}/{key}: {exc!r}\n{traceback.format_exc()}")
            figures.append(
                Figure(key, title, no_data_chart(f"this chart could not be drawn: {exc}").to_dict())
            )
    sentence = section_module(name).sentence(result)
    tables = [(caption, frame) for _, caption, frame in table_frames(name, result)]
    return Section(name, section_title(name), sentence, figures, tables, list(getattr(result, "notes", [])))


def power_section(trace: PowerTrace | None) -> Section:
    title = "Power over time of one run (pCAMP Figures 1 and 3)"
    if trace is None:
        return Section(
            "power",
            title,
            "No run in this DB has power samples, so there is no power trace to draw "
            "(collect with a power source, e.g. --power rapl, or --power csv:PATH for a meter's log).",
        )
    idle = (
        f"the dashed line is the device's idle baseline ({trace.idle_power_w:.2f} W), so the area "
        "between the curve and it is the energy attributed to the workload"
        if trace.idle_power_w is not None
        else "no idle baseline was measured for this device (run `edgestats baseline`), "
        "so energy above idle is unknown"
    )
    sentence = (
        f"The power of run {trace.run_id} ({trace.label}), averaged into {trace.power.height} time buckets, "
        f"with each phase's window shaded; {idle}."
    )
    return Section(
        "power",
        title,
        sentence,
        [Figure("trace", "Power over time, phases shaded", power_over_time_chart(trace).to_dict())],
    )


# -- writing -------------------------------------------------------------------------------------


def _write_atomic(path: Path, text: str) -> None:
    """Write via a temporary file and rename: an interrupted run never leaves half a page."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp makes it private; a report is for sharing
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def prepare_out_dir(out_dir: Path) -> None:
    if out_dir.exists() and not out_dir.is_dir():
        raise ReportError(
            f"--out {out_dir} is a file; give a folder for the report (it is created if missing)."
        )
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ReportError(
            f"cannot create the report folder {out_dir}: {exc.strerror}; choose another --out."
        ) from None


def write_report(
    out_dir: str | Path,
    results: dict[str, Any],
    overview: Overview,
    power_trace: PowerTrace | None = None,
    *,
    images: Iterable[str] = (),
    tables: str | None = None,
    environment: dict[str, pl.DataFrame] | None = None,
) -> ReportFiles:
    """Write `out_dir/index.html` and `out_dir/analysis.json`; with `images` ("png", "svg") every
    chart under `images/`, with `tables` ("latex", "markdown", "csv") every table under `tables/`.

    `overview` is the header (edgestats.analysis.load.overview.load_overview), `power_trace` the run
    drawn in the power section (edgestats.analysis.load.power_trace.load_power_trace; None: no run has
    power samples), `environment` the devices' facts and software versions of the environment
    section (edgestats.analysis.load.environment.load_environment; None: the overview's devices)."""
    out_dir, images = Path(out_dir), list(images)
    if any(f not in IMAGE_FORMATS for f in images):
        raise ReportError(f"unknown image format in {images}: use {', '.join(IMAGE_FORMATS)}")
    if tables is not None and tables not in TABLE_FORMATS:
        raise ReportError(f"--tables {tables}: use one of {', '.join(TABLE_FORMATS)}")
    prepare_out_dir(out_dir)
    errors: list[str] = []
    sections = [build_section(name, result, errors) for name, result in results.items()]
    sections.append(power_section(power_trace))
    index = out_dir / "index.html"
    page = render_page(
        overview,
        sections,
        summary=results.get("summary"),
        answers=results.get("answers"),
        environment=environment,
    )
    _write_atomic(index, page)
    analysis_json = out_dir / "analysis.json"
    _write_atomic(analysis_json, dumps(results) + "\n")  # the same document as `analyze --json`
    files = ReportFiles(index, analysis_json, chart_errors=errors)
    specs = {element_id(s.key, f.key): f.spec for s in sections for f in s.figures}
    files.images = write_images(specs, out_dir, images)
    if tables:
        files.tables = write_tables(results, out_dir, tables, environment=environment)
    return files
