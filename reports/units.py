"""Units and labels of the page's columns: "latency_median_ms" is "median latency (ms)", bytes are
shown in MiB. Every number goes through edgestats.formatting, as on the terminal.

A column's unit comes from its name's suffix (`_ms`, `_s`, `_bytes`, `_j`, `_pct`, ...); a metric
named in a row ("metric", "quantity") carries its unit the same way. Scaling happens here and
only for display: the CSV a reader downloads keeps the numbers as the analysis wrote them.
"""

from __future__ import annotations

from edgestats.formatting import MISSING, format_interval, format_number, is_missing

MIB = 1024 * 1024

# suffix -> (unit shown, factor applied to the value); longest suffixes first.
SUFFIX_UNITS = (
    ("_per_s", "/s", 1.0),
    ("_bytes", "MiB", 1 / MIB),
    ("_pct", "%", 1.0),
    ("_ms", "ms", 1.0),
    ("_mb", "MB", 1.0),
    ("_j", "J", 1.0),
    ("_w", "W", 1.0),
    ("_s", "s", 1.0),
)

# Names a reader knows better than the column's.
LABELS = {
    "latency_median_ms": "median latency",
    "latency_p90_ms": "p90 latency",
    "latency_p99_ms": "p99 latency",
    # the typical run's tail (the geometric mean of the runs' own quantiles), beside the
    # configuration's across processes above (edgestats.analysis.estimators.tails)
    "latency_p90_typical_run_ms": "p90 of the typical run",
    "latency_p99_typical_run_ms": "p99 of the typical run",
    "latency_mean_ms": "mean latency",
    "throughput_per_s": "throughput",
    "rss_peak_bytes": "peak memory",
    "rss_mean_bytes": "mean memory",
    "energy_per_inference_j": "energy / inference",
    "n_runs": "runs",
    "batch_size": "batch",
    "num_workers": "workers",
    "share_of_total": "share",
    "n_latencies": "latencies",
}


def unit_of(name: str) -> tuple[str, float]:
    """(unit, factor) of a column or metric name; ("", 1.0) when it has none."""
    for suffix, unit, factor in SUFFIX_UNITS:
        if name.endswith(suffix):
            return unit, factor
    return "", 1.0


def label_of(name: str) -> str:
    """ "latency_median_ms" -> "median latency (ms)", "rss_peak_bytes" -> "peak memory (MiB)"."""
    unit, _ = unit_of(name)
    if name in LABELS:
        base = LABELS[name]
    else:
        base = name
        for suffix, suffix_unit, _ in SUFFIX_UNITS:
            if suffix_unit == unit and name.endswith(suffix) and unit:
                base = name[: -len(suffix)]
                break
        base = base.replace("_", " ")
    return f"{base} ({unit})" if unit else base


def scaled(value: object, factor: float) -> object:
    if is_missing(value) or factor == 1.0 or isinstance(value, bool) or not isinstance(value, (int, float)):
        return value
    return float(value) * factor


def number_cell(value: object, name: str) -> str:
    """One number of column `name`, in its display unit."""
    if value is None:
        return MISSING
    if isinstance(value, bool):
        return "yes" if value else "no"
    if not isinstance(value, (int, float)):
        return str(value)
    return format_number(scaled(value, unit_of(name)[1]))


def interval_parts(estimate: object, low: object, high: object, name: str) -> tuple[str, str]:
    """("12.3", "[11.9, 12.8]") in the unit of `name`; the bracket is "" when there is no interval."""
    factor = unit_of(name)[1]
    text = format_interval(scaled(estimate, factor), scaled(low, factor), scaled(high, factor))
    value, _, bracket = text.partition(" [")
    return value, (f"[{bracket}" if bracket else "")
