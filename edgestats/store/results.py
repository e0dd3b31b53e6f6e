"""The results store: one DuckDB file per device (or merged), written one run per transaction.

The orchestrator of `edgestats collect` and `edgestats import` are its writers; analyses read
it back as polars frames. Child rows go in as Arrow tables (zero-copy scans by DuckDB), never
row by row. polars is imported only by the read-back methods, so a device can write without it.
"""

from __future__ import annotations

import datetime as dt
import json
import uuid
from collections.abc import Iterator, Mapping
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa

import edgestats.interrupts as interrupts
from edgestats.contracts import device_uuid
from edgestats.errors import EdgestatsError
from edgestats.store.database import connect, first_row, scalar, storage_errors, translate_open_error
from edgestats.store.migrations import check_current, migrate
from edgestats.version import __version__

CHILD_TABLES = ("phases", "latencies", "samples", "epochs", "batches", "phase_energies", "sensor_notes")
ROW_TABLES = ("devices", "runs", "run_results", "baselines")


class RunExistsError(EdgestatsError):
    """A run with this run_id is already stored."""


def quote_ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def insert_row_sql(table: str, columns: list[str]) -> str:
    cols = ", ".join(quote_ident(c) for c in columns)
    marks = ", ".join("?" for _ in columns)
    return f"INSERT INTO {quote_ident(table)} ({cols}) VALUES ({marks})"


def insert_select_sql(table: str, columns: list[str], relation: str, *, add_run_id: bool) -> str:
    """Bulk insert of a registered Arrow relation; `add_run_id` adds the run_id as a constant."""
    cols = ", ".join(quote_ident(c) for c in columns)
    run_id = "CAST(? AS UUID) AS run_id, " if add_run_id else ""
    return f"INSERT INTO {quote_ident(table)} BY NAME SELECT {run_id}{cols} FROM {relation}"


def as_arrow(data: Any) -> pa.Table:
    """Accept what callers naturally have: an Arrow table, a polars/pandas frame, or columns."""
    if isinstance(data, pa.Table):
        return data
    if isinstance(data, pa.RecordBatch):
        return pa.Table.from_batches([data])
    if hasattr(data, "to_arrow"):  # polars DataFrame: zero-copy
        return data.to_arrow()
    if hasattr(data, "to_records") and hasattr(data, "columns"):  # pandas
        return pa.Table.from_pandas(data, preserve_index=False)
    if isinstance(data, Mapping):
        return pa.table(dict(data))
    raise TypeError(
        f"cannot store {type(data).__name__}: pass an Arrow table, a polars frame or a dict of columns"
    )


def _to_db_value(value: Any, is_json: bool) -> Any:
    if is_json and value is not None and not isinstance(value, str):
        return json.dumps(value, sort_keys=True, default=str)
    if isinstance(value, uuid.UUID):
        return str(value)
    return value


