"""Storage faults, for real: a file size limit (RLIMIT_FSIZE, EFBIG), a full tmpfs (ENOSPC), a
read-only mount (EROFS) and a file the process may not write (EACCES). Each gives one line that
names the cause and the file; runs stored before are intact, and a failed merge or export leaves
its target as it was (docs/reliability.md).

The tmpfs tests mount file systems: they need root (CAP_SYS_ADMIN), as on the project's test
machines. Root ignores file modes, so the permission test drops CAP_DAC_OVERRIDE in the child.
"""

from __future__ import annotations

import csv
import ctypes
import hashlib
import os
import resource
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from builders import write_inference_run
from typer.testing import CliRunner

from edgestats.cli import app
from edgestats.errors import StorageError
from edgestats.imports.importer import import_results
from edgestats.store.results import Store

runner = CliRunner()


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def folder_state(folder: Path) -> dict[str, str]:
    return {p.name: digest(p) for p in sorted(folder.iterdir()) if p.is_file()}


def edgestats(
    *args: str, limit_bytes: int | None = None, no_dac_override: bool = False, cwd: Path | None = None
) -> subprocess.CompletedProcess:
    """`python -m edgestats ARGS` in a child process: with a file size limit (SIGXFSZ ignored, so
    a write past it fails with EFBIG, as on a file system with a size cap), or without root's
    power to write files it does not have permission for."""
    libc = ctypes.CDLL(None, use_errno=True)

    def setup() -> None:
        if limit_bytes is not None:
            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
            resource.setrlimit(resource.RLIMIT_FSIZE, (limit_bytes, limit_bytes))
        if no_dac_override and os.geteuid() == 0:
            for capability in (1, 2):  # CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH, dropped for what it execs
                if libc.prctl(24, capability, 0, 0, 0) != 0:  # PR_CAPBSET_DROP
                    raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP)")

    return subprocess.run(
        [sys.executable, "-m", "edgestats", *args],
        preexec_fn=setup,
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=120,
    )


def assert_one_line(proc: subprocess.CompletedProcess, cause: str, path: str | Path) -> str:
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr + proc.stdout
    line = proc.stderr.strip().splitlines()[-1]
    assert line.startswith(f"error: {cause}: ") and str(path) in line, line
    return line


def runs_in(db: Path) -> int:
    with Store.open(db, read_only=True) as store:
        return store.counts()["runs"]


def big_csv(path: Path, rows: int) -> Path:
    with open(path, "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["device", "model", "framework", "batch_size", "latency_ms"])
        for i in range(rows):
            writer.writerow(["pi", f"m{i}", "onnxruntime", 1, 3.5 + i / 1000])
    return path


# -- file too large (RLIMIT_FSIZE) -------------------------------------------------------------------


@pytest.mark.slow
def test_import_past_the_size_limit_names_the_cause_and_stores_nothing(results_db: Path, tmp_path: Path):
    before = digest(results_db)
    proc = edgestats(
        "import",
        str(results_db),
        str(big_csv(tmp_path / "big.csv", rows=2000)),
        "--kind",
        "inference",
        limit_bytes=300_000,
    )  # the WAL of 2000 runs outgrows it
    line = assert_one_line(proc, "File too large", results_db)
    assert "Runs stored before are intact" in line and "ulimit -f" in line
    assert digest(results_db) == before and runs_in(results_db) == 4
    assert (
        import_results(results_db, big_csv(tmp_path / "few.csv", rows=3), kind="inference").runs_added == 3
    )  # still usable


def test_merge_past_the_size_limit_leaves_out_byte_for_byte(results_db: Path, tmp_path: Path):
    out_dir = tmp_path / "merged"
    out_dir.mkdir()
    out = out_dir / "all.duckdb"
    shutil.copyfile(results_db, out)
    big = tmp_path / "big.duckdb"
    with Store.open(big) as store:
        device = store.register_device({"name": "rpi"})
        for seed in range(12):
            write_inference_run(store, device, seed=100 + seed, n_latencies=5000, n_samples=5000)
    before = folder_state(out_dir)
    proc = edgestats("merge", str(out), str(big), limit_bytes=out.stat().st_size + 300_000)
    line = assert_one_line(proc, "File too large", out_dir)
    assert f"{out} was not changed" in line
    assert folder_state(out_dir) == before, "OUT changed, or a temporary file stayed beside it"


def test_export_past_the_size_limit_leaves_no_folder(results_db: Path, tmp_path: Path):
    proc = edgestats("export", str(results_db), "--parquet", str(tmp_path / "export"), limit_bytes=2_000)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
    line = proc.stderr.strip()
    assert line.startswith("error: writing ") and "\n" not in line, line
    assert "failed: File too large" in line and f"{tmp_path / 'export'} was not changed" in line
    assert sorted(p.name for p in tmp_path.iterdir()) == ["results.duckdb"]


STORE_LOOP = """
import sys
sys.path[:0] = sys.argv[2:]
from builders import write_inference_run
from edgestats.errors import StorageError
from edgestats.store.results import Store
written = 0
try:
    with Store.open(sys.argv[1]) as store:
        device = store.register_device({"name": "rpi"})
        for seed in range(1000):
            write_inference_run(store, device, seed=1000 + seed, n_latencies=2000, n_samples=2000)
            written += 1
except StorageError as exc:
    print(written, type(exc).__name__, exc.cause, exc.path, sep="|")
"""


def test_store_write_past_the_size_limit_raises_storage_error_and_keeps_the_runs_before(results_db: Path):
    """What collect meets when it stores a run: Store.write_run raises StorageError (cause, path)."""

    def setup() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (300_000,) * 2)  # the WAL outgrows it

    tests = str(Path(__file__).parents[1])
    proc = subprocess.run(
        [sys.executable, "-c", STORE_LOOP, str(results_db), tests],
        preexec_fn=setup,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    written, name, cause, path = proc.stdout.strip().split("|")
    assert (name, cause) == ("StorageError", "File too large") and path.startswith(str(results_db))
    assert int(written) >= 1 and runs_in(results_db) == 4 + int(written)
    with Store.open(results_db) as store:  # and the DB takes the next run
        write_inference_run(store, store.register_device({"name": "rpi"}), seed=1)
        assert store.counts()["runs"] == 5 + int(written)


# -- a full or read-only file system (tmpfs) ---------------------------------------------------------


@pytest.fixture
def tmpfs(tmp_path: Path):
    """An 8 MB tmpfs of the test's own: filling it fills a real file system."""
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", str(mnt)], capture_output=True, text=True
    )
    if mounted.returncode != 0:
        pytest.fail(f"these tests mount a tmpfs and need root (CAP_SYS_ADMIN): {mounted.stderr.strip()}")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=True)


