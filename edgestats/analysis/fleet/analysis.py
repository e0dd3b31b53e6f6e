"""fleet: per device class and configuration, how much identical boards differ and which unit is
unlike its class (docs/cli/analyze.md, "fleet"). The variance of log run latency is split into
between-unit, between-run and within-run parts, the between-unit SD given with its interval, and
each unit is set against the rest of its class, flagged slower or faster under Holm's step-down.

A unit is a device (the name its runs are stored under, `device`), its class `device_class`
(`collect --device-class`, the fleet inventory's `class`). The configuration is the one the other
analyses group by (--by, or every configuration column the runs have values in), without the
device. Each run contributes its median latency, as summary and answers take it
(edgestats.analysis.answers.analysis.run_medians); within-run spread comes from the steady
latencies themselves (edgestats.analysis.estimators.hierarchical.variance_components). The
arithmetic is edgestats.analysis.fleet.stats; the words edgestats.analysis.fleet.text.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import polars as pl

from edgestats.analysis.answers.analysis import run_medians
from edgestats.analysis.core.options import AnalysisOptions
from edgestats.analysis.core.result import (
    AnalysisResult,
    iter_groups,
    not_enough_entry,
    rows_frame,
    unavailable,
)
from edgestats.analysis.estimators.hierarchical import variance_components
from edgestats.analysis.estimators.intervals import BootstrapSettings, Estimate
from edgestats.analysis.fleet import stats as st
from edgestats.analysis.fleet import text
from edgestats.analysis.load.frames import AnalysisData, LatencyIndex, default_config
from edgestats.analysis.summary.analysis import MEDIAN, median_estimate, run_latencies

NAME = "fleet"
CLASS, UNIT = "device_class", "device"
NOT_CONFIG = (CLASS, UNIT, "unit_id", "tags")
NO_CLASS = (
    "no run has a device class: give one with `collect --device-class CLASS` (a board of the fleet "
    "inventory: `class = ...`), then analyze again"
)
COMPONENTS = ("between_unit", "between_run", "within_run")
WITHIN_NOTE = (
    "pooled SD of log latency within runs; no interval: latencies within one run are not independent"
)


@dataclass
class Unit:
    """One unit of a class: its name, summary's median estimate and its runs' medians."""

    name: str
    median: Estimate
    medians: np.ndarray


def fleet_keys(runs: pl.DataFrame, options: AnalysisOptions) -> list[str]:
    """The class and the configuration keys (--by, or default_config), the unit's own left out."""
    config = options.group_keys(runs) or default_config(runs)
    return [CLASS, *(c for c in config if c not in NOT_CONFIG)]


def sd_pct(variance: float | None) -> float | None:
    """A variance of logs as the SD's percent: 100 (exp(sd) - 1), the typical factor apart."""
    if variance is None or not math.isfinite(variance):
        return None
    return 100.0 * math.expm1(math.sqrt(max(variance, 0.0)))


def _component(name: str, variance, low, high, n: int, n_unit: str, method: str, note=None) -> dict:
    estimate = sd_pct(variance)
    bounds = (sd_pct(low), sd_pct(high)) if low is not None and math.isfinite(low) else (None, None)
    return {
        "component": name,
        "metric": f"{name}_sd_pct",
        "estimate": estimate,
        "ci_low": bounds[0],
        "ci_high": bounds[1],
        "variance_log": variance,
        "n": n,
        "n_unit": n_unit,
        "method": method,
        "note": note if bounds[0] is not None or note else "not enough data for an interval",
    }


def components(units: list[Unit], latencies_by_run: list[np.ndarray], level: float) -> list[dict]:
    """The three components, each as an SD in percent (the between-unit and between-run ones with
    their intervals)."""
    anova = st.unit_anova(st.padded([np.log(u.medians) for u in units]))
    runs = int(anova.runs)
    unit_low, unit_high = st.mls_interval(anova, level)
    run_low, run_high = st.between_run_interval(anova, level)
    s2 = float(anova.s2) if anova.df2 >= 1 else None
    between = float(anova.between_unit_var) if s2 is not None else None
    within = variance_components(latencies_by_run).within_run_var if latencies_by_run else None
    return [
        _component(
            "between_unit",
            between,
            float(unit_low),
            float(unit_high),
            len(units),
            "units",
            st.MLS_METHOD,
            None if s2 is not None else "every unit has one run: units and runs cannot be told apart",
        ),
        _component(
            "between_run",
            s2,
            float(run_low),
            float(run_high),
            runs,
            "runs",
            "pooled variance of log run medians within units, chi-square interval",
        ),
        _component(
            "within_run",
            within,
            None,
            None,
            sum(len(r) for r in latencies_by_run),
            "latencies",
            "one-way ANOVA of log latencies within runs",
            WITHIN_NOTE if within is not None else None,
        ),
    ]


