"""What every analysis returns, and the JSON conventions they share (docs/cli/analyze.md).

An analysis is a pure function: polars frames in, an `AnalysisResult` out. The result carries

- `entries`: the JSON list printed by `edgestats analyze --json` under the analysis' name. Each
  entry has "group" (the group keys and their values), "n" and "n_unit" (what n counts), and
  every estimate with "ci_low", "ci_high" and "level". Where no estimate can be made, the entry
  says so in "reason" (and a value without an interval says why in "note"); NaN and ±inf never
  appear, they become null.
- `frames`: tidy polars frames of the figures, one row per plotted point, with ci_low, ci_high,
  level and n columns, for the report's charts.
- `chart_only`: the keys of frames that only feed a chart (raw points, a fitted band, an ECDF
  grid): the report draws them but shows no table of them, and the terminal skips them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import polars as pl

from edgestats.analysis.estimators.intervals import Estimate

NOT_ENOUGH_DATA = "not enough data"


@dataclass
class AnalysisResult:
    name: str
    level: float
    entries: list[dict[str, Any]] = field(default_factory=list)
    frames: dict[str, pl.DataFrame] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    chart_only: set[str] = field(default_factory=set)

    @property
    def frame(self) -> pl.DataFrame:
        """The main figure frame (the first one)."""
        return next(iter(self.frames.values())) if self.frames else pl.DataFrame()

    @property
    def available(self) -> bool:
        """False when the data supports none of this analysis (every entry is a reason)."""
        return any("reason" not in e for e in self.entries)

    def to_json(self) -> list[dict[str, Any]]:
        return [json_safe(e) for e in self.entries]


def unavailable(
    name: str, level: float, reason: str, *, group: dict | None = None, n: int = 0, n_unit: str = "runs"
) -> AnalysisResult:
    """The result of an analysis the data cannot support: one entry that says why."""
    return AnalysisResult(
        name, level, [not_enough_entry(reason, group=group, n=n, n_unit=n_unit, level=level)]
    )


def not_enough_entry(
    reason: str, *, group: dict | None = None, n: int = 0, n_unit: str = "runs", level: float, **extra: Any
) -> dict[str, Any]:
    text = reason if reason.startswith(NOT_ENOUGH_DATA) else f"{NOT_ENOUGH_DATA}: {reason}"
    return {"group": group or {}, "n": n, "n_unit": n_unit, "level": level, **extra, "reason": text}


def json_safe(value: Any) -> Any:
    """Plain JSON values: NaN/inf -> None, numpy and polars scalars -> Python, estimates -> dicts."""
    if isinstance(value, Estimate):
        return json_safe(value.as_dict())
    if isinstance(value, dict):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if hasattr(value, "item") and not isinstance(value, (list, dict)):  # numpy scalar
        value = value.item()
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, (int, bool)):
        return value
    return str(value)


def estimate_row(group: dict[str, Any], estimate: Estimate, **columns: Any) -> dict[str, Any]:
    """One row of a tidy figure frame: group keys, the given columns, then the estimate."""
    return {**group, **columns, **estimate.as_dict()}


def rows_frame(rows: list[dict[str, Any]], schema_hint: list[str] | None = None) -> pl.DataFrame:
    """A frame from row dicts whose keys may differ between rows (missing keys become null)."""
    if not rows:
        return pl.DataFrame({c: [] for c in (schema_hint or [])})
    columns: list[str] = []
    for row in rows:
        for key in row:
            if key not in columns:
                columns.append(key)
    data = {c: [json_safe(r.get(c)) for r in rows] for c in columns}
    return pl.DataFrame(data, strict=False, infer_schema_length=None)


def iter_groups(frame: pl.DataFrame, keys: list[str]):
    """(group dict, sub-frame) for each combination of `keys`, in sorted order (NULLs last);
    the whole frame as one group {} when there are no keys."""
    if not keys:
        yield {}, frame
        return
    ordered = frame.sort(keys, nulls_last=True, maintain_order=True)
    for values, sub in ordered.group_by(keys, maintain_order=True):
        yield dict(zip(keys, (json_safe(v) for v in values))), sub


def group_label(name: str, group: dict[str, Any], *parts: Any) -> str:
    """A stable text for seeding one estimate's bootstrap."""
    return "|".join([name, *(f"{k}={v}" for k, v in sorted(group.items())), *map(str, parts)])
