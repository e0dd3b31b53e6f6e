"""Power over time for one run, with its phase windows and the idle baseline (pCAMP Figs 1, 3).

The sampler stores a power source's rails as `power_w:<rail>` (instantaneous: INA3221, NVML
power, a meter) and/or `energy_j:<rail>` (cumulative counters: RAPL, NVML energy). The device
total is the sum of the run's `power_rails` (e.g. RAPL package-0 + dram, not package-0 plus
its own core subzone); a counter becomes power by differencing. The trace is averaged into a
few hundred time buckets before it reaches a chart: a 10-minute run at 100 Hz would otherwise
embed 60,000 points per rail in the page.

The report draws what `load_power_trace` returns; the SQL lives here, in the analysis layer.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import duckdb
import polars as pl

from edgestats.contracts import ENERGY_PREFIX, POWER_PREFIX
from edgestats.store.sandbox import sandboxed_store

MAX_POINTS = 400
# Rows of a power source: instantaneous power or a cumulative energy counter, per rail.
POWER_METRICS_SQL = f"(starts_with(metric, '{POWER_PREFIX}') OR starts_with(metric, '{ENERGY_PREFIX}'))"

# The run whose trace is drawn: the one with the most power samples (the longest trace), ties
# broken by run_id so the choice is stable. One query, aggregated in DuckDB.
RUN_WITH_POWER_SQL = f"""
SELECT run_id::VARCHAR, count(*) AS n
FROM samples
WHERE {POWER_METRICS_SQL}
GROUP BY run_id ORDER BY n DESC, run_id LIMIT 1
"""

TRACE_SQL = f"""
SELECT t_ns, metric, value FROM samples
WHERE run_id = CAST(? AS UUID) AND {POWER_METRICS_SQL}
ORDER BY t_ns
"""

PHASES_SQL = """
SELECT phase, start_ns, end_ns FROM phases
WHERE run_id = CAST(? AS UUID) AND end_ns IS NOT NULL AND phase <> 'total'
ORDER BY seq
"""

# The baseline closest in time to the run, same device and kind of source (as the views match).
BASELINE_SQL = """
SELECT b.mean_power_w
FROM runs r JOIN baselines b ON b.device_id = r.device_id
 AND split_part(b.source, ':', 1) = split_part(coalesce(r.power_source, b.source), ':', 1)
