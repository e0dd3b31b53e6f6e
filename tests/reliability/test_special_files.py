"""Paths that are no regular file, and sizes past memory (issue 39): a FIFO, /dev/zero (or a symlink
to it), a directory or a symlink loop given where edgestats reads a file is refused by stat before
any open, in one line saying what the path is (edgestats/store/userpaths.py); a generation batch whose
KV cache cannot fit is refused before any run. Were: reads that grew past 16 GB, opens that blocked
until killed (ignoring SIGTERM), a traceback.

The commands that could grow or block run as processes under a 2 GiB address-space limit
(RLIMIT_AS, `ulimit -v`) and a timeout, so a regression fails here instead of taking the machine.
"""

from __future__ import annotations

import contextlib
import os
import resource
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from builders import make_results_db
from cli_asserts import one_line_error
from typer.testing import CliRunner

from edgestats.cli import app

ADDRESS_SPACE = 2 * 2**30  # a read of /dev/zero fails at this limit; edgestats' start needs < 1 GiB
HUNG_S = 30  # a command refusing a path takes about a second
UNBLOCK_S = 8.0
runner = CliRunner()


def limited(*args: str, env: dict | None = None) -> subprocess.Popen:
    """`edgestats ARGS` started under the address-space limit (both at once: 2 cores)."""

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE, ADDRESS_SPACE))

    return subprocess.Popen(
        [sys.executable, "-m", "edgestats", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        preexec_fn=limit,
        env={**os.environ, **(env or {})},
    )


def one_line(proc: subprocess.Popen) -> str:
    """The command's one `error:` line: exit 1, no traceback, within HUNG_S seconds."""
    try:
        output, _ = proc.communicate(timeout=HUNG_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        output, _ = proc.communicate()
        pytest.fail(f"{proc.args[3:]} still running after {HUNG_S} s: {output[-500:]}")
    lines = output.strip().splitlines()
    assert proc.returncode == 1 and len(lines) == 1 and lines[0].startswith("error: "), output[-2000:]
    return lines[0]


@pytest.fixture
def specials(tmp_path: Path):
    """A FIFO and a symlink to /dev/zero, in their own folder. Should a command open the FIFO after
    all (and block there), a writer opens and closes it after UNBLOCK_S, so the test fails on the
    time taken instead of hanging."""
    folder = tmp_path / "specials"
    folder.mkdir()
    fifo = folder / "fifo"
    os.mkfifo(fifo)
    (folder / "zero").symlink_to("/dev/zero")
    stop = threading.Event()

    def unblock() -> None:
        while not stop.wait(UNBLOCK_S):
            with contextlib.suppress(OSError):  # ENXIO: nobody is reading it
                os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))

    thread = threading.Thread(target=unblock, daemon=True)
    thread.start()
    yield {"fifo": fifo, "zero": folder / "zero"}
    stop.set()
    thread.join()


def quick_one_line(args: list[str], env: dict | None = None) -> str:
    """The one error line of `edgestats ARGS` run in this process, which must not have waited."""
    started = time.monotonic()
    result = runner.invoke(app, args, env=env)
    assert time.monotonic() - started < UNBLOCK_S / 2, "it opened the FIFO and waited for a writer"
    return one_line_error(result)


def test_a_meter_log_or_a_device_file_that_never_ends_is_one_line_under_a_memory_limit(tmp_path, specials):
    """`--power csv:/dev/zero` grew past 16 GB; /dev/zero as the remembered-device file took the
    machine to its OOM killer."""
    db = tmp_path / "db" / "r.duckdb"  # its folder is missing: the collect stops just after naming the device
    base = ("collect", "--db", str(db), "-f", "onnxruntime", "-m", "cnn9", "-n", "1")
    meter = limited(*base, "--power", f"csv:{specials['zero']}")
    config = tmp_path / "config"
    (config / "edgestats").mkdir(parents=True)
    (config / "edgestats" / "device.json").symlink_to(specials["zero"])
    device_file = limited(*base, env={"XDG_CONFIG_HOME": str(config)})
    line = one_line(meter)
    assert f"{specials['zero']} is a character device, not a power meter log (a CSV file)" in line, line
    assert "the folder" in one_line(device_file), "the device file was set aside, not read: collect went on"
    assert not db.parent.exists()


def test_a_fifo_as_meter_log_or_device_file_is_refused_without_waiting(tmp_path, specials, monkeypatch):
    """A FIFO as the remembered-device file blocked collect for over 10 minutes, ignoring SIGTERM."""
    db = tmp_path / "db" / "r.duckdb"
    base = ["collect", "--db", str(db), "-f", "onnxruntime", "-m", "cnn9", "-n", "1"]
    line = quick_one_line([*base, "--power", f"csv:{specials['fifo']}"])
    assert f"{specials['fifo']} is a FIFO, not a power meter log (a CSV file)" in line, line
    (tmp_path / "config" / "edgestats").mkdir(parents=True)
    (tmp_path / "config" / "edgestats" / "device.json").symlink_to(specials["fifo"])
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    assert "the folder" in quick_one_line(base), "the device file was set aside: collect went on"
    from edgestats.collectors.host.device_name import remembered

    note = remembered("some-machine")[1]
    assert note.endswith("device.json is a FIFO, not a device file; give --device-name again"), note


def test_a_fifo_given_as_the_db_to_sql_verify_migrate_or_merge_is_one_line(tmp_path, specials):
    """Each blocked until killed."""
    fifo, good = specials["fifo"], make_results_db(tmp_path / "good.duckdb")
    commands = [
        ["sql", str(fifo), "SELECT 1"],
        ["verify", str(fifo)],
        ["migrate", str(fifo)],
        ["merge", str(tmp_path / "out.duckdb"), str(fifo)],
        ["merge", str(fifo), str(good)],
    ]
    for args in commands:
        line = quick_one_line(args)
        assert f"{fifo} is a FIFO, not a DB file" in line, (args, line)
    assert not (tmp_path / "out.duckdb").exists()


def test_merge_with_a_symlink_loop_as_input_or_output_is_one_line(tmp_path):
    """Was: a traceback from Path.resolve() (RuntimeError: Symlink loop)."""
    good = make_results_db(tmp_path / "good.duckdb")
    loop = tmp_path / "loop.duckdb"
    loop.symlink_to(tmp_path / "other.duckdb")
    (tmp_path / "other.duckdb").symlink_to(loop)
    as_input = one_line_error(runner.invoke(app, ["merge", str(tmp_path / "out.duckdb"), str(loop)]))
    as_output = one_line_error(runner.invoke(app, ["merge", str(loop), str(good)]))
    said = f"error: {loop} is a symlink loop, not a DB file; give"
    assert as_input == f"{said} the path of a .duckdb file to merge"
    assert as_output == f"{said} a .duckdb file to merge into."
    assert not (tmp_path / "out.duckdb").exists()
