"""An external power meter's log (USB or wall-plug meter): a CSV of timestamp, power_w.

This is how a Raspberry Pi, which has no power sensor, still gets energy. The meter logs on
its own clock; runs are timed on this host's CLOCK_MONOTONIC. The orchestrator records one
(monotonic_ns, unix_ns) pair per run (a `ClockAnchor`), which maps run windows to wall-clock
time; `clock_offset_s` (--clock-offset) is then added to every meter timestamp to put it on
this host's wall clock (meter 2 s behind the host: +2).

File format: a header row with at least the columns `timestamp` and `power_w` (others are
ignored, names are case-insensitive), then one row per sample. `timestamp` is Unix seconds
(`1700000000.25`) or ISO 8601 (`2023-11-14T22:13:20.25+01:00`, or `...Z`). An ISO time
without a timezone is taken as UTC: meters that log local time need --clock-offset.
"""

from __future__ import annotations

import bisect
import csv
import math
import re
import sys
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from edgestats.collectors.power.base import PowerReading, PowerSource, PowerSourceError
from edgestats.collectors.power.energy import integrate_trapezoid, value_at
from edgestats.store.userpaths import check_size

EXPECTED_COLUMNS = ("timestamp", "power_w")
# Python 3.10's datetime.fromisoformat takes a fraction of exactly 3 or 6 digits and an offset only with
# a colon; 3.11's takes any ISO 8601. On 3.10 these two are rewritten first (as_iso_310).
_FRACTION = re.compile(r"(:\d\d)[.,](\d{1,6})\d*")
_COLONLESS_OFFSET = re.compile(r"(:\d\d(?:\.\d+)?[+-]\d\d)(\d\d)$")  # after a time
RAIL = "meter"
# A meter log larger than this is refused before it is read (its samples are held in memory: about
# 4 bytes of memory per byte of log): 10 Hz for a week is about 20 MB. Trim it to the collect's span.
MAX_LOG_BYTES = 256 * 2**20


@dataclass(frozen=True)
class ClockAnchor:
    """One simultaneous read of the monotonic and the wall clock, taken by the orchestrator."""

    monotonic_ns: int
    unix_ns: int

    @classmethod
    def now(cls) -> ClockAnchor:
        return cls(time.monotonic_ns(), time.time_ns())

    def to_unix_s(self, monotonic_ns: int) -> float:
        return (self.unix_ns + (monotonic_ns - self.monotonic_ns)) / 1e9

    def to_monotonic_ns(self, unix_s: float) -> int:
        # Subtract in seconds first: unix_s * 1e9 alone would lose ~256 ns to float rounding.
        return self.monotonic_ns + round((unix_s - self.unix_ns / 1e9) * 1e9)


def parse_timestamp_s(text: str) -> float:
    """Unix seconds, or ISO 8601 (no timezone: UTC). ValueError if neither."""
    text = text.strip()
    try:
        return float(text)
    except ValueError:
        pass
    if text[-1:] in ("Z", "z"):  # fromisoformat accepts "Z" only from Python 3.11
        text = text[:-1] + "+00:00"
    if sys.version_info < (3, 11):
        text = as_iso_310(text)
    moment = datetime.fromisoformat(text)
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return moment.timestamp()


def as_iso_310(text: str) -> str:
    """`text` in the forms Python 3.10's fromisoformat reads: the fraction padded (or cut) to 6 digits
    ("22:13:22.5" -> "22:13:22.500000"), a colon put into the offset ("+0100" -> "+01:00")."""
    text = _FRACTION.sub(lambda m: f"{m[1]}.{m[2]:0<6}", text, count=1)
    return _COLONLESS_OFFSET.sub(r"\1:\2", text)