WHERE r.run_id = CAST(? AS UUID) AND b.mean_power_w IS NOT NULL
ORDER BY abs(epoch(b.measured_at) - epoch(coalesce(r.started_at, b.measured_at)))
LIMIT 1
"""

RUN_FACTS_SQL = """
SELECT d.name, r.framework, r.model, r.power_source, r.runtime
FROM runs r LEFT JOIN devices d USING (device_id) WHERE r.run_id = CAST(? AS UUID)
"""

RAILS_SQL = "SELECT power_rails FROM runs WHERE run_id = CAST(? AS UUID)"


@dataclass(frozen=True)
class PowerTrace:
    """What the power chart draws. `power` has t_s, power_w (bucket means); `phases` has phase,
    start_s, end_s; both on seconds since the first power sample."""

    run_id: str
    label: str
    power: pl.DataFrame
    phases: pl.DataFrame
    idle_power_w: float | None
    # The run's device, framework, runtime and model (those it has): the chart's rows carry them
    # so the page's filter reaches the trace.
    filters: dict[str, str] = field(default_factory=dict)


def rail_power(samples: pl.DataFrame, rails: list[str] | None = None) -> pl.DataFrame:
    """t_ns, power_w: the device total per sampler tick.

    Per rail, `power_w:` rows are taken as they are and `energy_j:` counters are differenced
    (a negative step, a counter reset, is dropped). A rail with both uses its power rows.
    Only `rails` are summed when given; otherwise every rail found."""
    power_kind, energy_kind = POWER_PREFIX.rstrip(":"), ENERGY_PREFIX.rstrip(":")
    rail = pl.col("metric").str.split_exact(":", 1).struct.field("field_1")
    kind = pl.col("metric").str.split_exact(":", 1).struct.field("field_0")
    long = samples.with_columns(rail.alias("rail"), kind.alias("kind"))
    if rails:
        long = long.filter(pl.col("rail").is_in(rails))
    has_power = set(long.filter(pl.col("kind") == power_kind)["rail"].unique().to_list())
    direct = long.filter(pl.col("kind") == power_kind).select(
        "t_ns", "rail", pl.col("value").alias("power_w")
    )
    counters = (
        long.filter((pl.col("kind") == energy_kind) & ~pl.col("rail").is_in(list(has_power)))
        .sort("rail", "t_ns")
        .with_columns(
            (pl.col("value").diff().over("rail") / (pl.col("t_ns").diff().over("rail") / 1e9)).alias(
                "power_w"
            )
        )
        .filter(pl.col("power_w").is_not_null() & (pl.col("power_w") >= 0) & pl.col("power_w").is_finite())
        .select("t_ns", "rail", "power_w")
    )
    per_tick = pl.concat([direct, counters]).group_by("t_ns").agg(pl.col("power_w").sum())
    return per_tick.sort("t_ns")


def downsample(power: pl.DataFrame, t0_ns: int, max_points: int = MAX_POINTS) -> pl.DataFrame:
    """t_s, power_w: means over equal time buckets, at most `max_points` of them."""
    if power.height == 0:
        return pl.DataFrame({"t_s": [], "power_w": []}, schema={"t_s": pl.Float64, "power_w": pl.Float64})
    t_s = (pl.col("t_ns") - t0_ns) / 1e9
    span_s = (power["t_ns"].max() - t0_ns) / 1e9
    if power.height <= max_points or span_s <= 0:
        return power.select(t_s.alias("t_s"), "power_w")
    bucket_s = span_s / max_points
    return (
        power.with_columns((t_s / bucket_s).floor().clip(0, max_points - 1).alias("bucket"), t_s.alias("t_s"))
        .group_by("bucket")
        .agg(pl.col("t_s").mean(), pl.col("power_w").mean())
        .sort("bucket")
        .drop("bucket")
    )


def phase_windows(phases: pl.DataFrame, t0_ns: int) -> pl.DataFrame:
    return phases.select(
        "phase",
        ((pl.col("start_ns") - t0_ns) / 1e9).alias("start_s"),
        ((pl.col("end_ns") - t0_ns) / 1e9).alias("end_s"),
    )


def load_power_trace(
    db: str | Path, run_id: str | None = None, max_points: int = MAX_POINTS
) -> PowerTrace | None:
    """The trace of `run_id` (default: the run with the most power samples); None when the DB
    holds no power samples at all."""
    with sandboxed_store(db) as store:  # a DB or a lake, read as analyze reads it
        con = store.con
        if run_id is None:
            row = con.execute(RUN_WITH_POWER_SQL).fetchall()
            if not row:
                return None
            run_id = row[0][0]
        samples = pl.from_arrow(con.sql(TRACE_SQL, params=[run_id]).to_arrow_table())
        phases = pl.from_arrow(con.sql(PHASES_SQL, params=[run_id]).to_arrow_table())
        baseline = con.execute(BASELINE_SQL, [run_id]).fetchall()
        facts = con.execute(RUN_FACTS_SQL, [run_id]).fetchall()
        rails = _rails(con, run_id)
    power = rail_power(samples, rails)
    if power.height == 0:
        return None
    t0_ns = int(power["t_ns"].min())
    device, framework, model, source, runtime = facts[0] if facts else (None,) * 5
    label = " · ".join(str(v) for v in (device, framework, model, source) if v)
    filters = {"device": device, "framework": framework, "runtime": runtime, "model": model}
    return PowerTrace(
        run_id,
        label,
        downsample(power, t0_ns, max_points),
        phase_windows(phases, t0_ns),
        baseline[0][0] if baseline else None,
        {k: str(v) for k, v in filters.items() if v is not None},
    )


def _rails(con, run_id: str) -> list[str] | None:
    """runs.power_rails where the schema has it (added by migration 0002)."""
    try:
        row = con.execute(RAILS_SQL, [run_id]).fetchall()
    except duckdb.BinderException:  # a schema without the column: sum every rail
        return None
    return list(row[0][0]) if row and row[0][0] else None
