"""Damaged DB files: a truncated or corrupt DuckDB file is refused with one line, by every command,
before anything is written to it (docs/reliability.md, "damaged files").

The files are real results DBs, damaged the way copies get damaged: cut to half, cut to the first
4096 bytes, cut by one block, bytes flipped in the catalog or in a data block.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import duckdb
import pytest
from builders import write_inference_run
from typer.testing import CliRunner

from edgestats.cli import app
from edgestats.errors import DamagedDatabaseError
from edgestats.store.database import FILE_HEADER_BYTES, _last_used_block, connect
from edgestats.store.results import Store

runner = CliRunner()


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def flip(path: Path, offset: int, n: int = 16) -> None:
    with open(path, "r+b") as f:
        f.seek(offset)
        data = f.read(n)
        f.seek(offset)
        f.write(bytes(b ^ 0xFF for b in data))


def block_layout(path: Path) -> tuple[int, int]:
    """(block size, the first block holding latencies data) of an intact DB."""
    con = duckdb.connect(str(path), read_only=True)
    try:
        block_size = con.execute("SELECT block_size FROM pragma_database_size()").fetchall()[0][0]
        block = con.execute(
            "SELECT min(block_id) FROM pragma_storage_info('latencies') WHERE block_id >= 0"
        ).fetchall()[0][0]
    finally:
        con.close()
    return block_size, block


DAMAGES = {
    "half": lambda p: os.truncate(p, p.stat().st_size // 2),
    "first_4096_bytes": lambda p: os.truncate(p, 4096),
    "one_block_short": lambda p: os.truncate(p, p.stat().st_size - block_layout(p)[0]),
    "catalog_bytes_flipped": lambda p: flip(p, FILE_HEADER_BYTES + 100),
    "header_bytes_flipped": lambda p: flip(p, 8192 + 8),
}


def commands(db: Path, tmp: Path) -> dict[str, list[str]]:
    csv = tmp / "more.csv"
    csv.write_text("device,model,framework,latency_ms\npi,cnn9,onnxruntime,3.5\n")
    return {
        "analyze": ["analyze", str(db), "--only", "summary", "--resamples", "100"],
        "merge": ["merge", str(tmp / "merged.duckdb"), str(db)],
        "sql": ["sql", str(db), "SELECT count(*), sum(latency_ns) FROM latencies"],
        "export": ["export", str(db), "--parquet", str(tmp / "export")],
        "import": ["import", str(db), str(csv), "--kind", "inference"],
        "collect": [
            "collect",
            "--db",
            str(db),
            "--framework",
            "onnxruntime",
            "--model",
            "cnn9",
            "-n",
            "2",
            "--cache-dir",
            str(tmp / "cache"),
        ],
    }


def assert_refused_in_one_line(result, db: Path, what: str) -> None:
    assert result.exit_code == 1, result.output
    assert "Traceback" not in result.output and isinstance(result.exception, SystemExit)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    assert f"{db}" in lines[0] and what in lines[0], lines[0]


@pytest.mark.parametrize("damage", list(DAMAGES))
def test_a_damaged_db_is_refused_at_open_and_left_as_it_was(damage, results_db: Path):
    DAMAGES[damage](results_db)
    before = digest(results_db)
    for read_only in (True, False):
        with pytest.raises(DamagedDatabaseError, match="is damaged.*copy the DB again from the device"):
            Store.open(results_db, read_only=read_only)
    assert digest(results_db) == before and not Path(f"{results_db}.wal").exists()


@pytest.mark.parametrize("damage", ["half", "catalog_bytes_flipped"])
def test_every_command_refuses_a_damaged_db_and_writes_nothing(damage, results_db: Path, tmp_path: Path):
    DAMAGES[damage](results_db)
    before = digest(results_db)
    for name, args in commands(results_db, tmp_path).items():
        result = runner.invoke(app, args)
        assert_refused_in_one_line(result, results_db, "is damaged")
        assert "copy the DB again from the device" in result.stderr and "edgestats merge" in result.stderr, (
            name
        )
        assert digest(results_db) == before, f"{name} wrote to the damaged DB"
        assert not Path(f"{results_db}.wal").exists(), name
    assert not (tmp_path / "merged.duckdb").exists() and not (tmp_path / "export").exists()
    assert sorted(p.name for p in tmp_path.iterdir() if not p.name.startswith(".")) == [
        "more.csv",
        "results.duckdb",
    ]


def test_a_file_that_is_no_duckdb_at_all_says_so(results_db: Path):
    os.truncate(results_db, 0)
    result = runner.invoke(app, ["sql", str(results_db), "SELECT 1"])
    assert_refused_in_one_line(result, results_db, "is not a DuckDB database")
    assert results_db.stat().st_size == 0


def test_a_damaged_data_block_is_named_by_every_reader(results_db: Path, tmp_path: Path):
    """The catalog is intact, so the file opens; the block fails DuckDB's checksum when read."""
    block_size, block = block_layout(results_db)
    flip(results_db, FILE_HEADER_BYTES + block * block_size + 8)
    before = digest(results_db)
    cmds = commands(results_db, tmp_path)
    for name in ("analyze", "merge", "export", "sql"):
        result = runner.invoke(app, cmds[name])
        assert result.exit_code == 1 and "Traceback" not in result.output, (name, result.output)
        line = result.stderr.strip().splitlines()[-1]
        assert line.startswith("error: ") and "is damaged" in line and "checksum" in line, (name, line)
        assert str(results_db) in line, (name, line)
        assert digest(results_db) == before
    assert not (tmp_path / "merged.duckdb").exists() and not (tmp_path / "export").exists()


def stored_like_collect(path: Path, n: int) -> Path:
    """A DB written as collect writes it, one open per run; after 5 such runs DuckDB 2.0 has cut
    a free block off the end of this one, so it is shorter than its block count, and intact, and
    its last used block holds table data, which DuckDB reads only when queried (after 4, with the
    catalog of schema 0009, the last block is metadata, which every open reads)."""
    for i in range(n):
        with Store.open(path) as store:
            device = store.register_device({"name": "d"})
            write_inference_run(store, device, seed=i, n_latencies=300 if i % 3 else 30_000, n_samples=200)
    return path


def blocks(path: Path) -> tuple[int, int, int, int]:
    """(block size, blocks in the file, blocks in the header's count, free blocks)."""
    con = duckdb.connect(str(path), read_only=True)
    try:
        size, total, free = con.execute(
            "SELECT block_size, total_blocks, free_blocks FROM pragma_database_size()"
        ).fetchall()[0]
    finally:
        con.close()
    return size, (path.stat().st_size - FILE_HEADER_BYTES) // size, total, free


def test_a_file_duckdb_trimmed_is_intact_but_one_cut_inside_its_blocks_is_not(tmp_path: Path):
    db = stored_like_collect(tmp_path / "r.duckdb", 5)
    block_size, in_file, total, free = blocks(db)
    assert in_file < total and total - in_file <= free, "precondition: DuckDB cut free blocks off the end"
    for read_only in (True, False):  # the thorough check (before writing) finds every used block there
        with Store.open(db, read_only=read_only) as store:
            assert store.counts()["runs"] == 5
    con = connect(db, read_only=True)
    last_used = _last_used_block(con, None)
    con.close()
    os.truncate(db, FILE_HEADER_BYTES + last_used * block_size)  # the last used block is gone ...
    assert total - last_used <= free  # ... by fewer blocks than are free: only the thorough check can tell
    before = digest(db)
    with pytest.raises(DamagedDatabaseError, match="cut short"):
        Store.open(db)
    assert digest(db) == before
