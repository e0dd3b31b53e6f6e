"""`edgestats baseline` as one library call: this device's idle power, stored. It is measured (or read
from a meter's log) and stored for energy attribution (collectors/power/baseline.py).

Its options are baseline's (collectors/command_options.py); --start's time is read here, so a
time that is neither Unix seconds nor ISO 8601 is refused (OptionError) before anything is measured.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from edgestats.collectors.command_options import BASELINE_OPTIONS
from edgestats.options import OptionError, check_keywords

DEFAULTS = {opt.name: opt.default for opt in BASELINE_OPTIONS if not opt.required}


def start_time_s(start: str) -> float:
    """--start as Unix seconds (Unix seconds or ISO 8601, as a meter's log writes them)."""
    from edgestats.collectors.power.meter_csv import parse_timestamp_s

    try:
        return parse_timestamp_s(start)
    except ValueError:
        raise OptionError("--start", f"{start!r} is neither Unix seconds nor ISO 8601") from None


def baseline(
    db: Path | str,
    *,
    on_start: Callable[[], None] | None = None,
    on_progress: Callable[[float], None] | None = None,
    **options: Any,
) -> dict:
    """Measure and store the idle power of this device in `db`; `options` are baseline's by name
    (seconds=60.0, power="auto", hz=10.0, clock_offset=0.0, start=None, device_name=None).
    `on_start` is told once the options are read, before measuring; `on_progress` the seconds
    measured. Returns the stored baselines row (collectors/power/baseline.py record_baseline)."""
    from edgestats.collectors.power.baseline import record_baseline

    check_keywords(BASELINE_OPTIONS, options, "baseline")
    values = {**DEFAULTS, **options}
    start_s = None if values["start"] is None else start_time_s(values["start"])
    if on_start:
        on_start()
    return record_baseline(
        Path(db),
        values["power"],
        values["seconds"],
        values["hz"],
        clock_offset_s=values["clock_offset"],
        start_unix_s=start_s,
        device_name=values["device_name"],
        on_progress=on_progress,
    )
