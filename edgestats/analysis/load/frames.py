"""Reading the frames the analyses need from a results DB.

Aggregation happens in DuckDB: per-run figures come from the `run_summary` view, phases are
summed per run and phase, batches per run and epoch, telemetry per run; only steady-state
latencies (for the pooled quantiles of `summary` and the rank tests of `tradeoff`) come back
as one column, through Arrow, never row by row. The latency distribution per configuration
(`group_quantiles`) is computed by DuckDB too, on those Arrow columns (no copy), so a group's
quantile grid costs one selection inside DuckDB whatever the number of latencies. SQL is built by
the functions of load/sql.py, which return strings (tested without a DB), and run in `load_data()`.

The DB is opened in the sandbox of edgestats/store/sandbox.py (read-only; no query, a `--where` subquery
included, reads a file outside the DB, writes one or loads an extension), and `--where` is checked
to be one expression before it is put in a query.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import duckdb
import numpy as np
import polars as pl
import pyarrow as pa

from edgestats.analysis.load.sql import (
    epochs_sql,
    filters_sql,
    generation_sql,
    group_quantiles_sql,
    group_values_sql,
    latencies_sql,
    phase_energy_sql,
    phases_sql,
    runs_sql,
    view_columns_sql,
)
from edgestats.errors import EdgestatsError
from edgestats.store.run_extra import runs_with_extras
from edgestats.store.sandbox import sandboxed_store

# What a "configuration" is when no --by is given (summary, breakdown, tradeoff candidates).
# Generation runs add their token counts (NULL in other runs, so present_columns leaves them out there).
CONFIG_COLUMNS = (
    "device",
    "framework",
    "runtime",
    "model",
    "batch_size",
    "threads",
    "precision",
    "prompt_tokens",
    "new_tokens",
    "context_depth",
)

# run_summary columns every analysis relies on; a DB whose views predate them must be migrated.
REQUIRED_SUMMARY_COLUMNS = (
    "run_id",
    "device",
    "kind",
    "status",
    "framework",
    "runtime",
    "model",
    "batch_size",
    "threads",
    "precision",
    "n_latencies",
    "latency_median_ms",
    "latency_p90_ms",
    "latency_p99_ms",
    "latency_mean_ms",
    "rss_peak_bytes",
    "rss_mean_bytes",
    "energy_j",
    "energy_per_inference_j",
)
# Filters that have their own option (--device NAME ...), on top of --where.
FILTER_COLUMNS = (
    "device",
    "kind",
    "framework",
    "runtime",
    "model",
    "dataset",
    "precision",
    "storage",
    "noisy",
)


class AnalysisInputError(EdgestatsError):
    """The DB or the options cannot give the frames an analysis needs."""


@dataclass
class AnalysisData:
    """The frames analyses run on. `runs` has one row per selected run, keyed by run_idx; the
    others refer to it by run_idx. A frame that was not needed is None."""

    runs: pl.DataFrame
    latencies: pl.DataFrame | None = None  # run_idx, latency_ms (steady state)
    phases: pl.DataFrame | None = None  # run_idx, phase, seq, duration_s
    phase_energy: pl.DataFrame | None = (
        None  # run_idx, phase, duration_s, energy_j (+ ci), mean_power_w, source, reason
    )
    epochs: pl.DataFrame | None = None  # run_idx, epoch, stall_s, fetch_s, compute_s, e2e_s, n_batches
    generation: pl.DataFrame | None = None  # run_idx and generation_summary's figures (generation runs)
    notes: list[str] = field(default_factory=list)

    @property
    def run_columns(self) -> list[str]:
        return [c for c in self.runs.columns if c not in ("run_idx", "run_id")]


# -- checking --where ---------------------------------------------------------------------------


def _outside_quotes(text: str) -> tuple[str, bool]:
    """`text` without what is inside '...' and "..." (or a doubled quote), and whether every quote closed."""
    kept, quote = [], None
    for char in text:
        if quote:
            quote = None if char == quote else quote
        elif char in "'\"":
            quote = char
        else:
            kept.append(char)
    return "".join(kept), quote is None


def parentheses_balanced(text: str) -> bool:
    """True when every ( outside quotes closes inside the text: `a) OR (b` would otherwise
    escape the parentheses check_where puts around it."""
    outside, closed = _outside_quotes(text)
    depth = 0
    for char in outside:
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
            if depth < 0:
                return False
    return depth == 0 and closed


def check_where(where: str | None) -> str:
    """The user's --where as a parenthesised expression; anything that is not one expression (a
    second statement, a dangling parenthesis) is refused before it reaches the DB. A ';' inside
    a string or a quoted name is part of the expression."""
    if where is None or not where.strip():
        return "TRUE"
    probe = f"SELECT * FROM run_summary WHERE ({where})"
    try:
        statements = duckdb.extract_statements(probe)
    except duckdb.Error as exc:
        first_line = str(exc).splitlines()[0]
        raise AnalysisInputError(
            f"--where {where!r} must be one expression on run columns, e.g. "
            f"\"framework = 'pytorch'\" ({first_line})"
        ) from None
    if (
        len(statements) != 1
        or statements[0].type != duckdb.StatementType.SELECT
        or ";" in _outside_quotes(where)[0]
        or not parentheses_balanced(where)
    ):
        raise AnalysisInputError(
            f"--where {where!r} must be one expression on run columns, e.g. \"framework = 'pytorch'\""
        )
    return f"({where})"


# -- loading ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Needs:
    """Which frames besides the runs to read: one flag per name of the registry's FRAMES."""

    latencies: bool = False
    phases: bool = False
    phase_energy: bool = False
    epochs: bool = False
    generation: bool = False

    @classmethod
    def of(cls, frames: Iterable[str]) -> Needs:
        """The union of what the selected analyses' registry entries need."""
        return cls(**{frame: True for frame in frames})


