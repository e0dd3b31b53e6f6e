"""`edgestats verify`: a whole file is read on demand, damage is named per table with the steps to
recover, and a file found damaged is marked so that `collect` and `import` stop appending to it
(docs/cli/verify.md; docs/reliability.md, "damaged files").

The files are real results DBs and export folders, damaged as copies get damaged: bytes flipped in
one data block or an index block (the catalog stays whole, so every command opens the file), a
Parquet file cut short, emptied or deleted, a manifest cut short.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path

import duckdb
import pytest
from typer.testing import CliRunner

import edgestats.workflows.collect as collect_workflow
from edgestats.cli import app
from edgestats.collectors.storeaccess import store_waiting
from edgestats.errors import DamagedDatabaseError
from edgestats.exports.parquet import MANIFEST_NAME, export_parquet
from edgestats.store.database import FILE_HEADER_BYTES
from edgestats.store.verify import mark_path, read_mark, write_mark

runner = CliRunner()


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def flip_block(db: Path, block: int, offset: int = 8) -> None:
    """Flip 16 bytes of `block`, past its checksum field: DuckDB's checksum of the block fails."""
    con = duckdb.connect(str(db), read_only=True)
    block_size = con.execute("SELECT block_size FROM pragma_database_size()").fetchall()[0][0]
    con.close()
    with open(db, "r+b") as f:
        f.seek(FILE_HEADER_BYTES + block * block_size + offset)
        data = f.read(16)
        f.seek(FILE_HEADER_BYTES + block * block_size + offset)
        f.write(bytes(b ^ 0xFF for b in data))


def blocks_of(db: Path) -> tuple[int, set[int]]:
    """(the first block of latencies' data, the blocks that hold no table's data nor metadata)."""
    con = duckdb.connect(str(db), read_only=True)
    try:
        total = con.execute("SELECT total_blocks FROM pragma_database_size()").fetchall()[0][0]
        listed = {b for (b,) in con.execute("SELECT block_id FROM pragma_metadata_info()").fetchall()}
        for (table,) in con.execute("SELECT table_name FROM duckdb_tables()").fetchall():
            listed |= {
                b
                for (b,) in con.execute(
                    "SELECT block_id FROM pragma_storage_info(?) WHERE block_id >= 0", [table]
                ).fetchall()
            }
        latencies = con.execute(
            "SELECT min(block_id) FROM pragma_storage_info('latencies') WHERE block_id >= 0"
        ).fetchall()[0][0]
    finally:
        con.close()
    return latencies, set(range(total)) - listed


def rows(result, name: str) -> list[str]:
    return [line for line in result.output.splitlines() if line.split()[1:2] == [name]]


def csv_file(tmp_path: Path) -> Path:
    csv = tmp_path / "more.csv"
    csv.write_text("device,model,framework,latency_ms\npi,cnn9,onnxruntime,3.5\n")
    return csv


def test_verify_finds_a_flipped_data_block_that_collect_does_not_notice_at_open(results_db: Path):
    flip_block(results_db, blocks_of(results_db)[0])
    # collect opens the DB for writing through store_waiting (the thorough check): it passes, and a
    # write lands, since appending reads no old block
    with store_waiting(results_db) as store:
        store.register_device({"name": "another-board"})
    result = runner.invoke(app, ["verify", str(results_db)])
    assert result.exit_code == 1 and "Traceback" not in result.output, result.output
    assert result.output.splitlines()[0] == f"{results_db}: damaged (1 of 13 parts)"
    [latencies] = rows(result, "latencies")
    assert latencies.split()[0] == "DAMAGED" and "checksum" in latencies, result.output
    assert all(
        line.split()[0] == "ok" for name in ("runs", "devices", "samples") for line in rows(result, name)
    )
    assert "copy the db again from the device" in result.output.lower()
    assert f'edgestats sql {results_db} "SELECT * FROM runs"' in result.output  # what survives
    mark = read_mark(results_db)
    assert mark is not None and mark["found_by"] == "edgestats verify"
    assert any(p.startswith("latencies: ") for p in mark["problems"])
    before = digest(results_db)
    with pytest.raises(DamagedDatabaseError, match="edgestats verify .* removes the mark.*--force"):
        with store_waiting(results_db):
            pass
    assert digest(results_db) == before


