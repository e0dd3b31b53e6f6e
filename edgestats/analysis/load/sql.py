"""The SQL the loaders of edgestats.analysis.load.frames run, built as strings. The queries: the
selected runs with their training figures and reported results, steady-state latencies, phases,
phase energy, epochs, and the per-group latency quantiles DuckDB computes.

Apart from load.py, which opens the DB, checks --where and runs these, because building a query
needs no DB: each builder is a pure function of column names and relation names, tested as text.
"""

from __future__ import annotations

from edgestats.store.results import quote_ident

# Statuses whose figures are results: a diverged run (NaN loss) is a result (docs/architecture.md §5);
# error / timeout / killed runs hold partial data and are left out.
RESULT_STATUSES = ("ok", "diverged")

# Columns added to run_summary by the telemetry work; NULL when an older view lacks them.
OPTIONAL_SUMMARY_COLUMNS = {
    "energy_per_inference_ci_low_j": "DOUBLE",
    "energy_per_inference_ci_high_j": "DOUBLE",
    "energy_unavailable_reason": "VARCHAR",
    "uss_peak_bytes": "DOUBLE",
    "cpu_total_mean_pct": "DOUBLE",
    "cpu_total_peak_pct": "DOUBLE",
    "cpu_user_mean_pct": "DOUBLE",
    "cpu_system_mean_pct": "DOUBLE",
    "cpu_iowait_mean_pct": "DOUBLE",
    "mean_power_w": "DOUBLE",
    "noisy": "BOOLEAN",
    "noise_reason": "VARCHAR",
}

# Per-run figures taken from training_summary and run_results next to run_summary's.
TRAINING_COLUMNS = ("n_epochs", "training_time_s", "testing_time_s", "accuracy_pct", "epoch_time_s")

RESULT_COLUMNS = ("load_time_s", "total_time_s", "fetch_stall_s", "compute_s", "e2e_s")

# `collect --until-precise`'s stop record of each run (runs.environment.precision) as JSON text, for
# the median's interval after Stein's rule (edgestats.analysis.summary.until_precise); NULL for other runs.
# The leading underscore keeps it apart from every column an import can add (their names are
# normalised without one) and marks it as the analysis' own.
STOP_RECORD_COLUMN = "_until_precise"
STOP_RECORD_JOIN = (
    "LEFT JOIN (SELECT run_id, CAST(json_extract(environment, '$.precision') AS VARCHAR) "
    f'AS "{STOP_RECORD_COLUMN}" FROM runs) stop USING (run_id)'
)


def sql_literal(value: object) -> str:
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, (int, float)):
        return repr(value)
    return "'" + str(value).replace("'", "''") + "'"


def filters_sql(filters: dict[str, list[str]]) -> str:
    """`col IN (...)` per option, ANDed ('TRUE': none); --noisy exclude keeps unjudged runs (NULL)."""
    parts = [
        f"CAST({quote_ident(column)} AS VARCHAR) IN ({', '.join(sql_literal(v) for v in values)})"
        if column != "noisy"
        else ("noisy IS NOT TRUE" if "exclude" in values else "TRUE")
        for column, values in filters.items()
        if values
    ]
    return " AND ".join(parts) if parts else "TRUE"


def runs_sql(
    summary_columns: list[str], where: str, filters: str, samples_cpu: bool, source: str = "run_summary"
) -> str:
    """One row per selected run: `source` (run_summary + extra columns), the training figures and the
    reported results.

    `summary_columns` are the columns the DB's run_summary has; optional ones it lacks are NULL.
    With `samples_cpu`, the mean CPU use comes from the telemetry (for views without it)."""
    missing = [
        f"CAST(NULL AS {t}) AS {quote_ident(c)}"
        for c, t in OPTIONAL_SUMMARY_COLUMNS.items()
        if c not in summary_columns
    ]
    training = ", ".join(f"t.{quote_ident(c)}" for c in TRAINING_COLUMNS)
    results = ", ".join(f"res.{quote_ident(c)}" for c in RESULT_COLUMNS)
    cpu_source = "cpu.cpu_total_mean_pct" if samples_cpu else "s.cpu_total_mean_pct"
    cpu_join = (
        "LEFT JOIN (SELECT run_id, avg(value) AS cpu_total_mean_pct FROM samples "
        "WHERE metric = 'cpu_total_pct' AND run_id IN (SELECT run_id FROM selected) "
        "GROUP BY run_id) cpu USING (run_id)"
        if samples_cpu
        else ""
    )
    extra = ", ".join(missing)
    statuses = ", ".join(sql_literal(s) for s in RESULT_STATUSES)
    return f"""
WITH selected AS (
    SELECT *{", " + extra if extra else ""} FROM {source}
    WHERE status IN ({statuses}) AND {filters} AND {where}
)
SELECT
    CAST(row_number() OVER (ORDER BY s.run_id) - 1 AS INTEGER) AS run_idx,
    s.* EXCLUDE (cpu_total_mean_pct),
    coalesce({cpu_source}, res.cpu_total_pct) AS cpu_total_mean_pct,
    {training},
    {results},
    stop."{STOP_RECORD_COLUMN}"
FROM selected s
LEFT JOIN training_summary t USING (run_id)
LEFT JOIN run_results res USING (run_id)
{STOP_RECORD_JOIN}
{cpu_join}
ORDER BY run_idx"""


