"""What `export --overwrite` may delete: what an earlier export wrote, and what an interrupted
`--append` into it left. Only those: the export's files as its manifest lists them, and the append's
staging folders, the manifest's temporary file and `part-<append id>-<i>.parquet` files in a table's
folder.

Anything else in the folder (a user's notes, a script, a file put inside a table's folder)
means the folder is not only an export, and --overwrite refuses it, naming the first such path,
rather than deleting it with the export.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path, PurePosixPath

from edgestats.errors import ExportError

APPEND_STAGING = ".append-"  # exports/append.py: staging folders inside the lake
# exports/append.py's file names (FILE_PREFIX, an append id of 12 hex digits, a counter)
_APPENDED = re.compile(r"^part-[0-9a-f]{12}-\d+\.parquet$")
_PARTITION = re.compile(r"^[^=/]+=[^/]*$")  # a hive partition folder, `device_id=<uuid>`


def refuse_foreign_files(out: Path, manifest_name: str) -> None:
    """Raise ExportError (one line) unless every path in `out` is one an earlier export wrote."""
    listed = _listed(out, manifest_name)
    foreign = first_foreign(out, manifest_name, listed)
    if foreign is not None:
        raise ExportError(
            f"{out} holds {foreign}, which no edgestats export wrote (its {manifest_name} does not list "
            "it), so --overwrite will not delete the folder. Move that out of it, or choose another folder."
        )


def _listed(out: Path, manifest_name: str) -> set[str]:
    """The files the manifest lists, relative to `out`; an unreadable manifest is one line."""
    path = out / manifest_name
    try:
        tables = json.loads(path.read_text(encoding="utf-8"))["tables"]
        return {str(f["path"]) for table in tables.values() for f in table.get("files", [])}
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise ExportError(
            f"{path} is unreadable ({type(exc).__name__}), so --overwrite cannot tell which files an "
            f"export wrote and will not delete {out}. Choose another folder, or empty this one yourself."
        ) from exc


def first_foreign(out: Path, manifest_name: str, listed: set[str]) -> str | None:
    """The first path (relative to `out`, in name order, folders before their contents) that is
    not the export's own, or None."""
    tables = {PurePosixPath(p).parts[0] for p in listed if "/" in p}
    ancestors = {str(parent) for p in listed for parent in PurePosixPath(p).parents if str(parent) != "."}
    own_top = {manifest_name, f".{manifest_name}.tmp"}
    for root, dirs, files in os.walk(out):
        dirs.sort()
        here = PurePosixPath(Path(root).relative_to(out).as_posix())
        for name in sorted(dirs):
            rel = here / name
            if here.name == "" and name.startswith(APPEND_STAGING):
                dirs.remove(name)  # an interrupted append's staging: all of it is ours
            elif not (str(rel) in ancestors or (rel.parts[0] in tables and _PARTITION.match(name))):
                return f"{rel}/"
        for name in sorted(files):
            rel = here / name
            if here.name == "" and name in own_top:
                continue
            if str(rel) in listed or (rel.parts[0] in tables and _APPENDED.match(name)):
                continue
            return str(rel)
    return None