def test_a_whole_db_verifies_ok_and_a_stale_mark_is_removed(results_db: Path):
    write_mark(results_db, ["latencies: found by hand"], "a test")
    result = runner.invoke(app, ["verify", str(results_db), "--json"])
    assert result.exit_code == 0, result.output
    [report] = json.loads(result.output)
    assert report["whole"] and report["recovery"] == [] and "mark" in report["mark"]
    names = {f["name"]: f for f in report["findings"]}
    assert names["latencies"] == {"name": "latencies", "ok": True, "detail": "150 rows"}
    assert names["other blocks"]["ok"] and "checked" in names["other blocks"]["detail"]
    assert not mark_path(results_db).exists()
    again = runner.invoke(app, ["verify", str(results_db)])
    assert again.exit_code == 0 and again.output.splitlines()[0] == f"{results_db}: whole"


def test_after_verify_marked_a_db_import_refuses_and_import_force_appends(results_db: Path, tmp_path: Path):
    flip_block(results_db, blocks_of(results_db)[0])
    assert runner.invoke(app, ["verify", str(results_db)]).exit_code == 1
    before = digest(results_db)
    args = ["import", str(results_db), str(csv_file(tmp_path)), "--kind", "inference"]
    refused = runner.invoke(app, args)
    assert refused.exit_code == 1 and "Traceback" not in refused.output
    [line] = refused.stderr.strip().splitlines()
    assert line.startswith(f"error: {results_db} is damaged: edgestats verify found it on ")
    assert "import will not append" in line and "`import --force` appends anyway" in line
    assert digest(results_db) == before
    forced = runner.invoke(app, [*args, "--force"])
    assert forced.exit_code == 0, forced.output
    assert "1 run added" in forced.output
    con = duckdb.connect(str(results_db), read_only=True)
    assert con.execute("SELECT count(*) FROM runs").fetchall() == [(5,)]
    con.close()


def test_collect_refuses_a_marked_db_in_one_line_and_force_lets_it_store(
    results_db: Path, tmp_path: Path, monkeypatch
):
    write_mark(results_db, ["latencies: Corrupt database file"], "edgestats verify")
    before = digest(results_db)
    args = ["collect", "--db", str(results_db), "-f", "onnxruntime", "-m", "cnn9", "-n", "2"]
    refused = runner.invoke(app, [*args, "--cache-dir", str(tmp_path / "cache")])
    assert refused.exit_code == 1 and "Traceback" not in refused.output, refused.output
    [line] = refused.stderr.strip().splitlines()
    assert line.startswith(f"error: {results_db} is damaged") and "`collect --force`" in line
    assert digest(results_db) == before
    opened = []

    def store_as_collect_does(db, *_args, **_kwargs):  # the run itself is not this test's subject
        with store_waiting(db) as store:
            opened.append(store.register_device({"name": "forced"}))

    monkeypatch.setattr(collect_workflow, "collect_sweep", store_as_collect_does)
    forced = runner.invoke(app, [*args, "--force"])
    assert forced.exit_code == 0 and opened, forced.output
    with pytest.raises(DamagedDatabaseError):  # --force lasts for its own collect only
        with store_waiting(results_db):
            pass


def test_a_flipped_index_block_is_found_and_merge_recovers_every_row(results_db: Path, tmp_path: Path):
    """A primary key's index block: no table scan reads it, so only verify's own checksum finds it."""
    index_block = min(blocks_of(results_db)[1])
    flip_block(results_db, index_block)
    result = runner.invoke(app, ["verify", str(results_db)])
    assert result.exit_code == 1, result.output
    [other] = rows(result, "other")
    assert other.split()[0] == "DAMAGED" and f"block {index_block} of" in other
    assert all(line.split()[0] == "ok" for line in result.output.splitlines()[1:13]), result.output
    assert f"edgestats merge NEW.duckdb {results_db}" in result.output
    new = tmp_path / "new.duckdb"
    assert runner.invoke(app, ["merge", str(new), str(results_db)]).exit_code == 0
    assert runner.invoke(app, ["verify", str(new)]).exit_code == 0


