"""`sync_sources`: board DBs synced into a lake (or a DB) twice add nothing the second time; a
damaged DB among them is refused in one line and the others are synced."""

from __future__ import annotations

import hashlib
import json

from builders import make_results_db

from edgestats.store.lake import reading_lake
from edgestats.workflows.sync import LAKE_LOG_NAME, sync_sources


def lake_state(lake):
    return {
        p.relative_to(lake).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(lake.rglob("*"))
        if p.is_file() and p.name != LAKE_LOG_NAME
    }


def test_syncing_twice_adds_nothing_and_a_damaged_db_is_refused_in_one_line(tmp_path):
    boards = [
        make_results_db(tmp_path / f"pi5-0{i}.duckdb", device_name=f"pi5-0{i}", n_runs=2, seed0=10 * i)
        for i in (1, 2)
    ]
    damaged = make_results_db(tmp_path / "pi5-03.duckdb", device_name="pi5-03", n_runs=2, seed0=30)
    data = bytearray(damaged.read_bytes())
    data[len(data) // 2 : len(data) // 2 + 4096] = b"\xff" * 4096
    damaged.write_bytes(bytes(data[: len(data) - 8192]))
    lake = tmp_path / "lake"
    first = sync_sources([boards[0], damaged, boards[1]], lake)
    assert [(s.path.name, s.runs_new, s.runs_already) for s in first.sources if not s.refused] == [
        ("pi5-01.duckdb", 3, 0),
        ("pi5-02.duckdb", 3, 0),
    ]
    [refused] = first.refused
    assert refused.path == damaged and "\n" not in refused.refused and "pi5-03.duckdb" in refused.refused
    before = lake_state(lake)
    second = sync_sources(boards, lake)
    assert [(s.runs_new, s.runs_already, s.refused) for s in second.sources] == [(0, 3, None), (0, 3, None)]
    assert lake_state(lake) == before, "the lake's files are unchanged by the second sync"
    with reading_lake(lake) as store:
        assert store.con.execute("SELECT count(*) FROM runs").fetchone()[0] == 6
    log = [json.loads(line) for line in (lake / LAKE_LOG_NAME).read_text().splitlines()]
    assert len(log) == 4 and log[0]["sha256"] == hashlib.sha256(boards[0].read_bytes()).hexdigest()


def test_syncing_into_a_db_merges_and_is_idempotent(tmp_path):
    board = make_results_db(tmp_path / "b.duckdb", n_runs=2)
    into = tmp_path / "all.duckdb"
    assert [(s.runs_new, s.runs_already) for s in sync_sources([board], into).sources] == [(3, 0)]
    assert [(s.runs_new, s.runs_already) for s in sync_sources([board], into).sources] == [(0, 3)]
    assert (tmp_path / "all.duckdb.sync.jsonl").read_text().count("\n") == 2


def test_the_command_prints_per_source_and_exits_1_when_one_was_refused(tmp_path):
    from typer.testing import CliRunner

    from edgestats.cli import app

    board = make_results_db(tmp_path / "pi5-01.duckdb", n_runs=2)
    foreign = tmp_path / "notes.duckdb"
    foreign.write_bytes(b"not a database at all" * 100)
    result = CliRunner().invoke(app, ["sync", str(board), str(foreign), "--into", str(tmp_path / "lake")])
    lines = result.output.strip().splitlines()
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert lines[0] == "pi5-01.duckdb: 3 new runs, 0 already there"
    assert lines[1].startswith("notes.duckdb: refused: ") and len(lines) == 3
    assert lines[2].startswith("1 of 2 sources synced into ") and "1 refused" in lines[2]
