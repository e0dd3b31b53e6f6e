"""Schema versioning: numbered migrations from `edgestats.schema`, applied in order.

Each `NNNN_name.sql` file runs in one transaction together with its row in
`schema_migrations`, so a DB is always at exactly one known version: a failing migration
leaves it at the previous one. `views.sql` is re-applied (CREATE OR REPLACE VIEW) after
migrating, on an open for writing, unless the DB already holds this very views.sql: the last
view it creates carries the file's fingerprint as its comment. Re-creating every view costs
about 50 ms, which every run stored by `collect` and every import paid for nothing.
`edgestats migrate` re-applies the views whatever the fingerprint says.
"""

from __future__ import annotations

import functools
import hashlib
import re
from dataclasses import dataclass
from importlib import resources

import duckdb

from edgestats.errors import DatabaseError, SchemaOutdatedError, SchemaTooNewError
from edgestats.store.database import first_row
from edgestats.version import __version__

MIGRATIONS_TABLE = "schema_migrations"
_MIGRATION_FILE = re.compile(r"^(\d{4})_([a-z0-9_]+)\.sql$")

CREATE_MIGRATIONS_TABLE = f"""
CREATE TABLE IF NOT EXISTS {MIGRATIONS_TABLE} (
    version            INTEGER PRIMARY KEY,
    name               VARCHAR NOT NULL,
    applied_at         TIMESTAMPTZ NOT NULL DEFAULT current_timestamp,
    edgestats_version  VARCHAR NOT NULL
)"""


@dataclass(frozen=True)
class Migration:
    version: int
    name: str
    sql: str


@functools.cache  # package data: it cannot change while this process runs
def available_migrations() -> list[Migration]:
    """The migrations shipped with this edgestats, in version order."""
    found = []
    for entry in resources.files("edgestats.schema").iterdir():
        match = _MIGRATION_FILE.match(entry.name)
        if match:
            found.append(Migration(int(match.group(1)), match.group(2), entry.read_text(encoding="utf-8")))
    found.sort(key=lambda m: m.version)
    versions = [m.version for m in found]
    if versions != list(range(1, len(found) + 1)):
        raise RuntimeError(
            f"edgestats.schema migrations must be numbered 1..N without gaps, found {versions}"
        )
    return found


def latest_version() -> int:
    return available_migrations()[-1].version


@functools.cache
def views_sql() -> str:
    return resources.files("edgestats.schema").joinpath("views.sql").read_text(encoding="utf-8")


# The view created last by views.sql: its comment holds the fingerprint of the views.sql that made it.
FINGERPRINT_VIEW = "training_summary"


def views_fingerprint() -> str:
    return "edgestats views " + hashlib.sha256(views_sql().encode()).hexdigest()[:16]


def views_current(con: duckdb.DuckDBPyConnection) -> bool:
    """Whether the DB's views were made by this edgestats' views.sql (see the module docstring)."""
    row = first_row(
        con,
        "SELECT comment FROM duckdb_views() WHERE database_name = current_database() "
        "AND schema_name = 'main' AND view_name = ?",
        [FINGERPRINT_VIEW],
    )
    return row is not None and row[0] == views_fingerprint()


def _user_tables(con: duckdb.DuckDBPyConnection, database: str | None = None) -> list[str]:
    rows = con.execute(
        "SELECT table_name FROM duckdb_tables() "
        "WHERE database_name = coalesce(?, current_database()) AND NOT temporary",
        [database],
    ).fetchall()
    return [r[0] for r in rows]


def current_version(
    con: duckdb.DuckDBPyConnection, label: str = "the DB", *, database: str | None = None
) -> tuple[int, str | None]:
    """(schema version, edgestats version that applied it); (0, None) for an empty DB. `database`
    reads a DB attached under that name instead of the connection's own.

    A DuckDB file that has tables but no migrations table was not made by edgestats.
    """
    tables = _user_tables(con, database)
    if MIGRATIONS_TABLE not in tables:
        if tables:
            raise DatabaseError(
                f"{label} is a DuckDB file but not an edgestats results DB (it has tables "
                f"{', '.join(sorted(tables)[:5])} but no {MIGRATIONS_TABLE}); give a new or edgestats-made "
                "file."
            )
        return 0, None
    table = f'"{database}".{MIGRATIONS_TABLE}' if database else MIGRATIONS_TABLE
    row = first_row(con, f"SELECT version, edgestats_version FROM {table} ORDER BY version DESC LIMIT 1")
    return (row[0], row[1]) if row else (0, None)


def check_not_newer(version: int, written_by: str | None, label: str) -> None:
    known = latest_version()
    if version > known:
        raise SchemaTooNewError(
            f"{label} has schema version {version} (written by edgestats {written_by}), but this edgestats "
            f"{__version__} knows schema versions up to {known}. Upgrade edgestats "
            "(pip install -U edgestats) to read it; this DB was not changed."
        )


def check_current(con: duckdb.DuckDBPyConnection, label: str) -> int:
    """For read-only use: the DB must be exactly at this edgestats' schema version."""
    version, written_by = current_version(con, label)
    check_not_newer(version, written_by, label)
    if version == 0:
        raise DatabaseError(f"{label} is empty: it holds no edgestats results yet.")
    if version < latest_version():
        raise SchemaOutdatedError(
            f"{label} has schema version {version}; this edgestats uses {latest_version()}. "
            f"Upgrade it once with `edgestats migrate {label}` (or open it with --write)."
        )
    return version


def migrate(
    con: duckdb.DuckDBPyConnection, label: str = "the DB", *, refresh_views: bool = False
) -> list[Migration]:
    """Bring the DB to the latest schema and its views to this edgestats' views.sql (always with
    `refresh_views`). Returns the migrations applied."""
    version, written_by = current_version(con, label)
    check_not_newer(version, written_by, label)
    applied = []
    if version == 0:
        con.execute(CREATE_MIGRATIONS_TABLE)
    for migration in available_migrations():
        if migration.version <= version:
            continue
        con.begin()
        try:
            con.execute(migration.sql)
            con.execute(
                f"INSERT INTO {MIGRATIONS_TABLE} (version, name, edgestats_version) VALUES (?, ?, ?)",
                [migration.version, migration.name, __version__],
            )
            con.commit()
        except Exception as exc:
            con.rollback()
            raise DatabaseError(
                f"{label}: migration {migration.version:04d}_{migration.name} failed and was rolled back "
                f"(the DB stays at schema version {version}): {exc}"
            ) from exc
        version = migration.version
        applied.append(migration)
    if applied or refresh_views or not views_current(con):
        apply_views(con)
    return applied


def apply_views(con: duckdb.DuckDBPyConnection) -> None:
    con.begin()
    try:
        con.execute(views_sql())
        con.execute(f"COMMENT ON VIEW {FINGERPRINT_VIEW} IS '{views_fingerprint()}'")
        con.commit()
    except Exception:
        con.rollback()
        raise