class Store:
    """An open results DB. Use `Store.open(path)`; close it (or use `with`) when done."""

    def __init__(self, con: duckdb.DuckDBPyConnection, path: Path, read_only: bool):
        self.con = con
        self.path = path
        self.read_only = read_only
        self._columns: dict[str, dict[str, str]] = {}

    @classmethod
    def open(cls, path: str | Path, *, read_only: bool = False) -> Store:
        """Open (creating if needed) and migrate to the current schema; read-only opens never
        change the file, so an outdated DB must be migrated first (`edgestats migrate`)."""
        path = Path(path)
        con = connect(path, read_only=read_only)
        try:
            if read_only:
                check_current(con, str(path))
            else:
                with storage_errors(path):
                    migrate(con, str(path))
        except duckdb.Error as exc:  # the header opened but the catalog is unreadable
            con.close()
            raise translate_open_error(path, exc) from exc
        except BaseException:
            con.close()
            raise
        return cls(con, path, read_only)

    def close(self) -> None:
        """Close the connection; DuckDB writes its last checkpoint here, which a full disk can refuse."""
        with storage_errors(self.path):
            self.con.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, exc_type: object, *exc: object) -> None:
        if exc_type is None:
            self.close()
            return
        with suppress(Exception):  # the error on its way out says what went wrong, not the close after it
            self.close()

    # -- schema facts -------------------------------------------------------------------------

    def columns(self, table: str) -> dict[str, str]:
        """Column name -> DuckDB type name, in table order (every table read in one query)."""
        if not self._columns:
            rows = self.con.execute(
                "SELECT table_name, column_name, data_type FROM duckdb_columns() "
                "WHERE database_name = current_database() AND schema_name = 'main' "
                "ORDER BY table_name, column_index"
            ).fetchall()
            for table_name, column, data_type in rows:
                self._columns.setdefault(table_name, {})[column] = data_type
        if table not in self._columns:
            raise ValueError(f"no table {table!r} in the edgestats schema")
        return self._columns[table]

    def _check_columns(self, table: str, given: list[str]) -> None:
        known = self.columns(table)
        unknown = [c for c in given if c not in known]
        if unknown:
            raise ValueError(f"{table} has no column(s) {unknown}; its columns are {list(known)}")

    # -- writing --------------------------------------------------------------------------------

    def _insert_row(self, table: str, row: Mapping[str, Any]) -> None:
        self._check_columns(table, list(row))
        types = self.columns(table)
        columns = list(row)
        values = [_to_db_value(row[c], types[c] == "JSON") for c in columns]
        self.con.execute(insert_row_sql(table, columns), values)

    def insert_rows(self, table: str, data: Any, *, run_id: uuid.UUID | None = None) -> int:
        """Bulk-insert rows (Arrow / polars / dict of columns) in one statement.

        With `run_id`, the rows must not carry one: it is added as a constant (child tables).
        Call inside `transaction()` when the rows belong with others.
        """
        rows = as_arrow(data)
        if run_id is not None and "run_id" in rows.column_names:
            raise ValueError(f"{table} rows must not carry run_id: the store adds it")
        self._check_columns(table, rows.column_names)
        if rows.num_rows == 0:
            return 0
        relation = "_edgestats_rows"
        self.con.register(relation, rows)
        try:
            sql = insert_select_sql(table, rows.column_names, relation, add_run_id=run_id is not None)
            self.con.execute(sql, [str(run_id)] if run_id is not None else [])
        finally:
            # In an aborted transaction unregister fails too and would hide the real error;
            # a leftover registration is replaced by the next register() of the same name.
            with suppress(duckdb.Error):
                self.con.unregister(relation)
        return rows.num_rows

    @contextmanager
    def transaction(self, *, takes_effect: bool = False) -> Iterator[None]:
        """All writes inside land together or not at all. A write the storage refuses (disk
        full, file too large, read-only, permission denied) raises StorageError naming the cause
        and the file; what was committed before stays as it was. A signal waits for the COMMIT
        (edgestats/interrupts.py); `takes_effect`: the COMMIT makes the command's work take effect."""
        with storage_errors(self.path):
            self.con.begin()
            try:
                yield
                with interrupts.taking_effect(final=takes_effect):
                    self.con.commit()
            except BaseException:
                # A COMMIT that failed (e.g. the WAL could not be written) has already ended the
                # transaction: rolling back again would only hide its error behind "no transaction".
                with suppress(duckdb.Error):
                    self.con.rollback()
                raise

    def register_device(self, device: Mapping[str, Any]) -> uuid.UUID:
        """Store a device if it is new; a known device_id keeps its first registration.

        `device` needs at least `name`; without a device_id one is derived from the name.
        """
        if not device.get("name"):
            raise ValueError("a device needs a name")
        row = dict(device)
        device_id = uuid.UUID(str(row.get("device_id") or device_uuid(row["name"])))
        row["device_id"] = device_id
        row.setdefault("registered_at", dt.datetime.now(dt.timezone.utc))
        with storage_errors(self.path):
            exists = first_row(self.con, "SELECT 1 FROM devices WHERE device_id = ?", [str(device_id)])
            if not exists:
                self._insert_row("devices", row)
        return device_id

    def has_run(self, run_id: uuid.UUID | str) -> bool:
        return first_row(self.con, "SELECT 1 FROM runs WHERE run_id = ?", [str(run_id)]) is not None

    def finished_config_hashes(self, *, retry_failed: bool = False) -> set[str]:
        """The configurations `edgestats collect` need not run again: config hashes with a
        collected run that was not `killed` (an interrupted or OOM-killed attempt is retried),
        nor an `error` for want of an installed package (its message names the `pip install
        'edgestats[...]'` that fixes it: collect checks its packages before running, so the
        retry runs only once they are there). `retry_failed` retries every `error` run too."""
        missing_package = "coalesce(error_text, '') LIKE '%pip install ''edgestats[%'"
        failed = "TRUE" if retry_failed else missing_package
        rows = self.con.execute(
            "SELECT config_hash FROM runs WHERE source = 'collect' AND config_hash IS NOT NULL "
            f"GROUP BY config_hash HAVING bool_or(status <> 'killed' AND NOT (status = 'error' AND {failed}))"
        ).fetchall()
        return {r[0] for r in rows}

    def write_run(
        self,
        run: Mapping[str, Any],
        *,
        results: Mapping[str, Any] | None = None,
        phases: Any = None,
        latencies: Any = None,
        samples: Any = None,
        epochs: Any = None,
        batches: Any = None,
        phase_energies: Any = None,
        sensor_notes: Any = None,
    ) -> uuid.UUID:
        """Write one run and all its rows in one transaction: all of it lands, or none.

        `run` holds the runs columns (device_id, kind and status are required); `results` one
        run_results row; the others are Arrow tables / polars frames / dicts of columns for the
        child tables, without run_id (the store adds it).
        """
        row = dict(run)
        for required in ("device_id", "kind", "status"):
            if row.get(required) is None:
                raise ValueError(f"a run needs {required}")
        run_id = uuid.UUID(str(row.get("run_id") or uuid.uuid4()))
        row["run_id"] = run_id
        row.setdefault("edgestats_version", __version__)
        row.setdefault("source", "collect")
        children = {
            "phases": phases,
            "latencies": latencies,
            "samples": samples,
            "epochs": epochs,
            "batches": batches,
            "phase_energies": phase_energies,
            "sensor_notes": sensor_notes,
        }
        with self.transaction():
            if self.has_run(run_id):
                raise RunExistsError(f"run {run_id} is already stored in {self.path}; nothing was written")
            self._insert_row("runs", row)
            if results:
                self._insert_row("run_results", {"run_id": run_id, **results})
            for table, data in children.items():
                if data is not None:
                    self.insert_rows(table, data, run_id=run_id)
        return run_id

    def write_baseline(self, baseline: Mapping[str, Any]) -> uuid.UUID:
        row = dict(baseline)
        baseline_id = uuid.UUID(str(row.get("baseline_id") or uuid.uuid4()))
        row["baseline_id"] = baseline_id
        row.setdefault("measured_at", dt.datetime.now(dt.timezone.utc))
        with storage_errors(self.path):
            self._insert_row("baselines", row)
        return baseline_id

    # -- reading --------------------------------------------------------------------------------

    def frame(self, query: str, params: list[Any] | None = None):
        """Run a query and return a polars DataFrame (imports polars: analysis side only)."""
        import polars  # noqa: F401  (fails here, with polars' own message, when it is missing)

        with storage_errors(self.path):  # a damaged block met while reading: one clear error
            return self.con.sql(query, params=params).pl()

    def steady_latencies_ns(self, config_hashes: list[str]) -> list[list[int]]:
        """The steady-state latencies (ns, in iteration order) of each ok run whose config_hash is
        in `config_hashes`, one list per run (collect --precision; no polars needed)."""
        rows = self.con.execute(
            "SELECT list(l.latency_ns ORDER BY l.iteration) FROM runs r JOIN latencies l USING (run_id) "
            "WHERE r.config_hash IN (SELECT unnest(?::VARCHAR[])) AND r.status = 'ok' AND NOT l.warmup "
            "GROUP BY r.run_id ORDER BY min(r.repeat_index), r.run_id",
            [config_hashes],
        ).fetchall()
        return [list(latencies) for (latencies,) in rows]

    def table(self, name: str):
        """A whole table or view as a polars DataFrame."""
        return self.frame(f"SELECT * FROM {quote_ident(name)}")

    def counts(self) -> dict[str, int]:
        """Row count of every results table."""
        return {
            t: scalar(self.con, f"SELECT count(*) FROM {quote_ident(t)}") for t in ROW_TABLES + CHILD_TABLES
        }
