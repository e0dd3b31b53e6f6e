"""What the results were measured on: each device's facts and each framework/runtime version used.

Read from the DB (read-only, sandboxed, as `analyze` reads it) under the analysis' own selection
(ok and diverged runs, `--where` and the filter options), so the report's environment describes
the runs its figures rest on. Two frames:

- `devices`: one row per device, every column of the `devices` table (name, hostname, arch, CPU
  model, logical cores, memory, GPU, OS, kernel, power mode) and every scalar key of its `facts`
  JSON as a column of its own (python, board, soc, cpu_governor, ...), the accelerators its runs
  used and how many runs were selected. Without a selection every device in the DB is listed,
  one without runs too; with one, only the devices that have selected runs.
- `software`: one row per device × framework × runtime × framework version: the other library
  versions the runs recorded (`runs.environment.versions`, e.g. numpy), the Python and
  edgestats versions that collected (or imported) them, and the run count.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import polars as pl

from edgestats.analysis.load.frames import check_where
from edgestats.analysis.load.sql import RESULT_STATUSES, filters_sql, sql_literal
from edgestats.store.run_extra import runs_with_extras
from edgestats.store.sandbox import sandboxed_store

# The devices table's columns, in the order a reader wants them (docs/schema.md).
DEVICE_COLUMNS = (
    "hostname",
    "arch",
    "cpu_model",
    "cores",
    "mem_total_bytes",
    "gpu",
    "os",
    "kernel",
    "power_mode",
)
SOFTWARE_KEYS = ("device", "framework", "runtime", "framework_version")
# facts keys that say how the id and name were made (collectors/host/facts.py, device_name.py)
INTERNAL_FACTS = {"device_id_source", "machine_device_id", "device_name_note", "device_name_source"}


def selected_runs_sql(source: str, where_sql: str, filters: dict[str, list[str]]) -> str:
    """The run ids the analysis selects (as load.runs_sql selects them), with their device id."""
    statuses = ", ".join(sql_literal(s) for s in RESULT_STATUSES)
    return (
        f"SELECT run_id, device_id FROM {source} "
        f"WHERE status IN ({statuses}) AND {filters_sql(filters)} AND {where_sql}"
    )


def devices_sql(selected: str, every_device: bool) -> str:
    """One row per device: its columns, its facts as JSON text, the accelerators and the count of
    the selected runs. `every_device`: devices without selected runs too (no selection given)."""
    columns = ", ".join(f"d.{c}" for c in DEVICE_COLUMNS)
    join = "LEFT JOIN" if every_device else "JOIN"
    return f"""
SELECT d.device_id, d.name AS device, {columns},
       CAST(d.facts AS VARCHAR) AS facts,
       string_agg(DISTINCT r.accelerator, ', ' ORDER BY r.accelerator) AS accelerators,
       CAST(count(s.run_id) AS BIGINT) AS n_runs
FROM devices d
{join} ({selected}) s ON s.device_id = d.device_id
LEFT JOIN runs r ON r.run_id = s.run_id
GROUP BY ALL
ORDER BY d.name, d.device_id"""


def software_runs_sql(selected: str) -> str:
    """One row per selected run: what software ran it (the versions as JSON text)."""
    return f"""
SELECT d.name AS device, r.framework, r.runtime, r.framework_version,
       CAST(json_extract(r.environment, '$.versions') AS VARCHAR) AS versions,
       json_extract_string(r.environment, '$.python') AS python,
       r.edgestats_version
FROM ({selected}) s
JOIN runs r ON r.run_id = s.run_id
LEFT JOIN devices d ON d.device_id = r.device_id"""


def load_environment(
    db: str | Path, where: str | None = None, filters: dict[str, list[str]] | None = None
) -> dict[str, pl.DataFrame]:
    """{"devices": ..., "software": ...} of the runs `where` and `filters` select (as `analyze`)."""
    where_sql = check_where(where)
    filters = filters or {}
    every_device = where_sql == "TRUE" and not any(filters.values())
    with sandboxed_store(db) as store:
        con = store.con
        selected = selected_runs_sql(runs_with_extras(con), where_sql, filters)
        devices = con.sql(devices_sql(selected, every_device)).pl()
        runs = con.sql(software_runs_sql(selected)).pl()
    return {"devices": flatten_facts(devices), "software": software_frame(runs)}


def _scalar_facts(text: str | None) -> dict[str, Any]:
    try:
        facts = json.loads(text) if text else {}
    except json.JSONDecodeError:
        return {}
    if not isinstance(facts, dict):
        return {}
    return {
        k: v
        for k, v in facts.items()
        if k not in INTERNAL_FACTS and v is not None and isinstance(v, (str, int, float, bool))
    }


def flatten_facts(devices: pl.DataFrame) -> pl.DataFrame:
    """The facts JSON as columns (after the table's own; a key named like one of them is left
    out), keys no device has dropped; n_runs last."""
    per_device = [_scalar_facts(t) for t in devices["facts"].to_list()]
    taken = set(devices.columns) | {"device"}
    keys = [k for k in dict.fromkeys(k for facts in per_device for k in facts) if k not in taken]
    base = devices.drop("device_id", "facts", "n_runs")
    columns = []
    for key in keys:
        values = [facts.get(key) for facts in per_device]
        kinds = {type(v) for v in values if v is not None}
        # a key whose values mix types (a number on one device, text on another) becomes text
        if len(kinds) > 1:
            values = [None if v is None else str(v) for v in values]
        columns.append(pl.Series(key, values, strict=False))
    return base.with_columns(columns).with_columns(devices["n_runs"])


def _libraries(versions_text: str | None, framework: str | None, framework_version: str | None) -> list[str]:
    """'numpy 2.1.3' for each library of the run's versions but the framework's own (runs.framework_version
    holds it): the entry named like the framework, else the one with its version (torch for pytorch)."""
    try:
        versions = json.loads(versions_text) if versions_text else {}
    except json.JSONDecodeError:
        return []
    if not isinstance(versions, dict):
        return []
    own = str(framework).lower() if str(framework).lower() in versions else None
    if own is None:
        own = next((k for k, v in versions.items() if str(v) == str(framework_version)), None)
    return [f"{name} {version}" for name, version in versions.items() if name != own]


def _joined(values: list[Any]) -> str | None:
    distinct = sorted({str(v) for v in values if v is not None})
    return ", ".join(distinct) if distinct else None


def software_frame(runs: pl.DataFrame) -> pl.DataFrame:
    """One row per device × framework × runtime × framework version, from one row per run."""
    schema = {k: pl.String for k in SOFTWARE_KEYS} | {
        "libraries": pl.String,
        "python": pl.String,
        "edgestats_version": pl.String,
        "n_runs": pl.Int64,
    }
    groups: dict[tuple, list[dict]] = {}
    for row in runs.to_dicts():
        groups.setdefault(tuple(row[k] for k in SOFTWARE_KEYS), []).append(row)
    rows = []
    for key, members in groups.items():
        libraries = [
            lib for r in members for lib in _libraries(r["versions"], r["framework"], r["framework_version"])
        ]
        rows.append(
            {
                **dict(zip(SOFTWARE_KEYS, key)),
                "libraries": _joined(libraries),
                "python": _joined([r["python"] for r in members]),
                "edgestats_version": _joined([r["edgestats_version"] for r in members]),
                "n_runs": len(members),
            }
        )
    frame = pl.DataFrame(rows, schema=schema)
    return frame.sort(list(SOFTWARE_KEYS), nulls_last=True)
