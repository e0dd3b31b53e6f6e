"""Files edgestats creates open in a real DuckDB 1.x client (the `duckdb-cli` 1.5.x binary of the dev
install), which refuses DuckDB 2.0's default storage format: collected, imported and merged files,
and an old file (DuckDB 2.0's format) that `edgestats merge NEW OLD` rewrites."""

from __future__ import annotations

import importlib.util
import struct
import subprocess
from pathlib import Path

import duckdb
import pytest
from builders import make_results_db
from typer.testing import CliRunner

from edgestats.cli import app
from edgestats.exports.merge import merge
from edgestats.store.database import STORAGE_COMPATIBILITY
from edgestats.store.results import Store

SAMPLE_DATA = Path(__file__).resolve().parents[2] / "sample_data"
# What each client is asked: the views a user queries first, and one figure computed from raw rows.
QUESTION = (
    "SELECT (SELECT count(*) FROM run_summary), (SELECT count(*) FROM training_summary), "
    "(SELECT round(sum(latency_median_ms), 6) FROM run_summary);"
)


@pytest.fixture(scope="module")
def duckdb1() -> Path:
    """The DuckDB 1.x CLI binary installed by the `duckdb-cli` package (dev extra, constraints.txt)."""
    spec = importlib.util.find_spec("duckdb_cli")
    if spec is None or not spec.submodule_search_locations:
        pytest.fail(
            "the DuckDB 1.x client is missing: install the dev extras "
            "(pip install -c constraints.txt -e '.[dev]', which pins duckdb-cli)"
        )
    binary = Path(next(iter(spec.submodule_search_locations))) / "duckdb"
    version = subprocess.run([str(binary), "-version"], capture_output=True, text=True, check=True).stdout
    assert version.startswith("v1."), f"duckdb-cli is not a DuckDB 1.x client: {version!r}"
    return binary


def ask_duckdb1(binary: Path, db: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(binary), "-readonly", "-init", "/dev/null", "-csv", "-noheader", str(db), "-c", QUESTION],
        capture_output=True,
        text=True,
        timeout=60,
    )


def answer_here(db: Path) -> str:
    """The same question asked through edgestats (DuckDB 2), in the 1.x CLI's CSV form."""
    with Store.open(db, read_only=True) as store:
        row = store.con.execute(QUESTION).fetchall()[0]
    return ",".join("" if v is None else (repr(v) if isinstance(v, float) else str(v)) for v in row)


def header_version(db: Path) -> int:
    """The storage version number in the file's main header (after the checksum and b'DUCK')."""
    head = db.read_bytes()[:20]
    assert head[8:12] == b"DUCK", f"{db} has no DuckDB header"
    return struct.unpack("<Q", head[12:20])[0]


def assert_duckdb1_reads(binary: Path, db: Path) -> str:
    assert header_version(db) == 64
    con = duckdb.connect(str(db), read_only=True)
    try:
        tags = con.execute(
            "SELECT tags FROM duckdb_databases() WHERE database_name = current_database()"
        ).fetchall()
    finally:
        con.close()
    assert tags[0][0]["storage_version"] == f"{STORAGE_COMPATIBILITY}+"
    result = ask_duckdb1(binary, db)
    assert result.returncode == 0, result.stderr
    answer = result.stdout.strip()
    assert answer == answer_here(db)
    return answer


def test_collected_imported_and_merged_files_open_in_duckdb1(duckdb1, results_db, tmp_path):
    collected = assert_duckdb1_reads(duckdb1, results_db)
    assert collected.split(",")[:2] == ["4", "1"]  # make_results_db: 3 inference runs and 1 training run

    imported = tmp_path / "published.duckdb"
    result = CliRunner().invoke(
        app, ["import", str(imported), str(SAMPLE_DATA / "pcamp_inference.csv"), "--kind", "inference"]
    )
    assert result.exit_code == 0, result.output
    n_imported = int(assert_duckdb1_reads(duckdb1, imported).split(",")[0])
    assert n_imported > 0

    merged = tmp_path / "merged.duckdb"
    merge(merged, [results_db, imported])
    assert int(assert_duckdb1_reads(duckdb1, merged).split(",")[0]) == 4 + n_imported


def test_a_file_in_duckdb2_format_stays_readable_and_merge_rewrites_it(duckdb1, tmp_path):
    old = tmp_path / "old.duckdb"
    duckdb.connect(str(old)).close()  # DuckDB 2.0's default format, as edgestats wrote files before
    make_results_db(old)  # an existing file keeps its format
    refused = ask_duckdb1(duckdb1, old)
    assert refused.returncode != 0 and "version number 69" in refused.stderr
    before = answer_here(old)  # edgestats still reads (and wrote) it

    new = tmp_path / "new.duckdb"
    result = CliRunner().invoke(app, ["merge", str(new), str(old)])
    assert result.exit_code == 0, result.output
    assert assert_duckdb1_reads(duckdb1, new) == before
