"""Errors a user can cause. Each message says what went wrong and what to do about it.

The CLI prints these without a traceback and exits 1 (`--debug` shows the traceback);
anything else that escapes is a bug and keeps its traceback.
"""


class EdgestatsError(Exception):
    """Base class for every error a user can cause and fix."""


class DatabaseError(EdgestatsError):
    """The DuckDB file cannot be used: missing, corrupt, locked, not an edgestats DB."""


class DatabaseLockedError(DatabaseError):
    """Another process holds the DuckDB file (DuckDB allows one writer per file); waiting may help."""


class DamagedDatabaseError(DatabaseError):
    """The DuckDB file is truncated or corrupt: nothing reads or writes it; restore it from a copy."""


class StorageError(DatabaseError):
    """A write failed for a storage reason (disk full, file too large, read-only file system,
    permission denied). `cause` is the OS's words for it, `path` the file that could not be
    written; what was stored before is intact."""

    def __init__(self, message: str, *, cause: str | None = None, path: str | None = None):
        super().__init__(message)
        self.cause = cause
        self.path = path


class SchemaTooNewError(DatabaseError):
    """The DB was written by a newer edgestats than this one."""


class SchemaOutdatedError(DatabaseError):
    """The DB needs a migration but was opened read-only."""


class MergeConflictError(EdgestatsError):
    """Two inputs hold the same run_id with different content."""


class ImportFileError(EdgestatsError):
    """A results file to import is missing, unreadable or has bad values."""


class QueryError(EdgestatsError):
    """A user's SQL query failed."""


class ExportError(EdgestatsError):
    """An export folder cannot be written as asked."""