def latencies_sql(relation: str) -> str:
    """Steady-state latencies (warm-up excluded, as run_summary does) of the selected runs."""
    return (
        f"SELECT r.run_idx, l.latency_ns / 1e6 AS latency_ms FROM latencies l "
        f"JOIN {relation} r USING (run_id) WHERE NOT l.warmup"
    )


def group_values_sql(latencies: str, groups: str) -> str:
    """(g, value) for `group_quantiles`: the steady latencies of the runs whose group pools them
    (`pooled`), each run's median latency for the runs of a group that has no per-inference rows
    (imported results: one figure per run). Non-finite values are left out."""
    return (
        f"SELECT g, value FROM (SELECT r.g, l.latency_ms AS value FROM {latencies} l "
        f"JOIN {groups} r USING (run_idx) "
        f"WHERE r.pooled UNION ALL SELECT g, latency_median_ms AS value FROM {groups} WHERE NOT pooled) "
        f"WHERE isfinite(value)"
    )


def group_quantiles_sql(values: str, probabilities: list[float]) -> str:
    """Per group g: the number of values and their quantiles at `probabilities`, as one list.
    quantile_cont interpolates linearly between order statistics, as numpy.quantile's default
    ('linear', Hyndman & Fan type 7) does; it is exact, not a sketch."""
    probs = ", ".join(repr(float(p)) for p in probabilities)
    return (
        f"SELECT g, count(*) AS n, quantile_cont(value, [{probs}]) AS q FROM ({values}) GROUP BY g ORDER BY g"
    )


def phases_sql(relation: str) -> str:
    """Seconds per run and phase (a phase recorded twice is summed); open windows are left out."""
    return (
        f"SELECT r.run_idx, p.phase, min(p.seq) AS seq, sum(p.end_ns - p.start_ns) / 1e9 AS duration_s "
        f"FROM phases p JOIN {relation} r USING (run_id) WHERE p.end_ns IS NOT NULL GROUP BY ALL"
    )


def phase_energy_sql(relation: str, columns: list[str]) -> str:
    """Energy and mean power per run and phase. A phase's energy is NULL when any of its windows
    has none (a partial sum would understate it); mean power is duration-weighted. `columns`
    are those the DB's phase_energy view has (the interval and mean power came later)."""
    power = (
        "sum(e.mean_power_w * e.duration_s) / "
        "nullif(sum(CASE WHEN e.mean_power_w IS NOT NULL THEN e.duration_s END), 0)"
        if "mean_power_w" in columns
        else "CAST(NULL AS DOUBLE)"
    )
    bounds = ",\n       ".join(
        f"CASE WHEN count(e.{c}) = count(*) THEN sum(e.{c}) END AS {c}"
        if c in columns
        else f"CAST(NULL AS DOUBLE) AS {c}"
        for c in ("energy_ci_low_j", "energy_ci_high_j")
    )
    return f"""
SELECT r.run_idx, e.phase, min(e.seq) AS seq, sum(e.duration_s) AS duration_s,
       CASE WHEN count(e.energy_j) = count(*) THEN sum(e.energy_j) END AS energy_j,
       {bounds},
       {power} AS mean_power_w,
       any_value(e.source) AS source,
       any_value(e.energy_unavailable_reason) AS energy_unavailable_reason
FROM phase_energy e JOIN {relation} r USING (run_id)
WHERE e.end_ns IS NOT NULL
GROUP BY ALL"""


def epochs_sql(relation: str) -> str:
    """Per run and epoch: cumulative fetch stall, fetch, compute (s) over its batches, and the
    epoch's end-to-end time (its training window when recorded, else the sum of batch E2E)."""
    sums = (
        "sum(b.stall_ns) / 1e9 AS stall_s, sum(b.fetch_ns) / 1e9 AS fetch_s, "
        "sum(b.compute_ns) / 1e9 AS compute_s"
    )
    return f"""
SELECT r.run_idx, b.epoch,
       {sums},
       coalesce(any_value(e.train_end_ns - e.train_start_ns) / 1e9, sum(b.e2e_ns) / 1e9) AS e2e_s,
       count(*) AS n_batches
FROM batches b JOIN {relation} r USING (run_id)
LEFT JOIN epochs e ON e.run_id = b.run_id AND e.epoch = b.epoch
GROUP BY ALL"""


# generation_summary's per-run figures (docs/generation.md); the configuration, memory and KV cache
# size come with the runs (run_summary), as summary reads them.
GENERATION_FIGURES = (
    "n_tokens",
    "ttft_ms",
    "prefill_s",
    "prefill_tokens_per_s",
    "decode_s",
    "decode_tokens_per_s",
    "itl_mean_ms",
    "prefill_energy_per_token_j",
    "decode_energy_per_token_j",
    "energy_unavailable_reason",
)


def generation_sql(relation: str, columns: list[str]) -> str:
    """generation_summary's figures of the selected generation runs; a figure the DB's view lacks
    (it predates it) is NULL."""
    figures = ", ".join(
        f"g.{quote_ident(c)}" if c in columns else f"CAST(NULL AS DOUBLE) AS {quote_ident(c)}"
        for c in GENERATION_FIGURES
    )
    source = "generation_summary" if columns else "(SELECT CAST(NULL AS UUID) AS run_id WHERE FALSE)"
    return f"SELECT r.run_idx, {figures} FROM {source} g JOIN {relation} r USING (run_id)"


def view_columns_sql(view: str) -> str:
    return (
        f"SELECT column_name FROM duckdb_columns() WHERE database_name = current_database() "
        f"AND schema_name = 'main' AND table_name = {sql_literal(view)} ORDER BY column_index"
    )