def load_meter_csv(path: Path) -> list[tuple[float, float]]:
    """(unix seconds, watts) sorted by time; PowerSourceError naming the line of any bad value, or
    saying what the path is when it is no regular file (a FIFO, /dev/zero) or too large to read."""
    check_size(path, MAX_LOG_BYTES, PowerSourceError, "power meter log (a CSV file)")
    try:
        with open(path, newline="", encoding="utf-8-sig") as f:  # -sig: spreadsheet BOMs
            rows = csv.reader(f)
            header = [name.strip().lower() for name in next(rows, [])]
            missing = [c for c in EXPECTED_COLUMNS if c not in header]
            if missing:
                raise PowerSourceError(
                    f"{path}: the header has columns {header}; expected {list(EXPECTED_COLUMNS)} "
                    f"(missing {missing}; other columns are ignored)"
                )
            t_col, p_col = header.index("timestamp"), header.index("power_w")
            samples = [_parse_row(path, rows.line_num, row, t_col, p_col) for row in rows if any(row)]
    except OSError as e:
        raise PowerSourceError(f"cannot read the power meter file {path}: {e.strerror or e}") from e
    except UnicodeDecodeError as e:
        raise PowerSourceError(f"{path} is not a UTF-8 text CSV: {e}") from e
    if not samples:
        raise PowerSourceError(f"{path} has a header but no samples")
    return sorted(samples)


def _parse_row(path: Path, line: int, row: list[str], t_col: int, p_col: int) -> tuple[float, float]:
    if len(row) <= max(t_col, p_col):
        raise PowerSourceError(f"{path} line {line}: {len(row)} columns, fewer than the header's")
    try:
        t_s = parse_timestamp_s(row[t_col])
    except ValueError:
        raise PowerSourceError(
            f"{path} line {line}: timestamp {row[t_col]!r} is neither Unix seconds nor ISO 8601"
        ) from None
    try:
        power_w = float(row[p_col])
    except ValueError:
        power_w = math.nan
    if not math.isfinite(power_w):
        raise PowerSourceError(f"{path} line {line}: power_w {row[p_col]!r} is not a number")
    return t_s, power_w


class CsvMeterSource(PowerSource):
    """Samples from a meter's log; `live` is False: integrate after the run, not from read()."""

    name = "csv"
    live = False

    def __init__(self, path: Path, *, clock_offset_s: float = 0.0, anchor: ClockAnchor | None = None):
        super().__init__()
        self.path = Path(path)
        self.clock_offset_s = clock_offset_s
        self.anchor = anchor or ClockAnchor.now()
        self._samples: list[tuple[float, float]] = []  # meter's own clock

    def load(self) -> None:
        self._samples = load_meter_csv(self.path)

    def is_available(self) -> tuple[bool, str | None]:
        try:
            self.load()
        except PowerSourceError as e:
            return False, str(e)
        return True, None

    def rails(self) -> list[str]:
        return [RAIL]

    def samples_between(
        self, unix_start_s: float, unix_end_s: float, clock_offset_s: float | None = None
    ) -> list[tuple[float, float]]:
        """(host unix seconds, watts) inside the window plus the nearest sample either side of it,
        so integrating over exactly [start, end] can interpolate at both edges."""
        if not self._samples:
            self.load()
        offset_s = self.clock_offset_s if clock_offset_s is None else clock_offset_s
        shifted = [(t + offset_s, p) for t, p in self._samples]
        times = [t for t, _ in shifted]
        first = max(bisect.bisect_right(times, unix_start_s) - 1, 0)
        last = min(bisect.bisect_left(times, unix_end_s), len(times) - 1)
        return shifted[first : last + 1]

    def energy_j(self, unix_start_s: float, unix_end_s: float, clock_offset_s: float | None = None) -> float:
        """Joules over a wall-clock window; ValueError if the log does not cover it."""
        samples = self.samples_between(unix_start_s, unix_end_s, clock_offset_s)
        return integrate_trapezoid(samples, unix_start_s, unix_end_s)

    def samples_monotonic_ns(
        self, start_ns: int, end_ns: int, anchor: ClockAnchor | None = None
    ) -> list[tuple[int, float]]:
        """The samples around a monotonic window, on the monotonic clock (for integrate_power_w)."""
        anchor = anchor or self.anchor
        samples = self.samples_between(anchor.to_unix_s(start_ns), anchor.to_unix_s(end_ns))
        return [(anchor.to_monotonic_ns(t), p) for t, p in samples]

    def read(self, t_ns: int | None = None) -> PowerReading:
        """The meter's power at a monotonic instant, interpolated from the log."""
        t_ns = time.monotonic_ns() if t_ns is None else t_ns
        try:
            power_w = value_at(self.samples_monotonic_ns(t_ns, t_ns), t_ns)
        except ValueError as e:
            raise PowerSourceError(f"{self.path} has no samples around this time: {e}") from e
        return PowerReading(t_ns, {}, {RAIL: power_w})
