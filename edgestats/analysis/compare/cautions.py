"""compare's warnings: when the result may be unstable, say why and what to do (docs/cli/compare.md,
"Warnings"). They never change a verdict or the exit status; they say how far to trust them.

Two causes, each over the runs of the matched configurations only (the runs compared):
- noisy runs: collect's noise sentinel flagged runs of either side (runs.noisy, with the reasons
  in runs.noise_reason, '; '-separated): the machine was busy, throttled or swapping while they
  ran, so their figures include that;
- a large between-run spread: in some configuration and side, the coefficient of variation of the
  runs' median latencies (sample SD over mean, at least 2 runs) exceeds SPREAD_LIMIT_CV. Runs of a
  quiet machine differ by 1-8 %; beyond 10 % the intervals are wide and a small change is missed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import polars as pl

from edgestats.analysis.core.result import iter_groups, json_safe

SPREAD_LIMIT_CV = 0.10
SPREAD_METRIC = "latency_median_ms"
HEADLINE = "the result may be unstable"  # pyperf's words; the causes follow it
NOISE_NEXT = (
    "quiet the machine (edgestats doctor lists what makes runs noisy here) and collect again; "
    '--where "noisy IS NOT TRUE" leaves the noisy runs out'
)
SPREAD_NEXT = (
    "collect more runs, until each median is precise (edgestats collect --until-precise), "
    "on a quiet machine (edgestats doctor)"
)


@dataclass
class CompareWarning:
    """One cause of instability: what was found (`message`), what to do (`next_step`), and the
    figures behind it for scripts (`details`)."""

    kind: str  # "noisy" or "spread"
    message: str
    next_step: str
    details: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return json_safe(
            {"kind": self.kind, "message": self.message, "next_step": self.next_step, **self.details}
        )


def reason_kind(reason: str) -> str:
    """A sentinel reason without its figures: "other processes used 85 % of 2 CPUs (> 10 %)" ->
    "other processes used … of … CPUs", so runs with the same cause count together."""
    text = re.sub(r"\s*\([^)]*\)", "", reason)
    text = re.sub(r"\d[\d.,]*(\s*(%|MiB|MHz|C)(?=\s|$))?|0x[0-9a-f]+", "…", text)
    return re.sub(r"\s+", " ", text).strip()


def matched_runs(runs: pl.DataFrame, key: list[str], configs: list[dict]) -> list[tuple[dict, pl.DataFrame]]:
    """(config, its runs) for each matched configuration."""
    wanted = {tuple(c.values()) for c in configs}
    return [(g, sub) for g, sub in iter_groups(runs, key) if tuple(g.values()) in wanted]


def noisy_warning(sides: dict[str, list[tuple[dict, pl.DataFrame]]]) -> CompareWarning | None:
    """How many runs of each side the sentinel flagged, and why; None when none was."""
    n_runs, n_noisy, reasons = {}, {}, {}
    for side, groups in sides.items():
        runs = pl.concat([sub for _, sub in groups], how="diagonal_relaxed") if groups else pl.DataFrame()
        n_runs[side] = runs.height
        flagged = runs.filter(pl.col("noisy").fill_null(False)) if "noisy" in runs.columns else runs.clear()
        n_noisy[side] = flagged.height
        texts = flagged["noise_reason"].to_list() if "noise_reason" in flagged.columns else []
        for text in texts:
            for kind in dict.fromkeys(reason_kind(r) for r in (text or "").split("; ") if r.strip()):
                reasons[kind] = reasons.get(kind, 0) + 1
    total = sum(n_noisy.values())
    if not total:
        return None
    by_side = ", ".join(f"{n_noisy[s]} of {n_runs[s]} on {s.upper()}" for s in sides)
    ordered = sorted(reasons.items(), key=lambda kv: -kv[1])
    why = "; ".join(f"{kind}: {n} {'run' if n == 1 else 'runs'}" for kind, n in ordered)
    message = (
        f"{total} of {sum(n_runs.values())} runs compared were flagged noisy by collect's noise sentinel "
        f"({by_side})" + (f"; reasons: {why}" if why else "")
    )
    details = {"n_noisy": n_noisy, "n_runs": n_runs, "reasons": dict(ordered)}
    return CompareWarning("noisy", message, NOISE_NEXT, details)


def spread_cv(values: np.ndarray) -> float | None:
    """The coefficient of variation of the runs' figures (sample SD / mean); None below 2 runs."""
    values = values[np.isfinite(values)]
    if len(values) < 2 or not np.mean(values) > 0:
        return None
    return float(np.std(values, ddof=1) / np.mean(values))


def varying_keys(sides: dict[str, list[tuple[dict, pl.DataFrame]]]) -> set[str]:
    """The key columns whose value differs between the matched configurations (their labels)."""
    configs = [config for groups in sides.values() for config, _ in groups]
    return {k for k in (configs[0] if configs else {}) if len({repr(c.get(k)) for c in configs}) > 1}


def spread_warning(
    sides: dict[str, list[tuple[dict, pl.DataFrame]]], n_configs: int
) -> CompareWarning | None:
    """The configurations (and sides) whose runs' median latencies differ by more than
    SPREAD_LIMIT_CV; None when none does."""
    wide = []
    for side, groups in sides.items():
        for config, sub in groups:
            cv = (
                spread_cv(sub[SPREAD_METRIC].cast(pl.Float64).to_numpy())
                if SPREAD_METRIC in sub.columns
                else None
            )
            if cv is not None and cv > SPREAD_LIMIT_CV:
                wide.append({"side": side, "config": config, "cv": cv, "n_runs": sub.height})
    if not wide:
        return None
    worst = max(wide, key=lambda w: w["cv"])
    label = "".join(f", {k}={v}" for k, v in worst["config"].items() if k in varying_keys(sides))
    n_wide = len({repr(w["config"]) for w in wide})
    message = (
        f"the runs' median latencies differ by more than {SPREAD_LIMIT_CV:.0%} (coefficient of variation "
        f"between runs) in {n_wide} of {n_configs} configurations; the largest: "
        f"{worst['cv']:.0%} over {worst['n_runs']} runs of {worst['side'].upper()}{label}"
    )
    details = {"limit_cv": SPREAD_LIMIT_CV, "configurations": wide}
    return CompareWarning("spread", message, SPREAD_NEXT, details)


def compare_warnings(comparison: Any, runs_a: pl.DataFrame, runs_b: pl.DataFrame) -> list[CompareWarning]:
    """The warnings of a comparison (its key and matched configurations) of these runs."""
    configs = [config for config, _ in comparison.matched]
    sides = {
        "a": matched_runs(runs_a, comparison.key, configs),
        "b": matched_runs(runs_b, comparison.key, configs),
    }
    found = [noisy_warning(sides), spread_warning(sides, len(configs))]
    return [w for w in found if w is not None]
