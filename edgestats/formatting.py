"""The one formatter of numbers and intervals, and the one wrapper of terminal lines. The report's
page, its tables and sentences, and the terminal output of `edgestats analyze` all print an estimate
as "12.3 [11.9, 12.8]". Terminal lines (doctor, collect) are broken at spaces, never inside a word,
with a hanging indent, to the terminal's width.

Standard library only, so the CLI can use it without loading the analysis or report stack.
"""

from __future__ import annotations

import math
import os
import re
from typing import TextIO

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
    return f"{text} [{_bound_text(float(low), decimals)}, {_bound_text(float(high), decimals)}]"


def _bound_text(bound: float, decimals: int) -> str:
    """A bound at the estimate's decimals, unless those round it to zero: a ratio's interval of
    [0.0027, 48,101] must not read "[0.0, ...]", a bound its quantity cannot take."""
    if bound != 0 and round(bound, decimals) == 0:
        return format_number(bound)
    return format_number(bound, decimals)


# Nouns whose singular is not the plural less its "s" (n_unit values, row and run counts).
SINGULAR = {"latencies": "latency", "entries": "entry", "batches": "batch"}


def counted(n: int, noun: str) -> str:
    """'1 run', '2 runs', '1 latency': a count with its noun (given in the plural) agreeing."""
    if n != 1:
        return f"{n} {noun}"
    return f"{n} {SINGULAR.get(noun, noun[:-1] if noun.endswith('s') else noun)}"


# -- lines that fit the terminal ------------------------------------------------------------------
_GAP = re.compile(r"\S {2,}(?=\S)")  # the first column gap: a word, two or more spaces, a word


def terminal_width(stream: TextIO) -> int | None:
    """The width of the terminal `stream` writes to (COLUMNS, where set, wins, as in rich), or None
    when it is not a terminal: logs and pipes keep whole lines, for grep and for the reader's own
    wrapping."""
    try:
        if not stream.isatty():
            return None
        columns = os.environ.get("COLUMNS", "")
        return (
            int(columns)
            if columns.isdigit() and int(columns) > 0
            else os.get_terminal_size(stream.fileno()).columns
        )
    except (AttributeError, OSError, ValueError):  # a stream without a descriptor (a test's StringIO)
        return None


def hanging_indent(line: str, width: int) -> int:
    """Where a wrapped line's continuations start: under the text after the line's first column
    gap ("  torch  yes  2.1 ..." continues under "yes"), else four spaces in from the line's own
    indent (a title's continuation must not look like a row under it); never past half the width,
    so a continuation keeps room for its words."""
    lead = len(line) - len(line.lstrip(" "))
    gap = _GAP.search(line, lead)
    hang = gap.end() if gap else lead + 4
    return hang if hang <= width // 2 else min(lead + 4, width // 2)


def wrap_spans(line: str, width: int, hang: int | None = None) -> list[tuple[int, int]]:
    """Where to break `line` so each piece fits `width` columns once the continuations are indented
    by `hang` (default: hanging_indent): (start, end) offsets into the line, breaking only at
    spaces. A word is never split: one longer than the room a line has stands alone on its line.
    A percent sign stays with its number ("95 %" is one word here): a line that ends "(95" and
    goes on "%)," reads as two figures."""
    hang = hanging_indent(line, width) if hang is None else hang
    spans: list[tuple[int, int]] = []
    start, end, column0 = 0, 0, 0  # the piece being built; column0: where its first character sits
    for word in re.finditer(r"\S+(?: %\S*)*", line):
        if end > start and column0 + (word.end() - start) > width:
            spans.append((start, end))
            start, column0 = word.start(), hang
        end = word.end()
    spans.append((start, max(end, start)))
    return spans


def wrap_line(line: str, width: int | None, hang: int | None = None) -> list[str]:
    """`line` as lines of at most `width` columns, broken at spaces, continuations indented
    (wrap_spans); width None (not a terminal): the line whole."""
    if width is None or len(line) <= width:
        return [line]
    hang = hanging_indent(line, width) if hang is None else hang
    spans = wrap_spans(line, width, hang)
    return [line[: spans[0][1]]] + [" " * hang + line[s:e] for s, e in spans[1:]]


def wrap_text(text: str, width: int | None) -> str:
    """Every line of `text` wrapped to `width` (wrap_line); None leaves the text as it is."""
    if width is None:
        return text
    return "\n".join(piece for line in text.split("\n") for piece in wrap_line(line, width))
