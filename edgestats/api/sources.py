"""What `edgestats.open` accepts, turned into the one spec every library function reads.

The analysis loaders, the sandbox and compare take one spec: a DB file, or a lake (an export
folder, or a glob of DB files: edgestats/store/lake.py). A list of DB files is not a glob, so it is
made one: each file is linked, in the order given, into a private temporary folder, and the
spec is that folder's glob. The lake then reads the files in place, a run stored in several
files counts once (the first file given holds it, as `merge` keeps the first copy), and every
read stays sandboxed. (Once lake.py accepts a list of paths, the links can go.)
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from edgestats.errors import DatabaseError

# The link's name inside its numbered folder: the glob matches it and never its .wal beside it.
LINK_SUFFIX = ".duckdb"


@dataclass
class Source:
    """The spec the library reads (`spec`) and what the user gave (`given`, for labels)."""

    spec: Path
    given: tuple[Path, ...]
    _links: tempfile.TemporaryDirectory | None = field(default=None, repr=False)

    @property
    def label(self) -> str:
        return ", ".join(str(p) for p in self.given)

    def close(self) -> None:
        """Remove the links of a list of files (the files themselves are never touched)."""
        if self._links is not None:
            self._links.cleanup()
            self._links = None


def source_of(where: str | os.PathLike | Sequence[str | os.PathLike]) -> Source:
    """A Source for one DB, one lake (folder or glob), or a list of DB files."""
    if isinstance(where, (str, os.PathLike)):
        return Source(Path(where), (Path(where),))
    paths = [Path(p) for p in where]
    if not paths:
        raise DatabaseError("edgestats.open([]): name at least one results DB")
    if len(paths) == 1:
        return source_of(paths[0])
    missing = [str(p) for p in paths if not p.is_file()]
    if missing:
        raise DatabaseError(
            f"{', '.join(missing)}: no such DB file; a list names DB files (a lake folder or a glob "
            "is given alone, as a string)"
        )
    return _linked(paths)


def _linked(paths: list[Path]) -> Source:
    """Each file (and its WAL, which DuckDB reads beside the name it opens) linked into folder
    NNNN/, so that the glob's name order is the order given."""
    links = tempfile.TemporaryDirectory(prefix="edgestats-open-")
    root = Path(links.name)
    for i, path in enumerate(paths):
        folder = root / f"{i:04d}"
        folder.mkdir()
        link = folder / (path.name if path.name.endswith(LINK_SUFFIX) else path.name + LINK_SUFFIX)
        link.symlink_to(path.resolve())
        wal = Path(f"{path}.wal")
        if wal.exists():
            Path(f"{link}.wal").symlink_to(wal.resolve())
    return Source(root / "*" / f"*{LINK_SUFFIX}", tuple(paths), links)
