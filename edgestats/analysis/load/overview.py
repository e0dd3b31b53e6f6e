"""What a results DB holds, for the report's header: devices, runs, date range, power sources.

Read straight from the DB (read-only), not from the analysis results, so the header describes
the whole file even when an analysis had nothing to work on. The report draws what
`load_overview` returns; the SQL lives here, in the analysis layer.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from pathlib import Path

from edgestats.store.database import first_row
from edgestats.store.sandbox import sandboxed_store


@dataclass(frozen=True)
class DeviceFacts:
    name: str
    arch: str | None
    cpu_model: str | None
    cores: int | None
    n_runs: int


@dataclass(frozen=True)
class Overview:
    """The header of the report. Strings here come from the DB and are escaped by the page."""

    db_name: str
    devices: list[DeviceFacts]
    runs_by_kind_status: dict[tuple[str, str], int]
    first_started: dt.datetime | None  # UTC
    last_started: dt.datetime | None
    power_sources: list[str]
    sources: dict[str, int] = field(default_factory=dict)  # 'collect' / 'import:<file>' -> runs
    # One dict per kind x status x configuration (RUN_GROUP_COLUMNS) with its run count "n_runs":
    # the page recounts configurations, runs and devices under its filter from these.
    run_groups: list[dict] = field(default_factory=list)

    @property
    def n_runs(self) -> int:
        return sum(self.runs_by_kind_status.values())


DEVICES_SQL = """
SELECT d.name, d.arch, d.cpu_model, d.cores, count(r.run_id) AS n_runs
FROM devices d LEFT JOIN runs r USING (device_id)
GROUP BY ALL ORDER BY d.name
"""

RUN_COUNTS_SQL = "SELECT kind, status, count(*) FROM runs GROUP BY ALL ORDER BY kind, status"

# started_at is NULL for imported rows (a paper's table has no dates); the range covers the rest.
# Converted to a plain UTC TIMESTAMP: fetching a TIMESTAMPTZ as Python would need pytz.
DATE_RANGE_SQL = "SELECT timezone('UTC', min(started_at)), timezone('UTC', max(started_at)) FROM runs"

# A power source is named on the runs that used it, and on the idle baselines.
POWER_SOURCES_SQL = """
SELECT DISTINCT s FROM (
    SELECT power_source AS s FROM runs WHERE power_source IS NOT NULL
    UNION ALL SELECT source FROM baselines
) ORDER BY s
"""

RUN_SOURCES_SQL = "SELECT source, count(*) FROM runs GROUP BY ALL ORDER BY source"

# What a configuration is (edgestats.analysis.load.frames.CONFIG_COLUMNS), with the run's kind and status.
RUN_GROUP_COLUMNS = (
    "kind",
    "status",
    "device",
    "framework",
    "runtime",
    "model",
    "batch_size",
    "threads",
    "precision",
)
RUN_GROUPS_SQL = """
SELECT r.kind, r.status, d.name AS device, r.framework, r.runtime, r.model, r.batch_size, r.threads,
       r.precision, count(*) AS n_runs
FROM runs r JOIN devices d USING (device_id)
GROUP BY ALL ORDER BY ALL
"""

COLLECTED_DEVICES_SQL = (
    "\nSELECT DISTINCT d.name FROM runs r JOIN devices d USING (device_id) "
    "WHERE r.source = 'collect' AND d.name IS NOT NULL\n"
)


def load_overview(db: str | Path) -> Overview:
    with sandboxed_store(db) as store:  # a DB or a lake, read as analyze reads it
        con = store.con
        devices = [DeviceFacts(*row) for row in con.execute(DEVICES_SQL).fetchall()]
        counts = {(kind, status): n for kind, status, n in con.execute(RUN_COUNTS_SQL).fetchall()}
        first, last = first_row(con, DATE_RANGE_SQL) or (None, None)
        power = [row[0] for row in con.execute(POWER_SOURCES_SQL).fetchall()]
        sources = dict(con.execute(RUN_SOURCES_SQL).fetchall())
        groups = [
            dict(zip((*RUN_GROUP_COLUMNS, "n_runs"), row)) for row in con.execute(RUN_GROUPS_SQL).fetchall()
        ]
    return Overview(Path(db).name, devices, counts, first, last, power, sources, groups)


def collected_devices(db: str | Path) -> frozenset[str]:
    """The devices with runs collected (not imported): the terminal shows their rows first."""
    with sandboxed_store(db) as store:
        return frozenset(row[0] for row in store.con.execute(COLLECTED_DEVICES_SQL).fetchall())
