"""What a `merge` or an `export` killed outright leaves beside its output is removed by the next
run, and only once its owner is dead (edgestats/exports/staging.py); `export --overwrite` deletes
only what an earlier export wrote and refuses a folder holding anything else
(edgestats/exports/overwrite.py). The owners are real processes: one SIGKILLed after making its
files, one still running."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from edgestats.cli import app
from edgestats.errors import ExportError
from edgestats.exports.merge import merge
from edgestats.exports.parquet import MANIFEST_NAME, export_parquet
from edgestats.exports.staging import remove_dead_leftovers

OWNER = """
import os, shutil, signal, sys
from pathlib import Path
from edgestats.exports.staging import Staging
target, kind, fate = Path(sys.argv[1]), sys.argv[2], sys.argv[3]
claim = Staging(target)
path = claim.path(kind)
if kind == "merging":  # a staged DB, its WAL, DuckDB's spill folder
    path.write_bytes(bytes(1 << 20))
    path.with_name(path.name + ".wal").write_bytes(b"wal")
    path.with_name(path.name + ".tmp").mkdir()
else:  # an export's folder, half written
    (path / "runs").mkdir(parents=True)
    (path / "runs" / "part-0.parquet").write_bytes(bytes(1 << 20))
print(path, flush=True)
if fate == "dead":
    os.kill(os.getpid(), signal.SIGKILL)
sys.stdin.readline()  # then finish as a run does: its files first, its lock last
for leftover in (path, path.with_name(path.name + ".wal"), path.with_name(path.name + ".tmp")):
    if leftover.is_dir():
        shutil.rmtree(leftover)
    leftover.unlink(missing_ok=True)
claim.close()
"""


class Owner:
    """A process that claims hidden names beside `target` and makes its files; "dead" then
    SIGKILLs itself, "live" waits until `end()`."""

    def __init__(self, target: Path, kind: str, fate: str):
        self.proc = subprocess.Popen(
            [sys.executable, "-c", OWNER, str(target), kind, fate],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        self.path = Path(self.proc.stdout.readline().strip())
        if fate == "dead":
            assert self.proc.wait(timeout=30) == -signal.SIGKILL

    def files(self) -> list[str]:
        _, pid, tag = self.path.name.rsplit("-", 2)
        return sorted(p.name for p in self.path.parent.iterdir() if f"-{pid}-{tag}" in p.name)

    def end(self) -> None:
        self.proc.communicate("\n", timeout=30)


def hidden(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.startswith("."))


def test_a_killed_merges_files_are_removed_by_the_next_merge_and_a_live_ones_kept(tmp_path, results_db):
    out = tmp_path / "out.duckdb"
    dead, live = Owner(out, "merging", "dead"), Owner(out, "merging", "live")
    try:
        assert len(dead.files()) == 4  # the staged DB, .wal, .tmp, and the lock
        exited = subprocess.Popen(["true"])
        exited.wait()  # its PID is no more
        legacy = tmp_path / f".out.duckdb.merging-{exited.pid}-0123abcd"
        legacy.write_bytes(b"an older edgestats' staged DB")  # no lock file: the PID decides
        mine = tmp_path / f".out.duckdb.merging-{os.getpid()}-89abcdef"  # a live PID: kept
        mine.write_bytes(b"kept")
        merge(out, [results_db])
        assert hidden(tmp_path) == sorted([*live.files(), mine.name])
    finally:
        live.end()
    assert hidden(tmp_path) == [mine.name]


def test_a_killed_exports_folder_is_removed_by_the_next_export_and_a_live_ones_kept(tmp_path, results_db):
    out = tmp_path / "export"
    dead, live = Owner(out, "tmp", "dead"), Owner(out, "tmp", "live")
    try:
        assert dead.path.is_dir() and len(dead.files()) == 2  # its folder and its lock
        export_parquet(results_db, out)
        assert hidden(tmp_path) == live.files()
        assert (out / MANIFEST_NAME).is_file()
    finally:
        live.end()
    assert hidden(tmp_path) == []


def test_an_export_swapped_out_by_a_killed_overwrite_comes_back(tmp_path, results_db):
    """Killed between moving the earlier export aside and moving the new one in: DIR is missing,
    and the next run in that folder puts the earlier export back, whole."""
    out = tmp_path / "export"
    export_parquet(results_db, out)
    before = sorted(p.relative_to(out) for p in out.rglob("*"))
    dead = Owner(out, "tmp", "dead")
    os.rename(out, dead.path.with_name(dead.path.name.replace(".tmp-", ".old-")))
    assert not out.exists()
    remove_dead_leftovers(tmp_path)
    assert sorted(p.relative_to(out) for p in out.rglob("*")) == before
    assert hidden(tmp_path) == []


def test_overwrite_keeps_a_users_file_and_says_which(tmp_path, results_db):
    out = tmp_path / "export"
    export_parquet(results_db, out)
    (out / "notes.txt").write_text("mine")
    before = {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()}
    result = CliRunner().invoke(app, ["export", str(results_db), "--parquet", str(out), "--overwrite"])
    assert result.exit_code == 1
    [line] = result.output.strip().splitlines()
    assert line.startswith(f"error: {out} holds notes.txt, which no edgestats export wrote")
    assert {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()} == before
    assert hidden(tmp_path) == []


def test_overwrite_refuses_anything_its_manifest_does_not_list(tmp_path, results_db):
    out = tmp_path / "export"
    export_parquet(results_db, out)
    for foreign in ("runs/mine.csv", "runs/device_id=x/notes.md", "plots/", "runs/part-0-copy.parquet"):
        (out / foreign).parent.mkdir(parents=True, exist_ok=True)
        (out / foreign).mkdir() if foreign.endswith("/") else (out / foreign).write_text("mine")
        with pytest.raises(ExportError, match=f"holds {foreign}, which no edgestats export wrote"):
            export_parquet(results_db, out, overwrite=True)
        assert (out / foreign).exists()
        shutil.rmtree(out / foreign) if foreign.endswith("/") else (out / foreign).unlink()


def test_overwrite_deletes_what_an_interrupted_append_left(tmp_path, results_db):
    """Its staging folder, the manifest's temporary file and unlisted appended files are the
    export's own: --overwrite replaces the folder."""
    first = results_db
    out = tmp_path / "export"
    export_parquet(first, out)
    partition = next((out / "runs").glob("device_id=*"))
    (partition / "part-0123456789ab-0.parquet").write_bytes(b"unlisted")
    (out / ".append-0123456789ab" / "runs").mkdir(parents=True)
    (out / f".{MANIFEST_NAME}.tmp").write_text("{")
    manifest = export_parquet(first, out, overwrite=True)
    listed = {f["path"] for t in manifest["tables"].values() for f in t["files"]}
    on_disk = {p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file()}
    assert on_disk == listed | {MANIFEST_NAME}


def test_overwrite_of_a_folder_whose_manifest_is_unreadable_is_one_line(tmp_path, results_db):
    out = tmp_path / "export"
    export_parquet(results_db, out)
    (out / MANIFEST_NAME).write_text(json.dumps({"tables": {}})[:5])
    with pytest.raises(ExportError, match="is unreadable .* will not delete"):
        export_parquet(results_db, out, overwrite=True)
    assert (out / "runs").is_dir()
