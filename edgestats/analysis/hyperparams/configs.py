"""Configurations of factor values in hyperparams: a set of runs' mean response, --constraint and
--best. The mean comes with the interval its range allows; --best is the min or max mean response,
ties listed.

Split from hyperparams.py (the analysis per group) and hyperparams/fit.py (the models); the mean
and its interval are shared by the main effects, the best configuration and the
response-vs-iterations means (hyperparams/effects.py).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

import numpy as np
import polars as pl

from edgestats.analysis.estimators.bounded import bounded_mean
from edgestats.analysis.estimators.intervals import Estimate
from edgestats.analysis.load.frames import AnalysisInputError

TEST_SIZE_COLUMN = "n_test"  # samples in the test set, where the DB knows it (for Wilson intervals)
# Two configurations whose mean responses agree to this relative tolerance are tied (published
# tables repeat a value: 99.3 % at three batch sizes).
TIE_REL_TOL = 1e-9
_CONSTRAINT = re.compile(
    r"^\s*([A-Za-z_][A-Za-z0-9_]*)\s*(<=|>=|==|!=|=|<|>)\s*([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\s*$"
)
_OPS = {
    "<=": np.less_equal,
    ">=": np.greater_equal,
    "<": np.less,
    ">": np.greater,
    "=": np.equal,
    "==": np.equal,
    "!=": np.not_equal,
}


@dataclass(frozen=True)
class Condition:
    column: str
    op: str
    value: float

    def __str__(self) -> str:
        return f"{self.column} {self.op} {self.value:g}"


def parse_constraint(text: str | None, columns: list[str]) -> list[Condition]:
    """`training_time_s <= 600` (several joined by 'and'); each side a run column and a number."""
    if not text or not text.strip():
        return []
    conditions = []
    for part in re.split(r"\s+and\s+", text.strip(), flags=re.IGNORECASE):
        match = _CONSTRAINT.match(part)
        if not match:
            raise AnalysisInputError(
                f"--constraint {text!r}: write COLUMN OP NUMBER (OP one of <= < >= > = !=), "
                "joined by 'and', e.g. \"training_time_s <= 600\""
            )
        column, op, value = match.groups()
        if column not in columns:
            raise AnalysisInputError(
                f"--constraint: {column!r} is not a run column; use one of {', '.join(columns)}"
            )
        conditions.append(Condition(column, op, float(value)))
    return conditions


def test_set_size(rows: pl.DataFrame) -> int | None:
    """The runs' test-set size (column n_test) when they share one, else None."""
    if TEST_SIZE_COLUMN not in rows.columns:
        return None
    sizes = rows[TEST_SIZE_COLUMN].drop_nulls().unique().to_list()
    return int(sizes[0]) if len(sizes) == 1 and sizes[0] > 0 else None


def response_mean(rows: pl.DataFrame, response: str, level: float) -> Estimate:
    """The mean response of these runs with the interval its range allows (bounded_mean)."""
    return bounded_mean(
        rows[response].cast(pl.Float64).to_numpy(), response, level, n_test=test_set_size(rows)
    )


def best_configuration(
    rows: pl.DataFrame,
    response: str,
    factors: list[str],
    goal: str,
    conditions: list[Condition],
    level: float = 0.95,
) -> dict:
    """The factor values with the min/max mean response among configurations meeting the constraint."""
    configs = _configurations(rows, response, factors, conditions)
    candidates = configs.filter(pl.Series(_satisfying(configs, factors, conditions)))
    constraint = " and ".join(map(str, conditions)) or None
    if candidates.height == 0:
        return {
            "goal": goal,
            "constraint": constraint,
            "n_satisfying": 0,
            "reason": f"no configuration satisfies {constraint}",
        }
    tied = _tied_best(candidates, factors, goal)
    pick = tied[0]
    config = {f: pick[f] for f in factors}
    tied = [{f: row[f] for f in factors} for row in tied]
    members = rows.filter(
        pl.all_horizontal(
            *(pl.col(f) == v if v is not None else pl.col(f).is_null() for f, v in config.items())
        )
    )
    interval = response_mean(members, response, level)
    return {
        "goal": goal,
        "config": config,
        "value": pick["_value"],
        "n": pick["_n"],
        "ci_low": interval.ci_low,
        "ci_high": interval.ci_high,
        "level": level,
        "method": interval.method,
        "note": interval.note,
        "constraint": constraint,
        "n_satisfying": candidates.height,
        "n_configurations": configs.height,
        "tied": tied if len(tied) > 1 else [],
    }


def _configurations(
    rows: pl.DataFrame, response: str, factors: list[str], conditions: list[Condition]
) -> pl.DataFrame:
    """One row per configuration (its factor values): the mean response (_value), the runs (_n)
    and the mean of each constrained column that is not a factor (_c_COLUMN)."""
    extra = [c.column for c in conditions if c.column not in (response, *factors)]
    return rows.group_by(factors, maintain_order=True).agg(
        pl.col(response).mean().alias("_value"),
        pl.len().alias("_n"),
        *[
            pl.col(c).mean().alias(f"_c_{c}")
            for c in {*extra, *(c.column for c in conditions)}
            if c not in factors
        ],
    )


def _satisfying(configs: pl.DataFrame, factors: list[str], conditions: list[Condition]) -> np.ndarray:
    """Which configurations meet every condition (a missing or infinite value meets none)."""
    keep = np.ones(configs.height, dtype=bool)
    for condition in conditions:
        column = condition.column if condition.column in factors else f"_c_{condition.column}"
        values = configs[column].cast(pl.Float64).to_numpy()
        keep &= np.nan_to_num(_OPS[condition.op](values, condition.value), nan=False).astype(
            bool
        ) & np.isfinite(values)
    return keep


def _tied_best(candidates: pl.DataFrame, factors: list[str], goal: str) -> list[dict]:
    """The configurations with the best mean, in the order of their factor values."""
    ranked = candidates.sort("_value", descending=goal == "max", maintain_order=True)
    top = ranked.row(0, named=True)["_value"]
    # every configuration with the same mean is a winner too: never report one of a tie; the
    # tied ones in the order of their factor values, the first of them reported as `config`
    return sorted(
        (
            row
            for row in ranked.iter_rows(named=True)
            if math.isclose(row["_value"], top, rel_tol=TIE_REL_TOL, abs_tol=0.0)
        ),
        key=lambda row: tuple((row[f] is None, row[f] if row[f] is not None else 0) for f in factors),
    )


def config_text(config: dict) -> str:
    return ", ".join(f"{k}={v}" for k, v in config.items())


def best_row(tags: dict, best: dict) -> dict:
    """The best configuration as a row of the `best` frame (what the text and the report show):
    a tie names every tied configuration in its note."""
    if "reason" in best:
        return {**tags, "goal": best["goal"], "constraint": best.get("constraint"), "note": best["reason"]}
    tied = best.get("tied") or []
    note = (
        f"tied: {len(tied)} configurations have this mean ({'; '.join(config_text(c) for c in tied)})"
        if tied
        else best.get("note")
    )
    return {
        **tags,
        "goal": best["goal"],
        "configuration": config_text(best["config"]),
        "estimate": best["value"],
        "ci_low": best["ci_low"],
        "ci_high": best["ci_high"],
        "n": best["n"],
        "constraint": best.get("constraint"),
        "note": note,
    }