def _columns(con: duckdb.DuckDBPyConnection, view: str) -> list[str]:
    return [r[0] for r in con.execute(view_columns_sql(view)).fetchall()]


def _check_summary(columns: list[str], db: Path) -> None:
    lacking = [c for c in REQUIRED_SUMMARY_COLUMNS if c not in columns]
    if lacking:
        raise AnalysisInputError(
            f"{db}: the run_summary view lacks {', '.join(lacking)} (it was made by an older edgestats). "
            f"Re-create the views once with `edgestats migrate {db}`, then analyse again."
        )


def _frame(con: duckdb.DuckDBPyConnection, sql: str) -> pl.DataFrame:
    return con.sql(sql).pl()


def load_data(
    db: str | Path,
    *,
    where: str | None = None,
    filters: dict[str, list[str]] | None = None,
    needs: Needs = Needs(),
) -> AnalysisData:
    """Open the DB read-only, sandboxed, and read the selected runs and what `needs` asks for."""
    db = Path(db)
    where_sql = check_where(where)
    with sandboxed_store(db) as store:
        con = store.con
        runs = _derive(_read_runs(con, db, where, where_sql, filters or {}))
        data = AnalysisData(runs=runs)
        data.notes += _noise_notes(runs, filters or {})
        if runs.height == 0:
            return data
        _read_needed(con, runs, needs, data)
    return data


def _read_runs(
    con: duckdb.DuckDBPyConnection, db: Path, where: str | None, where_sql: str, filters: dict[str, list[str]]
) -> pl.DataFrame:
    """The selected runs, as runs_sql reads them; a --where that fails in DuckDB says why, and what
    it may use."""
    summary_columns = _columns(con, "run_summary")
    _check_summary(summary_columns, db)
    samples_cpu = "cpu_total_mean_pct" not in summary_columns
    sql = runs_sql(summary_columns, where_sql, filters_sql(filters), samples_cpu, runs_with_extras(con))
    try:
        return _frame(con, sql)
    except duckdb.Error as exc:
        if where:
            raise _where_failed(where, exc) from None
        raise


def _where_failed(where: str, exc: duckdb.Error) -> AnalysisInputError:
    first_line = str(exc).splitlines()[0]
    hint = (
        "analyze is sandboxed as `edgestats sql` is (docs/cli/sql.md): a --where reads nothing outside the DB"
        if isinstance(exc, duckdb.PermissionException)
        else 'it may use the columns of run_summary and run_extra (edgestats sql DB "DESCRIBE run_summary")'
    )
    return AnalysisInputError(f"--where {where!r} failed on run_summary ({first_line}); {hint}")


def _noise_notes(runs: pl.DataFrame, filters: dict[str, list[str]]) -> list[str]:
    """--noisy include (the default): noisy runs are kept, and a note counts them."""
    noisy = int(runs["noisy"].fill_null(False).sum())
    if noisy and filters.get("noisy") != ["exclude"]:
        return [f"{noisy} of {runs.height} runs were noisy (runs.noise_reason); --noisy exclude drops them"]
    return []


def _read_needed(
    con: duckdb.DuckDBPyConnection, runs: pl.DataFrame, needs: Needs, data: AnalysisData
) -> None:
    """The frames `needs` asks for, of the selected runs, into `data` (a note where the DB lacks one)."""
    relation = "_edgestats_selected_runs"
    con.register(
        relation,
        pa.table(
            {"run_id": runs["run_id"].cast(pl.String).to_arrow(), "run_idx": runs["run_idx"].to_arrow()}
        ),
    )
    relation_sql = (
        f"(SELECT CAST(run_id AS UUID) AS run_id, run_idx FROM {relation})"  # strings back to UUIDs
    )
    if needs.latencies and (runs["n_latencies"].fill_null(0) > 0).any():
        data.latencies = _frame(con, latencies_sql(relation_sql))
    if needs.phases:
        data.phases = _frame(con, phases_sql(relation_sql))
    if needs.phase_energy:
        energy_columns = _columns(con, "phase_energy")
        if "energy_j" in energy_columns:
            data.phase_energy = _frame(con, phase_energy_sql(relation_sql, energy_columns))
        else:
            data.notes.append("the DB has no phase_energy view with energy_j: run `edgestats migrate` on it")
    if needs.epochs:
        data.epochs = _frame(con, epochs_sql(relation_sql))
    if needs.generation and (runs["kind"] == "generation").any():
        data.generation = _frame(con, generation_sql(relation_sql, _columns(con, "generation_summary")))


