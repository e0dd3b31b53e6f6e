"""A byte changed inside a lake file's values, which DuckDB reads without complaint (Parquet pages
as DuckDB writes them carry no checksum), is found when the lake is opened, by the SHA-256 the
manifest lists: `sql` and `analyze` (text, --json, --out) say it in one line naming the file.
Each file is hashed once per version (lake_digests.py): a second read hashes nothing, a touched
or rewritten file is hashed again, and the cache of verified files is bounded and never an error.
Every test has its own cache folder (XDG_CACHE_HOME in tmp_path)."""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

import duckdb
import pytest
from cli_asserts import one_line_error
from export_builders import two_device_lake
from typer.testing import CliRunner

import edgestats
from edgestats.cli import app
from edgestats.exports.parquet import MANIFEST_NAME
from edgestats.store import lake_digests

runner = CliRunner()
HOUR_S = 3600
QUERY = "SELECT sum(latency_ns) FROM latencies"


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two devices' DBs and a lake: the first exported, the second appended."""
    folder = tmp_path_factory.mktemp("digests")
    two_device_lake(folder)
    return folder


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """This test's own cache folder, and a process that has verified nothing yet."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setattr(lake_digests, "_verified", {})
    return tmp_path / "cache" / "edgestats" / lake_digests.CACHE_NAME


@pytest.fixture
def lake(template: Path, tmp_path: Path, cache: Path) -> Path:
    """The test's own copy of the lake, its files last written an hour ago (settled: remembered)."""
    shutil.copytree(template / "lake", tmp_path / "lake")
    for path in (tmp_path / "lake").rglob("*.parquet"):
        age(path, HOUR_S)
    return tmp_path / "lake"


