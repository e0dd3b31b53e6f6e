"""The child processes of `edgestats collect` (model preparation, each run's worker), and how a
signal to collect stops them.

Every child leads its own session, so one killpg stops its whole tree (a framework's helper
processes, a DataLoader's workers), and a Ctrl-C in the terminal reaches collect, not the child.

Signals. Inside `signals_stop_collect()`, the first SIGINT, SIGTERM or SIGHUP is remembered; if
collect is waiting on a child at that moment it becomes an `Interrupted` exception there (the
wait kills the child's tree and returns), otherwise it is raised at the next `raise_if_stopped()`,
which the orchestrator calls between steps: a run being written to the DB is finished first.
A second signal kills every child tree still running and exits at once (status 128 + signal).
"""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
POLL_S = 0.02  # the wait loop's period: the harness's per-run overhead and its reaction time


class Interrupted(Exception):
    """A signal asked collect to stop."""

    def __init__(self, signum: int):
        self.signum = signum
        super().__init__(f"interrupted by {self.name}")

    @property
    def name(self) -> str:
        return signal.Signals(self.signum).name

    @property
    def exit_code(self) -> int:
        return 128 + self.signum  # the shell's convention: 130 for SIGINT, 143 for SIGTERM


@dataclass
class _State:
    pending: int | None = None  # the first stop signal, until it is raised
    raised: bool = False
    waiting: bool = False  # in a wait loop: raise at once


_state = _State()
_children: set[int] = set()  # the process-group leaders running now


def _on_signal(signum: int, _frame) -> None:
    if _state.pending is not None or _state.raised:  # the second signal: stop everything now
        kill_all_children()
        os._exit(128 + signum)
    _state.pending = signum
    if _state.waiting:
        raise_if_stopped()


def raise_if_stopped() -> None:
    if _state.pending is not None and not _state.raised:
        _state.raised = True
        raise Interrupted(_state.pending)


@contextmanager
def signals_stop_collect() -> Iterator[None]:
    """Turn SIGINT/SIGTERM/SIGHUP into `Interrupted` for the duration (main thread only)."""
    previous = {s: signal.signal(s, _on_signal) for s in STOP_SIGNALS}
    _state.pending, _state.raised, _state.waiting = None, False, False
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)


PR_SET_PDEATHSIG = 1  # linux/prctl.h


def die_with_parent() -> Callable[[], None] | None:
    """A `preexec_fn` that has the kernel SIGKILL the child when this process dies, however it
    dies (SIGKILL and the OOM killer included): prctl(PR_SET_PDEATHSIG). Linux only; elsewhere
    None, and a child outlives its parent until it next writes to it (a broken pipe).

    The signal fires when the *thread* that started the child ends, not the process: start such
    children from the main thread, or from a thread that outlives them. collect's workers and
    preparers get it too (spawn_group): a worker left running after its collect was SIGKILLed
    loaded the CPU while other runs measured; what it had spooled is still stored by the next
    collect (collectors/recovery.py).
    """
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl  # looked up here: the child only calls it
    except (OSError, AttributeError):
        return None
    parent = os.getpid()

    def preexec() -> None:
        prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if os.getppid() != parent:  # the parent died between fork and prctl: nothing would signal
            os.kill(os.getpid(), signal.SIGKILL)

    return preexec


def module_command(python: str, module: str) -> list[str]:
    """`python -P -m MODULE`: -P keeps the current directory off sys.path, so a checkout's edgestats/
    folder there never shadows the installed package (whose collectors/ is mapped in, not beside it).
    -P is Python 3.11's; on 3.10 the child drops sys.path[0] (the current directory) itself."""
    if sys.version_info >= (3, 11):
        return [python, "-P", "-m", module]
    run = f"runpy.run_module({module!r}, run_name='__main__', alter_sys=True)"
    return [python, "-c", f"import runpy, sys; del sys.path[0]; {run}"]


def spawn_group(cmd: list[str], **popen_kwargs) -> subprocess.Popen:
    """Start `cmd` as the leader of a new session, registered so a second signal can kill it, and
    killed by the kernel if this process dies first, however it dies (`die_with_parent`; Linux).
    Call it from the main thread: the signal fires when the calling thread ends."""
    proc = subprocess.Popen(cmd, start_new_session=True, preexec_fn=die_with_parent(), **popen_kwargs)
    _children.add(proc.pid)
    return proc


@dataclass(frozen=True)
class GroupExit:
    returncode: int | None
    timed_out: bool = False
    interrupted: Interrupted | None = None


def wait_group(proc: subprocess.Popen, timeout_s: float | None) -> GroupExit:
    """Wait for a spawned child; at the deadline or on a stop signal, kill its whole tree."""
    deadline = time.monotonic() + timeout_s if timeout_s else None
    _state.waiting = True
    try:
        raise_if_stopped()
        while True:
            try:
                return GroupExit(proc.wait(timeout=POLL_S))
            except subprocess.TimeoutExpired:
                if deadline is not None and time.monotonic() > deadline:
                    kill_group(proc)
                    return GroupExit(proc.returncode, timed_out=True)
    except Interrupted as stop:
        kill_group(proc)
        return GroupExit(proc.returncode, interrupted=stop)
    finally:
        _state.waiting = False
        _children.discard(proc.pid)


def kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)  # the child leads its own session
    except ProcessLookupError:
        pass
    proc.wait()


def kill_all_children() -> None:
    for pid in list(_children):
        try:
            os.killpg(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


def kill_orphan_group(pid: int, marker: bytes) -> None:
    """Kill the tree of a process that is not our child (a dead collect's worker), and wait
    until it is gone."""
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        return
    for _ in range(50):
        if not alive(pid, marker):
            return
        time.sleep(0.1)


def alive(pid: int | None, marker: bytes) -> bool:
    """Whether `pid` is running and is still the process we mean (its command line holds
    `marker`): a zombie or a reused pid counts as gone."""
    if not pid:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return True
    return marker in cmdline
