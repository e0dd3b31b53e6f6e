"""`edgestats import` in bounded memory: no row passes through Python (the runs are made in SQL
in a staging DuckDB and copied into the store by DuckDB, in one transaction), DuckDB works under a
memory limit, and a file is read as a stream. The 200 MB figure: bench/memory.py.

Cost: the memory test imports a 5 MB and a 20 MB CSV in child processes (about 15 s of CPU:
`slow`); the rest well under a second each.
"""

from __future__ import annotations

import random
import tempfile
import uuid
from pathlib import Path

import duckdb
import pytest
from cli_asserts import one_line_error
from import_builders import rows, write
from peak_rss import peak_rss_bytes
from typer.testing import CliRunner

import edgestats.imports.identity as identity
import edgestats.imports.importer as importer
import edgestats.imports.read as read
from edgestats.cli import app
from edgestats.contracts import device_uuid, name_uuid
from edgestats.imports.identity import identity_key
from edgestats.imports.importer import import_results
from edgestats.imports.tables import digest_sql, run_id_sql

runner = CliRunner()
MIB = 2**20
HEADER = "device,framework,model,batch_size,threads,latency_ms,mem_max_mb,firmware\n"


def runs_csv(path: Path, target_bytes: int, seed: int = 7) -> Path:
    """One row per run as a published table has them (bench/memory.py writes the same kind)."""
    rng = random.Random(seed)
    with open(path, "w") as f:
        f.write(HEADER)
        while f.tell() < target_bytes:
            f.write(
                "".join(
                    f"pi4-{rng.randrange(12):02d},{rng.choice(['tflite', 'onnx', 'torch'])},"
                    f"{rng.choice(['resnet18', 'squeezenet', 'yolov8n'])},{rng.choice([1, 2, 4, 8])},"
                    f"{rng.randint(1, 4)},{rng.uniform(5, 200):.2f},{rng.randint(80, 900)},"
                    f"v1.{rng.randrange(10)}\n"
                    for _ in range(5000)
                )
            )
    return path


@pytest.mark.slow
def test_import_memory_per_byte_of_file_is_a_fraction_of_what_it_was(tmp_path):
    peaks = {}
    for mb in (5, 20):
        csv_path = runs_csv(tmp_path / f"runs{mb}.csv", mb * 10**6)
        peaks[mb] = peak_rss_bytes(
            "import", str(tmp_path / f"r{mb}.duckdb"), str(csv_path), "--kind", "inference"
        )
    # Before: 725 MB and 1,484 MB (50 bytes of memory per byte of file). Now a fixed overhead (Python,
    # two DuckDB instances, one batch) plus the store's primary-key indexes, ~200 bytes per run (350 k
    # more runs from 5 to 20 MB), plus what each DuckDB thread builds outside the memory_limit: with
    # DuckDB's threads forced to 2, 8 and 16 on one machine the growth was 7.6, 8.2 and 9.5 bytes per
    # byte of file (peaks 481, 494 and 505 MiB), and 10.0 (582 MiB) on a CI machine with more cores;
    # 9.8 under the lowest declared versions (pyarrow 14) on a loaded machine. So the allowance grows
    # with the thread count DuckDB uses here (its default: the hardware's), with room for the
    # allocator's moods, and still fails the old 50 bytes per byte by a factor of 2.5 or more.
    threads = duckdb.connect().execute("SELECT current_setting('threads')").fetchone()[0]
    assert peaks[20] < (600 + 5 * threads) * MIB, (peaks, threads)
    assert peaks[20] - peaks[5] < (12 + 0.2 * threads) * 15 * 10**6, (peaks, threads)


def test_run_ids_made_in_sql_are_those_of_name_uuid():
    con = duckdb.connect()
    file_hash = "ab" * 32
    for identity_ in (
        {"map": {}, "device": None},  # no key: the run ids every earlier edgestats gave
        {"map": {"Zeit (ms)": "latency_ms"}, "device": "Gerät ü 🙂", "long": True},
    ):
        got = con.execute(
            f"SELECT _row, CAST({run_id_sql('d')} AS VARCHAR) FROM "
            f"(SELECT range AS _row, {digest_sql(file_hash, identity_)} AS d FROM range(1, 3000))"
        ).fetchall()
        key = identity_key(identity_)
        for row, run_id in got:
            expected = name_uuid("import", file_hash, *([key] if key else []), str(row))
            assert uuid.UUID(run_id) == expected and uuid.UUID(run_id).version == 5


def test_a_file_staged_on_disk_imports_in_row_order_and_leaves_no_file(tmp_path, monkeypatch):
    monkeypatch.setattr(importer, "STAGE_ON_DISK_BYTES", 0)  # every file is staged in a DuckDB file
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    src = write(
        tmp_path / "runs.csv",
        "device,framework,dataset,latency_ms\n"
        + "".join(f"dev{i % 3},tflite,{'CIFAR-10' if i % 2 else 'mnist'},{i + 1}\n" for i in range(40)),
    )
    report = import_results(tmp_path / "r.duckdb", src, kind="inference")
    assert report.runs_added == 40 and report.devices == ["dev0", "dev1", "dev2"]
    got = rows(
        tmp_path / "r.duckdb",
        "SELECT CAST(config->>'row' AS INTEGER) AS row, dataset, config->>'dataset_as_written' AS written, "
        "CAST(device_id AS VARCHAR) AS device_id FROM runs",
    )
    assert [r["row"] for r in got] == list(range(1, 41))  # stored in the file's order
    assert {(r["dataset"], r["written"]) for r in got} == {("cifar10", "CIFAR-10"), ("mnist", None)}
    assert {r["device_id"] for r in got} == {device_uuid(f"dev{i}") for i in range(3)}
    assert list((tmp_path / "tmp").iterdir()) == []  # the staging DB and its folder are gone


def test_when_duckdb_runs_short_the_write_is_tried_again_under_the_general_limit(tmp_path, monkeypatch):
    db = tmp_path / "r.duckdb"
    import_results(db, write(tmp_path / "a.csv", "device,latency_ms\npi,1\n"), kind="inference")
    again = write(tmp_path / "a.csv", "device,latency_ms\npi,2\npi,3\n")  # same name, other content
    monkeypatch.setattr(identity, "WORKING_BYTES", 0)
    monkeypatch.setattr(identity, "INDEX_BYTES_PER_RUN", 0)  # a memory_limit of 1 MiB: too little
    tries = []
    write_once = identity._write
    monkeypatch.setattr(identity, "_write", lambda *a, **k: tries.append(k["tight"]) or write_once(*a, **k))
    report = import_results(db, again, kind="inference")
    assert tries == [True, False] and report.runs_added == 2
    assert len([n for n in report.notes if "also holds 1 runs" in n]) == 1  # the first try's note is not kept
    assert rows(db, "SELECT count(*) AS n FROM runs")[0]["n"] == 3


def test_a_byte_that_is_not_utf8_is_found_across_chunks(tmp_path, monkeypatch):
    monkeypatch.setattr(read, "CHUNK_BYTES", 7)  # lines and characters cut across reads
    src = tmp_path / "x.csv"
    src.write_bytes("device,latency_ms\nKöln Ü,1\npi,2\n".encode() + b"k\xf6ln,3\n")
    error = one_line_error(
        runner.invoke(app, ["import", str(tmp_path / "r.duckdb"), str(src), "--kind", "inference"])
    )
    assert "line 4 is not UTF-8 text (byte 0xf6)" in error
    src.write_bytes("device,latency_ms\nKöln Ü,1\n".encode() * 5)
    read.check_utf8(src)  # whole characters split between two reads are no error
