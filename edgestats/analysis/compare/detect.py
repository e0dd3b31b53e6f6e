"""compare's minimum detectable effect in words, and the runs that would settle an inconclusive
verdict (docs/cli/compare.md, "What it could detect").

With 2 or 3 noisy runs a side the minimum detectable effect (welch.min_detectable_pct) can
be millions of percent: "could detect ≥ 434,234,365,500,553,216%" is true and of no use. So it is
said as a percentage below +100 %, as a factor of A's figure from 2× on ("only a change ≥ 3.1×"),
and beyond HOPELESS_FACTOR as what it means: no change of a size that matters is reliably found
at this spread ("no change below 100×"). The number itself stays in the JSON.

Beside an inconclusive verdict, the next step: how many runs a side would make the ratio's
interval ±threshold at the spreads measured (estimators/welch.py, runs_to_resolve: Welch's t interval of
the difference of mean logs, the same number of runs on both sides; more runs, not longer ones,
narrow a run-level interval, Kalibera & Jones 2013), or ±threshold/2 where the runs already reach
±threshold (an interval that straddles the band's edge needs a narrower one to settle either way).
"""

from __future__ import annotations

import math
from typing import Any

from edgestats.analysis.estimators.welch import MAX_RUNS, RESOLVE_TARGET, Design, runs_to_resolve

FACTOR_FROM_PCT = 100.0  # from +100 % (B twice A) on, a change is said as a factor: 3.1×, not 210%
HOPELESS_FACTOR = 100.0  # past 100×, "no change below 100×": a larger figure helps nobody decide


def pct_text(pct: float) -> str:
    """7.9%, 12%, 99%: one decimal below 10 %, whole percents above."""
    return f"{pct:.1f}%" if pct < 9.95 else f"{pct:,.0f}%"


def change_text(mde_pct: float | None) -> str | None:
    """The minimum detectable change as a reader takes it: '12%', '3.1×'; None beyond
    HOPELESS_FACTOR or where no change of any size reaches the power."""
    if mde_pct is None or not math.isfinite(mde_pct):
        return None
    factor = 1.0 + mde_pct / 100.0
    if factor > HOPELESS_FACTOR:
        return None
    return pct_text(mde_pct) if mde_pct < FACTOR_FROM_PCT else f"{factor:.3g}×"


def detect_text(mde_pct: float | None) -> str:
    """'could detect ≥ 12%', 'could detect only a change ≥ 3.1×', 'could detect no change below
    100×' or 'could detect no change of any size' (the minimum detectable effect, at 80 % power)."""
    shown = change_text(mde_pct)
    if shown is not None:
        return (
            f"could detect ≥ {shown}"
            if mde_pct < FACTOR_FROM_PCT
            else f"could detect only a change ≥ {shown}"
        )
    if mde_pct is None or not math.isfinite(mde_pct):
        return "could detect no change of any size"
    return f"could detect no change below {HOPELESS_FACTOR:g}×"


def _runs(n: int) -> str:
    return f"{n:,} run{'' if n == 1 else 's'}"


def resolve_step(design: Design, *, level: float, threshold: float) -> dict[str, Any] | None:
    """The runs a side that would make the ratio's interval ±threshold (else ±threshold/2) at
    the measured spreads, as {runs_needed, more_runs, target_rel_half_width, text}; None where
    the runs already reach both (more runs still narrow the interval, but no count is named)."""
    target = threshold if threshold > 0 else RESOLVE_TARGET
    fewest = min(design.n_a, design.n_b)
    for goal in (target, target / 2):
        needed = runs_to_resolve(design.sd_a, design.sd_b, level, goal)
        if needed is None:
            return {
                "runs_needed": None,
                "more_runs": None,
                "target_rel_half_width": goal,
                "text": f"more than {_runs(MAX_RUNS)} a side would be needed to resolve ±{goal * 100:g}%",
            }
        if needed > fewest:
            more = needed - fewest
            runs = (
                f"{_runs(more).replace(' run', ' more run')}" if design.n_a == design.n_b else _runs(needed)
            )
            return {
                "runs_needed": needed,
                "more_runs": more,
                "target_rel_half_width": goal,
                "text": f"about {runs} a side would resolve ±{goal * 100:g}%",
            }
    return None


def describe_detectable(test: Any, threshold: float) -> None:
    """Set a compare.RatioTest's minimum detectable effect in words and, where its verdict is
    inconclusive, the runs that would settle it."""
    if test.min_detectable_alpha is not None:
        test.min_detectable_text = detect_text(test.min_detectable_pct)
    if test.verdict == "inconclusive" and test.design is not None:
        test.next_step = resolve_step(test.design, level=test.level, threshold=threshold)
