"""Nothing outlives a killed `edgestats prepare` (collectors/pack.py, collectors/prepare.py):
its builders die with it (PR_SET_PDEATHSIG), no temporary file is left in $TMPDIR, and what a
killed build left inside the pack is cleared by the next prepare, never while a build runs.
Also the first file collect writes, its spool owner's lock: a full disk there names the file and
leaves no empty `.owner-*.lock.new`.

Cost: about 1 s for the unmarked tests (a few short processes); the `frameworks` test exports
squeezenet to ONNX with PyTorch and kills it midway: about 15 s (most of it torch's import).
"""

from __future__ import annotations

import fcntl
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from edgestats.cli.common import _named_file
from edgestats.collectors.pack import _remove_dead_manifest_temps
from edgestats.collectors.prepare import LOCK, MARKER, remove_dead_builds
from edgestats.store.database import storage_error

PARENT = """
import sys
from pathlib import Path
from edgestats.collectors.pack import build_group
from edgestats.collectors.core.runconfig import RunConfig
configs = [RunConfig(framework="onnxruntime", model="cnn9")]
for _ in build_group(configs, Path(sys.argv[1]), python=sys.argv[2]):
    pass
"""


def gone(process: psutil.Process) -> bool:
    try:
        return process.status() == psutil.STATUS_ZOMBIE  # dead, not yet reaped by its new parent
    except psutil.NoSuchProcess:
        return True


def wait_for(predicate, timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)


def test_a_builder_dies_with_its_prepare(tmp_path):
    """A builder that would run for a minute (a stand-in interpreter that sleeps) is gone at once
    when the process building the group is SIGKILLed, though nobody is left to kill it."""
    pid_file = tmp_path / "builder.pid"
    builder = tmp_path / "python"
    builder.write_text(f"#!/bin/sh\necho $$ > {pid_file}\nexec sleep 60\n")
    builder.chmod(0o755)
    parent = subprocess.Popen([sys.executable, "-c", PARENT, str(tmp_path / "pack"), str(builder)])
    try:
        wait_for(lambda: pid_file.is_file() and pid_file.read_text().strip(), 30, "the builder to start")
        process = psutil.Process(int(pid_file.read_text()))
        assert process.ppid() == parent.pid
        parent.kill()
        parent.wait()
        wait_for(lambda: gone(process), 1.0, "the builder to die with its parent")
    finally:
        parent.kill()
        parent.wait()


def half_built(pack: Path, key: str = "0123456789abcdef0123") -> Path:
    """A key folder as a killed build leaves it: its lock, temporary folder, half a model file."""
    folder = pack / key
    (folder / ".tmp-4242").mkdir(parents=True)
    (folder / ".tmp-4242" / "ort.quant.x").write_bytes(b"scratch")
    (folder / LOCK).touch()
    (folder / "squeezenet-seed0.fp32.onnx").write_bytes(b"half a model")
    return folder


def test_what_a_dead_build_left_is_cleared_and_a_live_build_is_left_alone(tmp_path):
    live, dead = half_built(tmp_path, "a" * 20), half_built(tmp_path, "b" * 20)
    finished = half_built(tmp_path, "c" * 20)
    (finished / MARKER).write_text("{}")  # a complete entry that also holds a dead build's folder
    with open(live / LOCK, "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # a build running (in another process: flock conflicts per open)
        assert sorted(remove_dead_builds(tmp_path)) == [dead, finished]
        assert sorted(p.name for p in live.iterdir()) == [".lock", ".tmp-4242", "squeezenet-seed0.fp32.onnx"]
    assert [p.name for p in dead.iterdir()] == [LOCK]
    assert sorted(p.name for p in finished.iterdir()) == [".lock", MARKER, "squeezenet-seed0.fp32.onnx"]
    assert remove_dead_builds(tmp_path) == [live]  # its build has ended


def test_a_half_written_pack_manifest_goes_only_once_nobody_writes_it(tmp_path):
    old, young, held = (tmp_path / f".pack.json.{n}" for n in (11, 12, 13))
    for path in (old, young, held):
        path.write_text('{"models": [')
    for path in (old, held):
        os.utime(path, (time.time() - 120, time.time() - 120))
    with open(held) as writer:
        fcntl.flock(writer, fcntl.LOCK_EX)
        _remove_dead_manifest_temps(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == [young.name, held.name]


@pytest.mark.frameworks
def test_prepare_killed_mid_build_leaves_no_builder_and_no_temporary_file(tmp_path):
    tmpdir, pack = tmp_path / "tmp", tmp_path / "pack"
    tmpdir.mkdir()
    proc = subprocess.Popen(
        [sys.executable, "-m", "edgestats", "prepare", "-f", "onnxruntime", "-m", "squeezenet"]
        + ["--cache-dir", str(pack)],
        env={**os.environ, "TMPDIR": str(tmpdir)},  # so "no file left in /tmp" is checked exactly
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_for(lambda: any(pack.glob("*/.tmp-*")), 120, "the build to start")
        time.sleep(1)  # into torch's import and export
        tree = psutil.Process(proc.pid).children(recursive=True)
        assert tree, "no builder process"
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    time.sleep(1)
    assert [p.pid for p in tree if not gone(p)] == []
    assert list(tmpdir.iterdir()) == []
    [folder] = [p for p in pack.iterdir() if p.is_dir()]
    assert not (folder / MARKER).exists()
    assert remove_dead_builds(pack) == [folder]  # the next prepare's first step
    assert [p.name for p in folder.iterdir()] == [LOCK]


SPOOL_OWNER = """
import json, resource, signal, sys
from pathlib import Path
from edgestats.collectors.ownership import SpoolOwner
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
resource.setrlimit(resource.RLIMIT_FSIZE, (0, 0))  # every write that grows a file fails, as on a full disk
try:
    SpoolOwner(Path(sys.argv[1]))
except OSError as exc:
    print(json.dumps([exc.errno, exc.strerror, exc.filename]))
"""


def test_a_full_disk_at_collects_start_names_the_file_and_leaves_no_lock(tmp_path):
    """The lock is created, then its first write fails: the error (which the kernel gives no file
    name) names the file, as the CLI's one line shows it, and the empty file is removed."""
    spool = tmp_path / ".r.duckdb.spool"
    spool.mkdir()
    done = subprocess.run(
        [sys.executable, "-c", SPOOL_OWNER, str(spool)], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0 and done.stdout, done.stderr
    error = OSError(*json.loads(done.stdout))
    line = str(storage_error(_named_file(error), error, note=""))  # what handle_errors prints
    assert line.startswith("File too large: ") and f"{spool}/.owner-" in line and ".lock.new" in line
    assert list(spool.iterdir()) == []
