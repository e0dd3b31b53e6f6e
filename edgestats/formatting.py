"""The one formatter of numbers and intervals: the report's page, its tables and sentences, and
the terminal output of `edgestats analyze` all print an estimate as "12.3 [11.9, 12.8]".

Standard library only, so the CLI can use it without loading the analysis or report stack.
"""

from __future__ import annotations

import math

MISSING = "–"  # what a cell shows for no value (None, NaN, ±inf)


def is_missing(x: object) -> bool:
    return x is None or (isinstance(x, float) and not math.isfinite(x))


def decimals_for(x: float, significant: int = 3) -> int:
    """Decimals that show `significant` digits of x (none for large values)."""
    if x == 0:
        return 0
    magnitude = math.floor(math.log10(abs(x)))
    return max(significant - 1 - magnitude, 0)


def format_number(x: object, decimals: int | None = None) -> str:
    """3 significant digits, thousands separated; very small or huge values in e-notation."""
    if is_missing(x):
        return MISSING
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        return str(x)
    if isinstance(x, int):
        return f"{x:,}"
    if x != 0 and (abs(x) < 1e-3 or abs(x) >= 1e12):
        return f"{x:.2e}"
    return f"{x:,.{decimals_for(x) if decimals is None else decimals}f}"


def format_interval(estimate: object, low: object, high: object) -> str:
    """'12.3 [11.9, 12.8]': the bounds get the estimate's decimals, so the digits line up."""
    if is_missing(estimate):
        return MISSING
    decimals = decimals_for(float(estimate))
    text = format_number(float(estimate), decimals)
    if is_missing(low) or is_missing(high):
        return text  # n too small for an interval: the estimate alone, never a made-up one
    if "e" in text:  # an estimate in e-notation: its bounds too, not "9.39e-04 [8.37e-04, 0.001054]"
        return f"{text} [{float(low):.2e}, {float(high):.2e}]"
    return f"{text} [{format_number(float(low), decimals)}, {format_number(float(high), decimals)}]"


# Nouns whose singular is not the plural less its "s" (n_unit values, row and run counts).
SINGULAR = {"latencies": "latency", "entries": "entry", "batches": "batch"}


def counted(n: int, noun: str) -> str:
    """'1 run', '2 runs', '1 latency': a count with its noun (given in the plural) agreeing."""
    if n != 1:
        return f"{n} {noun}"
    return f"{n} {SINGULAR.get(noun, noun[:-1] if noun.endswith('s') else noun)}"