def group_quantiles(
    groups: pl.DataFrame, latencies: pl.DataFrame | None, probabilities: list[float]
) -> dict[int, tuple[int, list[float]]]:
    """{g: (n, quantiles at `probabilities`)} for each group g of `groups` (run_idx, g, pooled,
    latency_median_ms; see group_values_sql), computed by an in-memory DuckDB over the frames'
    Arrow buffers: nothing is copied into Python but the result. A group without a finite value
    is absent."""
    if latencies is None:
        latencies = pl.DataFrame(schema={"run_idx": pl.Int32, "latency_ms": pl.Float64})
    con = duckdb.connect(":memory:")
    try:
        con.register(
            "_edgestats_groups", groups.select("run_idx", "g", "pooled", "latency_median_ms").to_arrow()
        )
        con.register("_edgestats_latencies", latencies.select("run_idx", "latency_ms").to_arrow())
        sql = group_quantiles_sql(
            group_values_sql("_edgestats_latencies", "_edgestats_groups"), probabilities
        )
        return {int(g): (int(n), [float(v) for v in q]) for g, n, q in con.execute(sql).fetchall()}
    finally:
        con.close()


def _derive(runs: pl.DataFrame) -> pl.DataFrame:
    """Per-run figures computed from others: throughput, memory in MiB (epoch_time_s: training_summary's)."""
    latency_s = pl.col("latency_mean_ms") / 1000.0
    return runs.with_columns(
        pl.col("run_id").cast(pl.String),
        pl.when(latency_s > 0)
        .then(pl.col("batch_size").fill_null(1).cast(pl.Float64) / latency_s)
        .alias("throughput_per_s"),
        (pl.col("rss_peak_bytes") / 1048576.0).alias("mem_peak_mb"),
        (pl.col("rss_mean_bytes") / 1048576.0).alias("mem_mean_mb"),
    )


def default_config(runs: pl.DataFrame) -> list[str]:
    """The configuration columns the selected runs have values in (the groups when no --by)."""
    return present_columns(runs, CONFIG_COLUMNS)


def present_columns(runs: pl.DataFrame, candidates: tuple[str, ...] | list[str]) -> list[str]:
    """Those candidate columns that are present and hold a value in some run."""
    return [c for c in candidates if c in runs.columns and runs[c].is_not_null().any()]


def check_group_columns(
    by: list[str] | tuple[str, ...], runs: pl.DataFrame, option: str = "--by"
) -> list[str]:
    """The group keys, each a run column; an unknown one is an error listing the valid ones."""
    valid = [c for c in runs.columns if c not in ("run_idx", "run_id")]
    unknown = [c for c in by if c not in valid]
    if unknown:
        raise AnalysisInputError(
            f"{option} {', '.join(unknown)}: not a run column; use one of {', '.join(valid)}"
        )
    return list(by)


def varying_columns(runs: pl.DataFrame, candidates: tuple[str, ...] | list[str]) -> list[str]:
    """Those candidate columns that are present and take more than one value (NULL counts)."""
    return [c for c in candidates if c in runs.columns and runs[c].n_unique() > 1]


class LatencyIndex:
    """Steady-state latencies of each run, sorted once, so a group's pooled sample is a few
    slices (O(n) overall) rather than a filter of the whole column per group."""

    def __init__(self, latencies: pl.DataFrame | None):
        if latencies is None or latencies.height == 0:
            self.values = np.empty(0)
            self.bounds: dict[int, tuple[int, int]] = {}
            return
        ordered = latencies.sort("run_idx")
        idx = ordered["run_idx"].to_numpy()
        self.values = ordered["latency_ms"].to_numpy().astype(float)
        runs, starts, counts = np.unique(idx, return_index=True, return_counts=True)
        self.bounds = {int(r): (int(s), int(s + c)) for r, s, c in zip(runs, starts, counts)}

    def count(self, run_idxs) -> int:
        return sum(self.bounds[i][1] - self.bounds[i][0] for i in run_idxs if i in self.bounds)

    def pooled(self, run_idxs) -> np.ndarray:
        parts = [self.values[slice(*self.bounds[i])] for i in run_idxs if i in self.bounds]
        return np.concatenate(parts) if parts else np.empty(0)