def test_a_command_that_meets_damage_marks_the_db(results_db: Path, tmp_path: Path):
    flip_block(results_db, blocks_of(results_db)[0])
    result = runner.invoke(app, ["sql", str(results_db), "SELECT sum(latency_ns) FROM latencies"])
    assert result.exit_code == 1 and "is damaged" in result.stderr
    assert read_mark(results_db)["found_by"] == "an edgestats command that read it"
    refused = runner.invoke(app, ["import", str(results_db), str(csv_file(tmp_path)), "--kind", "inference"])
    assert refused.exit_code == 1 and "import will not append" in refused.stderr


def test_a_glob_of_dbs_gets_one_report_each(results_db: Path, tmp_path: Path):
    second = tmp_path / "second.duckdb"
    shutil.copyfile(results_db, second)
    flip_block(second, blocks_of(second)[0])
    result = runner.invoke(app, ["verify", str(tmp_path / "*.duckdb")])
    assert result.exit_code == 1
    heads = [line for line in result.output.splitlines() if not line.startswith(" ")]
    assert heads == [f"{results_db}: whole", f"{second}: damaged (1 of 13 parts)"]
    assert read_mark(second) is not None and read_mark(results_db) is None


@pytest.fixture(scope="module")
def export_template(tmp_path_factory: pytest.TempPathFactory, results_db_template: Path) -> Path:
    out = tmp_path_factory.mktemp("verify-lake") / "lake"
    export_parquet(results_db_template, out)
    return out


def latencies_file(lake: Path) -> Path:
    manifest = json.loads((lake / MANIFEST_NAME).read_text())
    return lake / manifest["tables"]["latencies"]["files"][0]["path"]


def flip_footer(path: Path) -> None:
    """Flip the bytes of the file's closing magic ("PAR1"), as a bad copy flips bytes."""
    data = bytearray(path.read_bytes())
    data[-4:] = bytes(b ^ 0xFF for b in data[-4:])
    path.write_bytes(bytes(data))


def flip_middle(path: Path) -> None:
    """Flip one byte inside the file's pages: DuckDB may decode it without complaint."""
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x5A
    path.write_bytes(bytes(data))


LAKE_DAMAGES = {
    "truncated": lambda p: os.truncate(p, p.stat().st_size // 2),
    "emptied": lambda p: os.truncate(p, 0),
    "deleted": os.unlink,
    "footer_flipped": flip_footer,
    "byte_flipped": flip_middle,
}


@pytest.mark.parametrize("damage", list(LAKE_DAMAGES))
def test_verify_names_a_damaged_parquet_file_of_a_lake(damage, export_template: Path, tmp_path: Path):
    lake = tmp_path / "lake"
    shutil.copytree(export_template, lake)
    whole = runner.invoke(app, ["verify", str(lake)])
    assert whole.exit_code == 0 and whole.output.splitlines()[0] == f"{lake}: whole", whole.output
    target = latencies_file(lake)
    LAKE_DAMAGES[damage](target)
    result = runner.invoke(app, ["verify", str(lake)])
    assert result.exit_code == 1 and "Traceback" not in result.output, result.output
    relative = target.relative_to(lake).as_posix()
    [line] = [line for line in result.output.splitlines() if relative in line]
    assert line.split()[0] == "DAMAGED", line
    assert ("missing" in line) == (damage == "deleted")
    assert "export the DBs again" in result.output
    assert [line.split()[0] for line in rows(result, "runs")] == ["ok"]


def test_verify_names_a_truncated_manifest(export_template: Path, tmp_path: Path):
    lake = tmp_path / "lake"
    shutil.copytree(export_template, lake)
    manifest = lake / MANIFEST_NAME
    os.truncate(manifest, manifest.stat().st_size // 2)
    result = runner.invoke(app, ["verify", str(lake)])
    assert result.exit_code == 1 and "Traceback" not in result.output, result.output
    [line] = rows(result, MANIFEST_NAME)
    assert line.split()[0] == "DAMAGED" and "not whole JSON (cut short?)" in line
    assert "only through its manifest" in result.output
