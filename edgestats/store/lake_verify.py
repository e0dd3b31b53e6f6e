"""`edgestats verify` on any PATH: a DB file, a lake's export folder, or a glob of DBs.

A DB is checked by edgestats/store/verify.py (every table's values, every other block's checksum,
the file's length) and marked when damaged. An export folder is checked by lake.lake_problems
(lake_checks.py: the manifest, and every file it lists: present, of its listed size and SHA-256,
its footer's row count, every value read); here its problems become a report per table. Files no
manifest lists (what an interrupted `export --append` left) are never read by edgestats, so they
are not checked. A glob: each DB it matches, one report each.
"""

from __future__ import annotations

from itertools import groupby
from pathlib import Path

from edgestats.errors import DatabaseError
from edgestats.store.lake import is_lake, lake_paths, lake_problems
from edgestats.store.lake_checks import (
    MANIFEST_NAME,
    RECOVER_LAKE,
    lake_files,
    problem_line,
    read_lake_manifest,
)
from edgestats.store.verify import Finding, Verification, rows_text, update_mark, verify_db


def verify_path(spec: str | Path) -> list[Verification]:
    """Check `spec` whole: one Verification per DB file or export folder. A DB found damaged gets
    a mark beside it (collect and import refuse to append to it), one found whole loses it."""
    text = str(spec)
    if Path(text).is_dir():  # an export folder, also one whose manifest is gone
        if not (Path(text) / MANIFEST_NAME).exists() and not (Path(text) / "runs").is_dir():
            raise DatabaseError(
                f"{text} is a folder but no export (neither {MANIFEST_NAME} nor a runs folder in it): give a "
                "DB file, an export folder or a quoted glob of DBs."
            )
        return [verify_export_folder(Path(text))]
    reports = [verify_db(p) for p in (lake_paths(text) if is_lake(text) else [Path(text)])]
    for report in reports:
        update_mark(report)
    return reports


def verify_export_folder(root: Path) -> Verification:
    """The manifest of the export folder `root` and every file it lists, read in full: a finding
    per table that reads whole, one per damaged file, or one for a damaged manifest."""
    report = Verification(root, "lake")
    problems = lake_problems(root, thorough=True)
    try:
        files = lake_files(root, read_lake_manifest(root))
    except DatabaseError as exc:  # the manifest: missing, cut short, not one an export wrote
        said = problems[0] if problems else str(exc)
        # its own line names the manifest and says what to do: the report says both already
        said = said.removeprefix(f"{root / MANIFEST_NAME} ").split(". edgestats reads the lake")[0]
        report.findings.append(Finding(MANIFEST_NAME, False, said))
        return _with_recovery(report)
    tables = sorted({f.table for f in files})
    report.findings.append(Finding(MANIFEST_NAME, True, f"{len(tables)} tables, {len(files)} files listed"))
    for table, group in groupby(files, key=lambda f: f.table):
        listed = list(group)
        damaged = [
            (f, line.removeprefix(problem_line(root, f, "")))
            for f in listed
            for line in problems
            if line.startswith(problem_line(root, f, ""))
        ]
        for file, problem in damaged:
            report.findings.append(Finding(file.path.relative_to(root).as_posix(), False, problem))
        if not damaged:
            n_files = f"{len(listed)} file" if len(listed) == 1 else f"{len(listed)} files"
            report.findings.append(
                Finding(table, True, f"{n_files}, {rows_text(sum(f.rows for f in listed))}")
            )
    return _with_recovery(report)


def _with_recovery(report: Verification) -> Verification:
    report.recovery = lake_recovery(report)
    return report


def lake_recovery(report: Verification) -> list[str]:
    """What to do about a damaged export folder."""
    if report.whole:
        return []
    again = f"{RECOVER_LAKE[0].upper()}{RECOVER_LAKE[1:]}; check the new one with `edgestats verify`."
    if any(f.name == MANIFEST_NAME and not f.ok for f in report.findings):
        return [
            again,
            "edgestats reads a lake only through its manifest: nothing of it can be read until then.",
        ]
    return [again, "The files not named above read whole."]
