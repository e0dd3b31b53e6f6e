"""SIGINT and SIGTERM while `import`, `merge`, `export` and `sql` run their DuckDB statements, for
real: `python -m edgestats` in a child process, the signal sent at a seeded random moment of the
command's work (timed from the files it holds open: /proc/PID/fd). Each ends with one line and
status 128 + signal, no traceback, and what it was writing as it was (import: one transaction;
merge and export: a temporary sibling renamed into place; sql: read-only); one the signal reached
after its work took effect exits 0 with its work whole (edgestats/interrupts.py). Half the trials
write over an existing target, half a new one; some send the signal twice, 50 ms apart: the
second must not cut the first one's cleanup short (no temporary file is left). Each ends within
STOP_S of the signal: the handler interrupts the running statement (edgestats/interrupts.py).

The moments are drawn over the first 60 % of the command's work as two unsignalled runs of it took
(the shorter; the commit comes near the end): on a machine whose load changes, a trial may still
run faster than those and finish first, so two thirds of the trials, not all, must be interrupted.
Slow lane: 32 processes (8 unsignalled, then 24 trials, three at a time): one to two minutes of
wall time and about 45 s of CPU on 2 busy cores.
"""

from __future__ import annotations

import hashlib
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import duckdb
import pytest
from builders import make_results_db

pytestmark = pytest.mark.slow

SEED = 30
COMMANDS = ("import", "merge", "export", "sql")
TRIALS_PER_PAIR = 3  # per command and signal: 4 x 2 x 3 = 24 trials
CSV_ROWS = 8_000  # about a second of import's CPU
EXTRA_LATENCIES = 50_000  # per run of the DBs merged and exported (600,000 rows each): about half a second
SQL = "SELECT count(*) FROM range(200000000) t(i) WHERE i % 7 = 3"  # about a second of DuckDB
STOP_S = 10.0  # from the signal to the exit (1.6 s at most here; DuckDB alone let a query run 30 s on)
POLL_S = 0.005
TIMEOUT_S = 300.0


@dataclass
class Trial:
    command: str
    signum: int
    index: int
    folder: Path
    twice: bool = False

    @property
    def existing(self) -> bool:
        return self.index % 2 == 0  # writes over an existing target (else a new one)


@dataclass
class Work:
    """How to run a trial's command, and which files it holds open while it works: `start` from
    when its work began, `end` until its DuckDB work ended (the commit is near that end)."""

    args: list[str]
    start: str
    end: str
    target: Path


def plan(trial: Trial, inputs: Path) -> Work:
    """A folder of the trial's own, and its command."""
    folder = trial.folder
    folder.mkdir()
    for name in ("a.duckdb", "b.duckdb"):
        shutil.copyfile(inputs / name, folder / name)
    os.link(inputs / "big.csv", folder / "big.csv")  # only read
    out = "a.duckdb" if trial.existing else "new.duckdb"
    if trial.command == "import":
        return Work(["import", out, "big.csv", "--kind", "inference"], "big.csv", out, folder / out)
    if trial.command == "merge":
        merged = ["b.duckdb"] if trial.existing else ["a.duckdb", "b.duckdb"]
        return Work(["merge", out, *merged], f".{out}.merging-", f".{out}.merging-", folder / out)
    if trial.command == "export":
        if trial.existing:
            shutil.copytree(inputs / "earlier", folder / "lake")
        overwrite = ["--overwrite"] if trial.existing else []
        return Work(
            ["export", "a.duckdb", "--parquet", "lake", *overwrite], "a.duckdb", "a.duckdb", folder / "lake"
        )
    return Work(["sql", "a.duckdb", SQL, "--format", "csv"], "a.duckdb", "a.duckdb", folder / "a.duckdb")


def start(args: list[str], cwd: Path) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "edgestats", *args],
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def open_files(pid: int) -> list[str]:
    """The names of the files process `pid` holds open now."""
    names = []
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return names
    for fd in fds:
        try:
            names.append(os.path.basename(os.readlink(f"/proc/{pid}/fd/{fd}")))
        except OSError:
            continue
    return names


