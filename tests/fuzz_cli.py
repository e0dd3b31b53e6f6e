"""What the fuzz tests of tests/reliability/ share (importable from tests): their hypothesis
settings, the invariant every fuzzed CLI call must keep (exit status 0, 1 or 2, no traceback, and
on an error the DB absent if it was before, else byte-identical), a fresh folder per example, and
a copy of the session's results DB placed in it."""

from __future__ import annotations

import hashlib
import shutil
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from hypothesis import HealthCheck, settings
from typer.testing import CliRunner

from edgestats.cli import app

runner = CliRunner()
FUZZ = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def digest(path: Path) -> str | None:
    return hashlib.sha256(path.read_bytes()).hexdigest() if path.exists() else None


def invoke_checked(args: list[str], db: Path):
    """Run the CLI; assert the invariant for `db`; return the result."""
    before = digest(db)
    result = runner.invoke(app, [str(a) for a in args])
    escaped = result.exception if not isinstance(result.exception, SystemExit) else None
    assert escaped is None, f"{args!r} raised {escaped!r}"
    assert result.exit_code in (0, 1, 2), (args, result.exit_code, result.output)
    assert "Traceback" not in result.output, (args, result.output)
    if result.exit_code != 0:
        assert digest(db) == before, f"{args!r} failed ({result.output.strip()}) but changed {db}"
        if before is None:
            assert not Path(f"{db}.wal").exists()
    return result


@contextmanager
def workdir() -> Iterator[Path]:
    """A fresh folder per example (hypothesis reuses a test's fixtures across examples)."""
    with tempfile.TemporaryDirectory(prefix="edgestats-fuzz-") as folder:
        yield Path(folder)


def db_placer(template: Path) -> Callable[[Path], Path]:
    """What each module's `existing_db` fixture hands its test: a function that copies the session's
    results DB (`template`) into an example's folder."""

    def place(folder: Path) -> Path:
        path = folder / "existing.duckdb"
        shutil.copyfile(template, path)
        return path

    return place