@pytest.fixture
def hashes(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """The files the lake's opening hashes, in order."""
    hashed: list[Path] = []

    def counting(path: Path) -> str:
        hashed.append(path)
        return real(path)

    real = lake_digests.file_sha256
    monkeypatch.setattr(lake_digests, "file_sha256", counting)
    return hashed


def age(path: Path, seconds: int) -> None:
    then = time.time() - seconds
    os.utime(path, (then, then))


def listed_files(lake: Path) -> list[Path]:
    """Every file the manifest lists, in the order they are checked (table by table)."""
    manifest = json.loads((lake / MANIFEST_NAME).read_text())
    return [lake / f["path"] for _, entry in sorted(manifest["tables"].items()) for f in entry["files"]]


def first_latencies(lake: Path) -> Path:
    return sorted((lake / "latencies").rglob("*.parquet"))[0]


def flip_a_value(path: Path) -> None:
    """Change one byte in the middle of the latency_ns column's values, where DuckDB still reads
    the file (footer, row count, every value) without complaint, only a different sum."""
    [(offset, size)] = duckdb.execute(
        "SELECT data_page_offset, total_compressed_size FROM parquet_metadata(?) "
        "WHERE path_in_schema = 'latency_ns'",
        [str(path)],
    ).fetchall()
    whole = path.read_bytes()
    footer_starts = len(whole) - 8 - int.from_bytes(whole[-8:-4], "little")
    query = "SELECT count(*), sum(latency_ns) FROM read_parquet(?)"
    [(rows, before)] = duckdb.execute(query, [str(path)]).fetchall()
    for at in range(offset + size // 2, offset + size):  # a snappy tag byte would not decode: next
        assert at < footer_starts, "the flip lands in the values, not the footer"
        data = bytearray(whole)
        data[at] ^= 0xFF
        path.write_bytes(bytes(data))
        try:
            [(rows_after, after)] = duckdb.execute(query, [str(path)]).fetchall()
        except duckdb.Error:
            continue
        if rows_after == rows and after != before:
            return
    pytest.fail(f"no byte of {path}'s latency_ns values changes a value and still reads")


COMMANDS = {
    "sql": ["sql", "{lake}", QUERY],
    "analyze text": ["analyze", "{lake}"],
    "analyze --json": ["analyze", "{lake}", "--json"],
    "analyze --out": ["analyze", "{lake}", "--out", "{tmp}/report"],
}


@pytest.mark.slow
@pytest.mark.parametrize("command", list(COMMANDS))
def test_a_changed_value_is_one_line_naming_the_file(lake, tmp_path, command):
    damaged = first_latencies(lake)
    flip_a_value(damaged)
    args = [a.format(lake=lake, tmp=tmp_path) for a in COMMANDS[command]]
    line = one_line_error(runner.invoke(app, args))
    assert str(damaged) in line and "SHA-256" in line and "export the DBs again" in line, line
    assert not (tmp_path / "report").exists(), "no report from a lake that cannot be read"


def test_a_second_read_hashes_nothing(lake, cache, hashes):
    first = edgestats.open(lake).sql(QUERY)
    assert sorted(hashes) == sorted(listed_files(lake)), "the first read hashes every file, once"
    assert len(json.loads(cache.read_text())["files"]) == len(hashes)
    hashes.clear()
    lake_digests._verified.clear()  # as a new process: only the cache file remembers
    assert edgestats.open(lake).sql(QUERY).equals(first)
    assert hashes == []


def test_a_touched_or_rewritten_file_is_hashed_again(lake, hashes):
    edgestats.open(lake)
    touched, rewritten = listed_files(lake)[:2]
    age(touched, 2 * HOUR_S)
    rewritten.write_bytes(rewritten.read_bytes())
    hashes.clear()
    edgestats.open(lake)
    assert sorted(hashes) == sorted([touched, rewritten])


def test_a_value_changed_and_its_mtime_put_back_is_still_found(lake):
    """`cp -p`, `rsync -t` and `touch -r` put a file's mtime back, never its ctime."""
    runner.invoke(app, ["sql", str(lake), QUERY])
    damaged = first_latencies(lake)
    mtime_ns = damaged.stat().st_mtime_ns
    time.sleep(0.05)  # past a tick of the kernel's coarse clock: the flip's ctime is another
    flip_a_value(damaged)
    os.utime(damaged, ns=(mtime_ns, mtime_ns))
    line = one_line_error(runner.invoke(app, ["sql", str(lake), QUERY]))
    assert str(damaged) in line and "SHA-256" in line, line


def test_a_file_written_seconds_ago_is_hashed_again(lake, hashes):
    """A write within the same clock tick could leave its mtime as it was: not remembered yet."""
    fresh = first_latencies(lake)
    os.utime(fresh)
    edgestats.open(lake)
    edgestats.open(lake)
    assert hashes.count(fresh) == 2 and len(hashes) == len(listed_files(lake)) + 1


@pytest.mark.parametrize(
    "content",
    [b'{"format": "edgestats-lake-digests-1", "files": {', b"\xff\xfe\x00", b"[]", b'{"files": 3}'],
    ids=["cut short", "not text", "a list", "no format"],
)
def test_a_corrupt_cache_is_ignored_and_rewritten(lake, cache, hashes, content):
    cache.parent.mkdir(parents=True)
    cache.write_bytes(content)
    assert runner.invoke(app, ["sql", str(lake), QUERY]).exit_code == 0
    assert len(hashes) == len(listed_files(lake))
    rewritten = json.loads(cache.read_text())
    assert rewritten["format"] == lake_digests.CACHE_FORMAT and len(rewritten["files"]) == len(hashes)


def test_a_cache_that_cannot_be_written_is_no_error(lake, tmp_path, monkeypatch, hashes):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocker))
    assert runner.invoke(app, ["sql", str(lake), QUERY]).exit_code == 0
    assert runner.invoke(app, ["sql", str(lake), QUERY]).exit_code == 0
    assert len(hashes) == len(listed_files(lake)), "this process still remembers what it hashed"


def test_the_cache_keeps_the_files_verified_last(lake, cache, monkeypatch):
    monkeypatch.setattr(lake_digests, "MAX_ENTRIES", 5)
    edgestats.open(lake)
    kept = json.loads(cache.read_text())["files"]
    last = [os.path.realpath(p) for p in listed_files(lake)][-5:]
    assert list(kept) == last
    assert len(lake_digests._verified) == 5


def test_a_manifest_without_digests_is_read_as_before(lake, cache, hashes):
    manifest = json.loads((lake / MANIFEST_NAME).read_text())
    for entry in manifest["tables"].values():
        for f in entry["files"]:
            del f["sha256"]
    (lake / MANIFEST_NAME).write_text(json.dumps(manifest))
    flip_a_value(first_latencies(lake))
    assert runner.invoke(app, ["sql", str(lake), QUERY]).exit_code == 0
    assert hashes == [] and not cache.exists()