def test_disk_full_raises_storage_error_and_the_runs_before_stay(tmpfs: Path, results_db: Path):
    db = tmpfs / "results.duckdb"
    shutil.copyfile(results_db, db)
    free = os.statvfs(tmpfs).f_bavail * os.statvfs(tmpfs).f_frsize
    filler = tmpfs / "filler"
    filler.write_bytes(b"\0" * (free - 600_000))
    written = 0
    with pytest.raises(StorageError) as caught:
        with Store.open(db) as store:
            device = store.register_device({"name": "rpi"})
            for seed in range(100):
                write_inference_run(store, device, seed=100 + seed, n_latencies=2000, n_samples=2000)
                written += 1
    assert caught.value.cause == "No space left on device" and caught.value.path.startswith(str(db))
    assert str(caught.value).startswith(f"No space left on device: {db}") and "\n" not in str(caught.value)
    assert written >= 1
    filler.unlink()
    assert runs_in(db) == 4 + written
    with Store.open(db) as store:
        write_inference_run(store, store.register_device({"name": "rpi"}), seed=1)


def test_read_only_file_system_names_the_cause_and_changes_nothing(
    tmpfs: Path, results_db: Path, tmp_path: Path
):
    db = tmpfs / "results.duckdb"
    shutil.copyfile(results_db, db)
    subprocess.run(["mount", "-o", "remount,ro", str(tmpfs)], check=True)
    before = folder_state(tmpfs)
    csv_file = big_csv(tmp_path / "few.csv", rows=3)
    for args in (
        ["import", str(db), str(csv_file), "--kind", "inference"],
        ["merge", str(db), str(results_db)],
        ["merge", str(tmpfs / "new.duckdb"), str(results_db)],
    ):
        result = runner.invoke(app, args)
        assert result.exit_code == 1 and "Traceback" not in result.output, result.output
        line = result.stderr.strip().splitlines()[-1]
        assert line.startswith(f"error: Read-only file system: {tmpfs}") and "mounted read-only" in line, line
    assert folder_state(tmpfs) == before
    assert runs_in(db) == 4  # reading still works


# -- permission denied -----------------------------------------------------------------------------


def test_permission_denied_names_the_file(results_db: Path, tmp_path: Path):
    """A DB its user may not write (mode 0444 in a 0555 folder); the merge into a folder that
    cannot be written is tried on the read-only mount above."""
    shared = tmp_path / "shared"
    shared.mkdir()
    db = shared / "results.duckdb"
    shutil.copyfile(results_db, db)
    db.chmod(0o444)
    shared.chmod(0o555)
    try:
        before = folder_state(shared)
        imported = edgestats(
            "import",
            str(db),
            str(big_csv(tmp_path / "few.csv", rows=3)),
            "--kind",
            "inference",
            no_dac_override=True,
        )
        assert "you may not write it" in assert_one_line(imported, "Permission denied", db)
        assert folder_state(shared) == before
    finally:
        shared.chmod(0o755)
