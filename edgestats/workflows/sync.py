"""`edgestats sync SRC... --into LAKE_OR_DB`: board DBs brought in later, synced idempotently by run UUID.

They are appended into a results lake, or merged into a DB, each source checked on its own
(docs/cli/sync.md).

It reuses the lake append (exports/append.py) and merge (exports/merge.py): a run already there
is not added again. A damaged, foreign or newer-schema source is refused in one line and the
others are synced. Where each source came from (its path, size, SHA-256, when it was synced and
what it added) is one JSON line of the sync log: `_edgestats_sync.jsonl` in the lake's folder, or
`<DB>.sync.jsonl` beside a DB.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

from edgestats.errors import EdgestatsError
from edgestats.exports.append import append_parquet
from edgestats.exports.merge import merge
from edgestats.exports.parquet import MANIFEST_NAME, export_parquet
from edgestats.store.database import scalar
from edgestats.store.results import Store

LAKE_LOG_NAME = "_edgestats_sync.jsonl"
READ_CHUNK_BYTES = 1 << 20


@dataclass
class SourceResult:
    """What syncing one source did: runs it added, runs already there, or why it was refused."""

    path: Path
    size_bytes: int | None = None
    sha256: str | None = None
    runs_new: int = 0
    runs_already: int = 0
    refused: str | None = None  # one line: why nothing of it was synced


@dataclass
class SyncReport:
    into: Path
    sources: list[SourceResult] = field(default_factory=list)

    @property
    def refused(self) -> list[SourceResult]:
        return [s for s in self.sources if s.refused]


def is_db_target(into: Path) -> bool:
    """A .duckdb (or an existing file) is merged into; anything else is a lake folder."""
    return into.suffix == ".duckdb" or into.is_file()


def sync_log_path(into: Path) -> Path:
    return into.with_name(into.name + ".sync.jsonl") if is_db_target(into) else into / LAKE_LOG_NAME


def _digest(path: Path) -> tuple[int, str]:
    sha = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(READ_CHUNK_BYTES):
            sha.update(chunk)
    return path.stat().st_size, sha.hexdigest()


def _count_runs(path: Path) -> int:
    with Store.open(path, read_only=True) as store:
        return int(scalar(store.con, "SELECT count(*) FROM runs"))


def _sync_one(source: SourceResult, into: Path) -> None:
    source.size_bytes, source.sha256 = _digest(source.path)
    if is_db_target(into):
        [report] = merge(into, [source.path])
        source.runs_new, source.runs_already = report.runs_added, report.runs_identical
        return
    total = _count_runs(source.path)  # a damaged, foreign or too new file is refused here
    if not (into / MANIFEST_NAME).exists():
        export_parquet(source.path, into)  # the first source makes the lake (an empty folder, or none)
        source.runs_new = total
    else:
        source.runs_new = append_parquet(source.path, into)["runs_added"]
    source.runs_already = total - source.runs_new


def sync_sources(sources: list[str | Path], into: str | Path) -> SyncReport:
    """Sync every source into `into` (a lake folder, made by the first source when missing, or a
    .duckdb), one after another; a source that cannot be synced is refused and the rest go on."""
    report = SyncReport(Path(into).expanduser())
    for given in dict.fromkeys(Path(s).expanduser() for s in sources):
        result = SourceResult(given)
        try:
            _sync_one(result, report.into)
        except (EdgestatsError, OSError) as exc:
            result.refused = " ".join(str(exc).split()) or type(exc).__name__
        report.sources.append(result)
        if not result.refused:
            _log(report.into, result)
    return report


def _log(into: Path, result: SourceResult) -> None:
    entry = {
        **{k: v for k, v in asdict(result).items() if k != "refused"},
        "path": str(result.path.resolve()),
        "synced_at": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
    }
    with sync_log_path(into).open("a", encoding="utf-8") as handle:
        handle.write(json.dumps(entry) + "\n")
