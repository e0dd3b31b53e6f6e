"""The view `run_extra`: imported columns edgestats has no name for, typed and queryable.

`edgestats import` keeps such columns in `runs.extra` (JSON, text as written). A JSON key cannot
be grouped or filtered on like a column (`--by cpu_or_gpu`), and its numbers are text. The
static view `run_extra_values` (schema/views.sql) lists them one row per run and key; this
module (re)creates `run_extra` from it: one row per run (NULL where a run lacks a key), one column per key
found in the DB, DOUBLE where every value of the key reads as a number, else VARCHAR. The
columns depend on the data, which a view in views.sql cannot, so the import that wrote the runs
re-creates it in the same transaction (docs/cli/import.md, "Extra columns"). `analyze` reads the
same columns with each run (runs_with_extras), computed when it runs, so that --by, --where,
--factor and --response take them also in a DB made by merge.
"""

from __future__ import annotations

from dataclasses import dataclass

import duckdb

from edgestats.contracts import normalise
from edgestats.store.results import quote_ident

VIEW = "run_extra"
# run_extra is joined to these views USING (run_id): a key named like one of their columns is
# prefixed, so that the join never hides or duplicates a run column.
JOINED_VIEWS = ("run_summary", "training_summary", "run_results")
# Columns analyze adds to each run (edgestats/analysis/load/frames.py): a key named like one is prefixed too.
ANALYSIS_COLUMNS = {"run_idx", "epoch_time_s", "throughput_per_s", "mem_peak_mb", "mem_mean_mb"}


@dataclass(frozen=True)
class ExtraColumn:
    key: str  # the column of the imported file, as written (the JSON key)
    column: str  # its column in run_extra
    type: str  # DOUBLE or VARCHAR


def _taken_names(con: duckdb.DuckDBPyConnection) -> set[str]:
    views = ", ".join(f"'{v}'" for v in JOINED_VIEWS)
    run_columns = {
        r[0]
        for r in con.execute(
            "SELECT column_name FROM duckdb_columns() "
            "WHERE database_name = current_database() AND schema_name = 'main' "
            f"AND table_name IN ('runs', {views})"
        ).fetchall()
    }
    reserved = {
        r[0]
        for r in con.execute(
            "SELECT keyword_name FROM duckdb_keywords() WHERE keyword_category = 'reserved'"
        ).fetchall()
    }
    return run_columns | reserved | ANALYSIS_COLUMNS


def extra_columns(con: duckdb.DuckDBPyConnection) -> list[ExtraColumn]:
    """The columns run_extra has for the extras now in the DB, in key order."""
    keys = con.execute(
        "SELECT key, count(value), count(value_num) FROM run_extra_values GROUP BY key ORDER BY key"
    ).fetchall()
    taken, used = _taken_names(con), {"run_id"}
    columns = []
    for key, n_values, n_numbers in keys:
        name = normalise(key) or "extra"
        if name in taken or name[0].isdigit():
            name = f"extra_{name}"
        unique, k = name, 2
        while unique in used:  # two keys that normalise alike ('GPU count', 'gpu_count')
            unique, k = f"{name}_{k}", k + 1
        used.add(unique)
        columns.append(
            ExtraColumn(key, unique, "DOUBLE" if n_values and n_numbers == n_values else "VARCHAR")
        )
    return columns


def _pivot_sql(columns: list[ExtraColumn]) -> str:
    """One row per run (every run, extras or not), one typed column per extra key."""
    selects = ["r.run_id"]
    for c in columns:
        literal = "'" + c.key.replace("'", "''") + "'"
        source = "value_num" if c.type == "DOUBLE" else "value"
        selects.append(f"any_value({source}) FILTER (WHERE key = {literal}) AS {quote_ident(c.column)}")
    return (
        f"SELECT {', '.join(selects)} "
        "FROM runs r LEFT JOIN run_extra_values v USING (run_id) GROUP BY r.run_id"
    )


def refresh_run_extra(con: duckdb.DuckDBPyConnection) -> list[ExtraColumn]:
    """(Re)create the view run_extra for the extras now in the DB; returns its columns."""
    columns = extra_columns(con)
    # every run, so that a join on run_id keeps the runs of other files and collect
    con.execute(f"CREATE OR REPLACE VIEW {VIEW} AS {_pivot_sql(columns)}")
    return columns


def runs_with_extras(con: duckdb.DuckDBPyConnection) -> str:
    """The relation analyze selects runs from: run_summary and, where the DB holds extra
    columns, those columns as run_extra has them (computed now from run_extra_values, so also
    current in a DB made by merge, which has no run_extra until its next import)."""
    has_values = con.execute(
        "SELECT 1 FROM duckdb_views() WHERE database_name = current_database() "
        "AND schema_name = 'main' AND view_name = 'run_extra_values'"
    ).fetchall()
    columns = extra_columns(con) if has_values else []
    if not columns:
        return "run_summary"
    return f"(SELECT * FROM run_summary LEFT JOIN ({_pivot_sql(columns)}) x USING (run_id))"