def unit_rows(units: list[Unit], level: float) -> list[dict]:
    """Each unit against the rest of its class: ratio, interval, p-values, verdict and its text."""
    contrasts = st.unit_contrasts(st.padded([np.log(u.medians) for u in units]), level)
    verdicts = st.verdicts(contrasts)
    rows = []
    for i, unit in enumerate(units):
        ratio = [None if np.isnan(v[i]) else float(v[i]) for v in (contrasts.ratio, contrasts.ci_low)]
        high = None if np.isnan(contrasts.ci_high[i]) else float(contrasts.ci_high[i])
        p = [None if np.isnan(v[i]) else float(v[i]) for v in (contrasts.p_value, contrasts.p_holm)]
        row = {
            UNIT: unit.name,
            "metric": MEDIAN,
            **{k: unit.median.as_dict()[k] for k in ("estimate", "ci_low", "ci_high", "note")},
            "ratio": ratio[0],
            "ratio_ci_low": ratio[1],
            "ratio_ci_high": high,
            "p_value": p[0],
            "p_holm": p[1],
            "verdict": str(verdicts[i]),
            "flagged": bool(contrasts.flagged[i]),
            "n_runs": len(unit.medians),
            "n": len(unit.medians),
            "n_unit": "runs",
            "level": level,
            "method": st.CONTRAST_METHOD,
        }
        row["verdict_text"] = text.unit_text(row)
        rows.append(row)
    return rows


def class_units(
    sub: pl.DataFrame, index: LatencyIndex, level: float, settings: BootstrapSettings, label: str
) -> list[Unit]:
    """The group's units that have a median latency, in name order."""
    units = []
    for keys, unit_runs in iter_groups(sub, [UNIT]):
        medians = run_medians(unit_runs, index)
        if len(medians):
            name = str(keys[UNIT])
            median = median_estimate(
                unit_runs, index, level=level, settings=settings, label=f"{label}|{name}"
            )
            units.append(Unit(name, median, medians))
    return units


def class_entry(group: dict, sub: pl.DataFrame, index: LatencyIndex, level: float, settings) -> tuple:
    """One class and configuration: its entry and its unit rows and component rows."""
    label = "|".join([NAME, *(f"{k}={v}" for k, v in sorted(group.items()))])
    units = class_units(sub, index, level, settings, label)
    n_runs = sum(len(u.medians) for u in units)
    if len(units) < 2:
        reason = (
            f"{len(units)} unit of class {group[CLASS]} with a latency: units are compared with each other"
        )
        return not_enough_entry(reason, group=group, n=n_runs, level=level), [], []
    latencies = run_latencies(index, sub["run_idx"].to_list())
    parts = components(units, latencies, level)
    rows = unit_rows(units, level)
    group_text = text.group_text(group)
    entry = {
        "group": group,
        "group_text": group_text,
        "n": n_runs,
        "n_unit": "runs",
        "level": level,
        "units": len(units),
        "components": parts,
        "unit_ratios": rows,
    }
    entry["sentence"] = text.sentence(entry)
    keys = {**group, "group": group_text}
    return entry, [{**keys, **row} for row in rows], [{**keys, **part, "level": level} for part in parts]


def fleet(
    runs: pl.DataFrame,
    latencies: pl.DataFrame | None,
    *,
    keys: list[str],
    level: float = 0.95,
    settings: BootstrapSettings | None = None,
) -> AnalysisResult:
    settings = settings or BootstrapSettings()
    if CLASS not in runs.columns or runs[CLASS].is_null().all():
        return unavailable(NAME, level, NO_CLASS, n=runs.height)
    measured = runs.filter(pl.col(CLASS).is_not_null() & pl.col(MEDIAN).is_not_null())
    if measured.height == 0:
        return unavailable(NAME, level, "no run with a device class has a latency", n=runs.height)
    index = LatencyIndex(latencies)
    entries, unit_frame, component_frame = [], [], []
    for group, sub in iter_groups(measured, keys):
        entry, rows, parts = class_entry(group, sub, index, level, settings)
        entries.append(entry)
        unit_frame += rows
        component_frame += parts
    frames = (
        {"units": rows_frame(unit_frame), "components": rows_frame(component_frame)} if unit_frame else {}
    )
    return AnalysisResult(NAME, level, entries, frames)


def analyse(data: AnalysisData, options: AnalysisOptions) -> AnalysisResult:
    """The registry's entry point: per device class and configuration (--by, or default_config)."""
    return fleet(
        data.runs,
        data.latencies,
        keys=fleet_keys(data.runs, options),
        level=options.level,
        settings=options.settings,
    )
