"""`edgestats merge OUT IN...`: union result files from many devices into one.

Runs, devices and baselines are matched by their UUIDs. A run already in OUT with the same
content is skipped, so merging the same input twice changes nothing; the same run_id with
different content is a conflict, and then nothing at all is written. Inputs are attached
read-only; an input of an older schema is migrated in a temporary copy, never in place.

Content is compared by a per-run fingerprint of every table: row count and the sum of each
row's hash, which does not depend on row order. The comparison and the copy run in SQL.

OUT changes only when the whole merge succeeds: the merge runs in a temporary file in OUT's
folder (a copy of OUT, WAL included, when OUT exists), checkpointed there, then renamed over
OUT. A merge that fails (a conflict, a damaged or foreign input, a full disk, Ctrl-C) removes
the temporary file; OUT, or its absence, stays as it was, byte for byte. While it runs, OUT is
held open read-only, so no other process writes to it between the copy and the rename. A merge
killed outright (SIGKILL, power loss) leaves its temporary files, which the next merge or export
into that folder removes once their owner is dead (edgestats/exports/staging.py).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path

import duckdb

import edgestats.interrupts as interrupts
from edgestats.errors import DatabaseError, MergeConflictError, StorageError
from edgestats.exports.staging import Staging, remove_dead_leftovers
from edgestats.formatting import counted
from edgestats.store.database import (
    STORED_BEFORE,
    check_intact,
    connect,
    damage_error,
    first_row,
    scalar,
    storage_errors,
    translate_open_error,
)
from edgestats.store.migrations import check_not_newer, current_version, latest_version, migrate
from edgestats.store.results import CHILD_TABLES, Store, quote_ident
from edgestats.store.userpaths import check_file, kind_of

# Tables holding a run's content, compared to detect conflicts; all keyed by run_id.
RUN_TABLES = ("runs", "run_results", *CHILD_TABLES)


@dataclass
class InputReport:
    path: Path
    migrated_from: int | None = None  # schema version of an input migrated in a copy
    runs_added: int = 0
    runs_identical: int = 0
    devices_added: int = 0
    devices_differing: int = 0  # same device_id, other facts: the first one seen is kept
    baselines_added: int = 0
    rows_added: dict[str, int] = field(default_factory=dict)


def _attach_current(con, path: Path, alias: str, workdir: Path) -> int | None:
    """Attach `path` read-only as `alias`: the input itself if it is at the current schema, else a
    copy of it migrated in `workdir` (returns the version it was migrated from). Each input is
    opened once, by the ATTACH: the version is read through it."""
    label = str(path)
    con.execute(f"ATTACH {_sql_text(label)} AS {alias} (READ_ONLY)")
    check_intact(con, path, alias)
    version, written_by = current_version(con, label, database=alias)
    check_not_newer(version, written_by, label)
    if version == 0:
        raise DatabaseError(
            f"{path} holds no edgestats results (empty DuckDB file); leave it out of the merge"
        )
    if version == latest_version():
        return None
    con.execute(f"DETACH {alias}")
    copy = workdir / f"{alias}_{path.name}"
    _copy_db(path, copy)
    migrated = connect(copy)
    try:
        migrate(migrated, f"a copy of {path}")
    finally:
        migrated.close()
    con.execute(f"ATTACH {_sql_text(str(copy))} AS {alias} (READ_ONLY)")
    return version


def _sql_text(text: str) -> str:
    """`text` as an SQL string literal: ATTACH takes no parameter (?) before DuckDB 2.0."""
    return "'" + text.replace("'", "''") + "'"


def fingerprint_sql(db: str, table: str, run_ids: str) -> str:
    """Per run: how many rows `table` holds and an order-independent hash of them."""
    return (
        f"SELECT run_id, count(*) AS n, sum(CAST(hash(t) AS HUGEINT)) AS h "
        f"FROM {quote_ident(db)}.{quote_ident(table)} AS t "
        f"WHERE run_id IN (SELECT run_id FROM {run_ids}) GROUP BY run_id"
    )


def differing_runs_sql(src: str, dst: str, table: str, run_ids: str) -> str:
    return (
        "SELECT coalesce(a.run_id, b.run_id) AS run_id, coalesce(a.n, 0) AS n_in, coalesce(b.n, 0) AS n_out "
        f"FROM ({fingerprint_sql(src, table, run_ids)}) a "
        f"FULL JOIN ({fingerprint_sql(dst, table, run_ids)}) b "
        "USING (run_id) WHERE a.n IS DISTINCT FROM b.n OR a.h IS DISTINCT FROM b.h"
    )


class _Merger:
    def __init__(self, store: Store):
        self.store = store
        self.con = store.con
        self.dst = scalar(self.con, "SELECT current_database()")

    def count(self, sql: str) -> int:
        return scalar(self.con, sql)

    def check_conflicts(self, src: str, path: Path) -> int:
        """Number of runs present on both sides with equal content; raises on any difference."""
        self.con.execute(
            f"CREATE OR REPLACE TEMP TABLE _overlap AS SELECT run_id FROM {quote_ident(src)}.runs "
            f"WHERE run_id IN (SELECT run_id FROM {quote_ident(self.dst)}.runs)"
        )
        overlapping = self.count("SELECT count(*) FROM _overlap")
        if not overlapping:  # the usual first merge: no run to compare, skip the fingerprints
            return 0
        conflicts: dict[str, list[str]] = {}
        for table in RUN_TABLES:
            for run_id, n_in, n_out in self.con.execute(
                differing_runs_sql(src, self.dst, table, "_overlap")
            ).fetchall():
                conflicts.setdefault(str(run_id), []).append(
                    f"{table} ({n_in} rows in {path.name}, {n_out} in the output)"
                )
        if conflicts:
            shown = "; ".join(
                f"run {rid}: differs in {', '.join(where)}" for rid, where in list(conflicts.items())[:5]
            )
            more = f" and {len(conflicts) - 5} more runs" if len(conflicts) > 5 else ""
            raise MergeConflictError(
                f"{path}: {counted(len(conflicts), 'runs')} {'has' if len(conflicts) == 1 else 'have'} the "
                f"same run_id as runs already merged but different content: {shown}{more}. Nothing was "
                "written. Remove the stale copy of those runs from one input "
                '(e.g. with `edgestats sql IN --write "DELETE ..."` on a copy) and merge again.'
            )
        return overlapping

    def insert(self, sql: str) -> int:
        """Run an INSERT and return how many rows it added (DuckDB answers an INSERT with its count)."""
        return int(self.con.execute(sql).fetchone()[0])

    def add_missing_by_id(self, src: str, table: str, key: str) -> int:
        return self.insert(
            f"INSERT INTO {quote_ident(self.dst)}.{table} BY NAME "
            f"SELECT * FROM {quote_ident(src)}.{table} "
            f"WHERE {key} NOT IN (SELECT {key} FROM {quote_ident(self.dst)}.{table})"
        )

    def merge_input(self, src: str, path: Path, report: InputReport) -> None:
        d, s = quote_ident(self.dst), quote_ident(src)
        report.runs_identical = self.check_conflicts(src, path)
        report.devices_differing = self.count(
            f"SELECT count(*) FROM {s}.devices a JOIN {d}.devices b USING (device_id) "
            "WHERE hash(a) <> hash(b)"
        )
        baseline_conflicts = first_row(
            self.con,
            f"SELECT a.baseline_id FROM {s}.baselines a JOIN {d}.baselines b USING (baseline_id) "
            "WHERE hash(a) <> hash(b) LIMIT 1",
        )
        if baseline_conflicts:
            raise MergeConflictError(
                f"{path}: baseline {baseline_conflicts[0]} differs from the one already merged; nothing was "
                "written"
            )
        report.devices_added = self.add_missing_by_id(src, "devices", "device_id")
        report.baselines_added = self.add_missing_by_id(src, "baselines", "baseline_id")
        self.con.execute(
            f"CREATE OR REPLACE TEMP TABLE _new_runs AS SELECT run_id FROM {s}.runs "
            f"WHERE run_id NOT IN (SELECT run_id FROM {d}.runs)"
        )
        report.runs_added = self.count("SELECT count(*) FROM _new_runs")
        for table in RUN_TABLES:
            report.rows_added[table] = self.insert(
                f"INSERT INTO {d}.{table} BY NAME SELECT * FROM {s}.{table} "
                "WHERE run_id IN (SELECT run_id FROM _new_runs)"
            )


def _wal(path: Path) -> Path:
    return path.with_name(path.name + ".wal")


def _copy_db(source: Path, target: Path) -> None:
    """Copy a DuckDB file with its WAL (changes not yet checkpointed into the file live there)."""
    shutil.copyfile(source, target)
    if _wal(source).exists():
        shutil.copyfile(_wal(source), _wal(target))


def _check_output(con: duckdb.DuckDBPyConnection, out: Path) -> None:
    """OUT must be an edgestats DB this edgestats can write: checked on OUT itself, so that an
    error names OUT and not its temporary copy."""
    try:
        version, written_by = current_version(con, str(out))
    except duckdb.Error as exc:
        raise translate_open_error(out, exc) from exc
    check_not_newer(version, written_by, str(out))


@contextmanager
def staged_output(out: Path) -> Iterator[Path]:
    """A temporary DB in OUT's folder to merge into, a copy of OUT when OUT exists; it replaces
    OUT when the body succeeds and is removed when it fails, leaving OUT as it was. Its name
    carries a held lock's tag (exports/staging.py), so the next merge removes it if this one is
    killed, and never while it runs; it first removes such leftovers of dead merges and exports."""
    target = out.resolve() if out.is_symlink() else out  # a link keeps pointing at the merged file
    remove_dead_leftovers(target.parent)
    with storage_errors(target):
        claim = Staging(target)  # a read-only folder or a full disk fails here, naming its file
    with claim:
        staged = claim.path("merging")
        guard = None
        try:
            if target.exists():
                guard = connect(target, read_only=True)  # checks OUT is whole; no writer while we merge
                _check_output(guard, target)
                with storage_errors(staged):
                    _copy_db(target, staged)
            yield staged
            with storage_errors(target), interrupts.taking_effect():  # no signal between the two
                os.replace(staged, target)
                _wal(target).unlink(missing_ok=True)  # its changes are in the merged file, checkpointed
        finally:
            if guard is not None:
                guard.close()
            for leftover in (staged, _wal(staged)):
                with suppress(OSError):  # not there (or on a read-only file system: then never made)
                    leftover.unlink()
            for folder in (_spill(staged), _inputs(staged)):
                shutil.rmtree(folder, ignore_errors=True)


def _spill(staged: Path) -> Path:
    return staged.with_name(staged.name + ".tmp")  # DuckDB's spill folder for a DB file


def _inputs(staged: Path) -> Path:
    return staged.with_name(staged.name + ".inputs")  # inputs of older schemas, migrated in copies


def merge(
    out: str | Path, inputs: list[str | Path], *, progress: Callable[[str], None] | None = None
) -> list[InputReport]:
    """Merge `inputs` into `out` (created if missing) in one transaction: all or nothing; `out`
    is replaced only when the merge succeeds (see the module docstring)."""
    out_path = Path(out)
    for given in inputs:  # by stat, before any resolve() or open: a symlink loop, a FIFO, /dev/zero
        check_file(given, DatabaseError, "DB file", "give the path of a .duckdb file to merge")
    paths = list(dict.fromkeys(Path(p).resolve() for p in inputs))  # the same file twice: once
    if not paths:
        raise DatabaseError("nothing to merge: give at least one input file")
    if not out_path.parent.is_dir():
        raise DatabaseError(f"{out_path}: the folder {out_path.parent} does not exist; create it first.")
    if out_path.is_dir():
        raise DatabaseError(f"{out_path} is a directory; give the path of a .duckdb file to merge into.")
    kind = kind_of(out_path)
    if kind not in (None, "missing", "a broken symlink"):  # a dangling link: the merged file is made there
        raise DatabaseError(f"{out_path} is {kind}, not a DB file; give a .duckdb file to merge into.")
    for path in paths:
        if out_path.exists() and path.resolve() == out_path.resolve():
            raise DatabaseError(f"{path} is both the output and an input; write the merge to a new file")
    reports = [InputReport(p) for p in paths]
    existed = out_path.exists()
    try:
        with staged_output(out_path) as staged:
            with storage_errors(staged):
                _inputs(staged).mkdir()
            with Store.open(staged) as store:
                _merge_all(store, reports, _inputs(staged), progress)
                with storage_errors(staged):
                    store.con.execute("CHECKPOINT")  # all in the file: the rename moves one complete file
    except StorageError as exc:
        unchanged = (
            f"{out_path} was not {'changed' if existed else 'created'} "
            "(the merge wrote to a temporary file beside it, now removed)."
        )
        raise StorageError(
            str(exc).replace(STORED_BEFORE, unchanged), cause=exc.cause, path=exc.path
        ) from exc
    return reports


def _merge_all(
    store: Store, reports: list[InputReport], workdir: Path, progress: Callable[[str], None] | None
) -> None:
    """Attach every input (checked whole, migrated in a copy if older), then merge them all in
    one transaction."""
    aliases: list[str] = []
    try:
        for i, report in enumerate(reports):
            alias = f"edgestats_in_{i}"
            try:
                report.migrated_from = _attach_current(store.con, report.path, alias, workdir)
            except duckdb.Error as exc:
                raise translate_open_error(report.path, exc) from exc
            aliases.append(alias)
        merger = _Merger(store)
        with store.transaction():
            for alias, report in zip(aliases, reports):
                if progress:
                    progress(f"merging {report.path}")
                try:
                    merger.merge_input(alias, report.path, report)
                except duckdb.Error as exc:  # a block of this input (or of OUT) failed its checksum
                    damaged = damage_error(exc, f"{report.path} (or the output)")
                    if damaged is None:
                        raise
                    raise damaged from exc
    finally:
        # A damaged input can fail DuckDB so badly that it invalidates the whole instance; then
        # the temporary output is discarded anyway, and the input's error is the one to report.
        with suppress(duckdb.Error):
            attached = {
                row[0] for row in store.con.execute("SELECT database_name FROM duckdb_databases()").fetchall()
            }
            for alias in aliases + [f"edgestats_in_{len(aliases)}"]:
                if alias in attached:
                    store.con.execute(f"DETACH {alias}")