def catches(pid: int, signum: int) -> bool:
    """Whether process `pid` has a handler for `signum` (SigCgt in /proc/PID/status)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    caught = re.search(r"^SigCgt:\s*([0-9a-f]+)$", status, re.M)
    return bool(caught) and bool(int(caught.group(1), 16) >> (signum - 1) & 1)


def holds(pid: int, prefix: str) -> bool:
    return any(name.startswith(prefix) for name in open_files(pid))


def wait_until_open(proc: subprocess.Popen, prefix: str) -> None:
    deadline = time.monotonic() + TIMEOUT_S
    while proc.poll() is None and time.monotonic() < deadline and not holds(proc.pid, prefix):
        time.sleep(POLL_S)


def timed_work(trial: Trial, inputs: Path) -> float:
    """An unsignalled run: seconds from when its work began to when its DuckDB work ended."""
    work = plan(trial, inputs)
    proc = start(work.args, trial.folder)
    began = ended = None
    while proc.poll() is None:
        now, names = time.monotonic(), open_files(proc.pid)
        if began is None and any(n.startswith(work.start) for n in names):
            began = now
        if began is not None and any(n.startswith(work.end) for n in names):
            ended = now
        time.sleep(POLL_S)
    _, err = proc.communicate(timeout=TIMEOUT_S)
    assert proc.returncode == 0 and began is not None and ended is not None, err
    return ended - began


def db_contents(db: Path) -> dict[str, tuple]:
    """Per table: its rows and a hash of them all (the DB's data, whatever its bytes)."""
    con = duckdb.connect(str(db), read_only=True)
    try:
        tables = [r[0] for r in con.execute("SELECT table_name FROM duckdb_tables() ORDER BY 1").fetchall()]
        return {t: con.execute(f'SELECT count(*), sum(hash(x)) FROM "{t}" x').fetchone() for t in tables}
    finally:
        con.close()


def state_of(target: Path) -> object:
    """What a target holds: a DB's data, a folder's files with their hashes, None when absent."""
    if not target.exists():
        return None
    if target.is_dir():
        return {
            str(p.relative_to(target)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(target.rglob("*"))
            if p.is_file()
        }
    return db_contents(target)


def whole(command: str, out: str, target: Path) -> object:
    """What a finished command leaves, comparable between two runs of it (each gives new devices
    and times): sql's output, a DB's row counts, an export's file names."""
    if command == "sql":
        return out
    state = state_of(target)
    if state is None or command == "export":
        return state and sorted(state)
    return {table: rows for table, (rows, _) in state.items()}


def leftovers(folder: Path) -> list[str]:
    """Temporary files or folders a command left (merge's .OUT.merging-*, export's .DIR.*)."""
    return sorted(p.name for p in folder.iterdir() if p.name.startswith(".") or p.name.endswith(".wal"))


def run_trial(trial: Trial, inputs: Path, work_s: float, delay: random.Random) -> dict:
    work = plan(trial, inputs)
    before = state_of(work.target)
    delay_s = delay.uniform(0.0, 0.6 * work_s)
    proc = start(work.args, trial.folder)
    wait_until_open(proc, work.start)
    time.sleep(delay_s)
    proc.send_signal(trial.signum)
    if trial.twice:
        time.sleep(0.05)
        proc.send_signal(trial.signum)
    signalled = time.monotonic()
    out, err = proc.communicate(timeout=TIMEOUT_S)
    return {
        "stopped_s": time.monotonic() - signalled,
        "rc": proc.returncode,
        "out": out,
        "err": err,
        "before": before,
        "after": state_of(work.target),
        "whole": whole(trial.command, out, work.target),
        "leftovers": leftovers(trial.folder),
        "delay_s": delay_s,
    }


def check_trial(trial: Trial, result: dict, finished: object) -> str:
    """Assert the trial's outcome: 'interrupted' (in the command), 'before it began' or 'finished'."""
    rc, err = result["rc"], result["err"]
    name = signal.Signals(trial.signum).name
    label = f"{trial.command} {name} #{trial.index} after {result['delay_s']:.2f} s"
    assert "Traceback" not in err + result["out"], f"{label}: {err}"
    assert result["leftovers"] == [], f"{label}: left {result['leftovers']}"
    lines = [line for line in err.splitlines() if not line.startswith("merging ")]  # merge's progress
    if rc == 0:  # the signal came after its work took effect: the work is whole
        assert lines == [] and result["whole"] == finished, f"{label}: finished, but not whole: {err}"
        return "finished"
    assert rc == 128 + trial.signum, f"{label}: exit {rc}: {err}"
    assert result["stopped_s"] < STOP_S, f"{label}: ended {result['stopped_s']:.1f} s after the signal"
    assert len(lines) == 1, f"{label}: {err}"
    assert re.fullmatch(rf"edgestats( {trial.command})?: interrupted by {name}[ ;].+", lines[0]), (
        f"{label}: {err}"
    )
    assert result["after"] == result["before"], f"{label}: {lines[0]}, but its target changed"
    return "interrupted" if lines[0].startswith(f"edgestats {trial.command}:") else "before it began"


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("signal-inputs")
    make_results_db(folder / "a.duckdb", n_runs=12)
    make_results_db(folder / "b.duckdb", n_runs=12, device_name="pi", seed0=100)
    for db in ("a.duckdb", "b.duckdb"):  # DuckDB work that merge and export take a while over
        con = duckdb.connect(str(folder / db))
        con.execute(
            "INSERT INTO latencies (run_id, iteration, warmup, latency_ns) SELECT run_id, 1000 + i::INTEGER, "
            "false, 1000000 + hash(i) % 100000 FROM (SELECT DISTINCT run_id FROM latencies), "
            f"range({EXTRA_LATENCIES}) t(i)"
        )
        con.close()
    with (folder / "big.csv").open("w") as f:
        f.write("device,framework,model,batch_size,latency_ms\n")
        f.writelines(
            f"dev{i % 7},pytorch,model{i % 13},{1 + i % 64},{1 + i * 0.001:.3f}\n" for i in range(CSV_ROWS)
        )
    earlier = subprocess.run(  # an earlier export, for export --overwrite to replace
        [sys.executable, "-m", "edgestats", "export", "a.duckdb", "--parquet", "earlier"],
        cwd=folder,
        capture_output=True,
        text=True,
    )
    assert earlier.returncode == 0, earlier.stderr
    return folder


def test_signals_during_queries_end_in_one_line_and_leave_data_as_before(
    inputs: Path, tmp_path: Path
) -> None:
    rng = random.Random(SEED)
    trials = [
        Trial(command, signum, i, tmp_path / f"{command}-{signum}-{i}", twice=i == 2)
        for command in COMMANDS
        for signum in (signal.SIGINT, signal.SIGTERM)
        for i in range(TRIALS_PER_PAIR)
    ]
    delays = [random.Random(rng.random()) for _ in trials]
    timed = [Trial(command, 0, i, tmp_path / f"{command}-timed-{i}") for command in COMMANDS for i in (0, 1)]
    with ThreadPoolExecutor(max_workers=3) as pool:
        work_s = {command: float("inf") for command in COMMANDS}
        for trial, seconds in zip(timed, pool.map(lambda t: timed_work(t, inputs), timed)):
            work_s[trial.command] = min(work_s[trial.command], seconds)
        results = list(pool.map(lambda t, d: run_trial(t, inputs, work_s[t.command], d), trials, delays))
    outcomes = []
    for trial, result in zip(trials, results):
        finished = None
        if result["rc"] == 0:  # what an undisturbed run leaves, to compare with
            reference = Trial(trial.command, 0, trial.index, tmp_path / f"{trial.folder.name}-reference")
            out, target = run_undisturbed(reference, inputs)
            finished = whole(trial.command, out, target)
        outcomes.append(check_trial(trial, result, finished))
    assert len(trials) >= 20
    interrupted = outcomes.count("interrupted")
    assert interrupted >= 2 / 3 * len(trials), (
        f"{interrupted} of {len(trials)} interrupted in the command (work: {work_s}): {outcomes}"
    )


def run_undisturbed(trial: Trial, inputs: Path) -> tuple[str, Path]:
    work = plan(trial, inputs)
    done = subprocess.run(
        [sys.executable, "-m", "edgestats", *work.args], cwd=trial.folder, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    return done.stdout, work.target


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_while_the_command_starts_is_one_line(inputs: Path, tmp_path: Path, signum: int) -> None:
    """While Python imports the CLI's libraries (a second or so): no traceback of the import."""
    shutil.copyfile(inputs / "a.duckdb", tmp_path / "a.duckdb")
    before = state_of(tmp_path / "a.duckdb")
    proc = start(["merge", "a.duckdb", str(inputs / "b.duckdb")], tmp_path)
    while proc.poll() is None and not catches(proc.pid, signal.SIGTERM):  # edgestats' handlers are in
        time.sleep(0.001)
    proc.send_signal(signum)
    out, err = proc.communicate(timeout=TIMEOUT_S)
    name = signal.Signals(signum).name
    assert proc.returncode == 128 + signum, err
    assert err == f"edgestats: interrupted by {name} before the command began; nothing was changed\n"
    assert out == "" and state_of(tmp_path / "a.duckdb") == before and leftovers(tmp_path) == []
