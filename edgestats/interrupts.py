"""How the `edgestats` command ends on SIGINT, SIGTERM or SIGHUP: one line, status 128 + signal.

`python -m edgestats` (and the console script) install `on_signal` before importing anything heavy.
The handler raises SystemExit at the next point where Python runs. Inside a DuckDB statement that
point is DuckDB's own check for signals, which stops the statement and raises an error of its own
in place of ours (a RuntimeError "Query interrupted", or duckdb.InterruptException, which a layer
may then word as a query error): so the handler remembers the signal, and the CLI's handle_errors
reports whatever follows it as the interruption, not as the error it looks like (`take_line`). It
also interrupts every open connection (`track`): DuckDB otherwise lets the statement's worker
threads run on until their tasks end, which took up to 30 s for one query.

What a command writes it writes all or nothing, and the one step that makes its work take effect
(an import's COMMIT, the rename that puts a merged DB or an export in place) runs inside
`taking_effect()`: a signal waits until the step has ended, so that the line never says "as it
was" of a target the step changed. Once the step succeeded the work is done, and a signal changes
nothing: the command finishes (its cleanup, its report) and exits 0, as it does once it returned.

Python runs a handler wherever the main thread is, a weakref callback or a __del__ included, and
there it prints the handler's exception as "Exception ignored" and goes on. The exception is an
`Interrupted`: `install` hooks sys.unraisablehook so that one swallowed there is not printed and
its signal is sent again (from a thread), to stop the command at the next point Python runs;
and `taking_effect` refuses to begin once a signal came, whatever swallowed its exception
(a library's `except BaseException`), so that no commit follows a signal the command missed.

A repeated signal within REPEAT_GRACE_S of the first is ignored: the first is unwinding already,
and its cleanup (a temporary file or folder removed) must not be cut short. `collect` installs
its own handlers while it runs (collectors/core/processes.py). This module lies outside edgestats.cli
so that it loads in a moment, before the CLI's imports; the library's commit points use it too.
"""

from __future__ import annotations

import _thread
import signal
import sys
import threading
import time
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

QUIT_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
RESEND_AFTER_S = 0.01  # a swallowed signal's second sending (see above)
REPEAT_GRACE_S = 5.0  # a cleanup takes milliseconds; past this a repeated signal stops the command anyway


@dataclass
class State:
    command: str | None = None  # the command running (the outermost), and its options
    params: dict[str, Any] | None = None
    signum: int | None = None  # the first signal that stopped the command
    at_s: float = 0.0  # when (monotonic)
    depth: int = 0  # commands running (handle_errors may wrap a helper inside a command)
    finished: bool = False  # its work took effect or it returned: a signal now changes nothing
    reported: bool = False  # its one line is printed
    holding: bool = False  # in taking_effect(): a signal waits
    held: int | None = None  # the signal that waits
    resent: bool = False  # the signal was sent again because its exception was swallowed


class Interrupted(SystemExit):
    """What the handler raises: SystemExit with status 128 + signal."""


state = State()  # one per process, updated in place (a command that returned: in cli/common.py)
_connections: weakref.WeakSet = weakref.WeakSet()


def install() -> None:
    """Handle SIGINT, SIGTERM and SIGHUP as described above, from now on (main thread only)."""
    vars(state).update(vars(State()))
    for signum in QUIT_SIGNALS:
        signal.signal(signum, on_signal)
    if sys.unraisablehook is not _on_unraisable:
        global _previous_unraisablehook
        _previous_unraisablehook, sys.unraisablehook = sys.unraisablehook, _on_unraisable


def on_signal(signum: int, _frame: Any) -> None:
    now = time.monotonic()
    resent, state.resent = state.resent, False
    if state.finished or (not resent and state.signum is not None and now - state.at_s < REPEAT_GRACE_S):
        return
    if state.holding:
        state.held = state.held or signum
        return
    if state.signum is None:
        state.signum, state.at_s = signum, now
    for con in list(_connections):
        try:
            con.interrupt()  # sets DuckDB's flag, which its worker threads check between chunks
        except Exception:  # noqa: BLE001  a closed connection: nothing to stop
            pass
    raise Interrupted(128 + state.signum)


_previous_unraisablehook = sys.unraisablehook


def _on_unraisable(unraisable: Any) -> None:
    """An `Interrupted` raised where Python cannot raise it (a weakref callback, a __del__): sent
    again, so that the handler raises it where the command runs; anything else as Python says it."""
    if not isinstance(unraisable.exc_value, Interrupted) or state.signum is None or state.finished:
        _previous_unraisablehook(unraisable)
        return
    state.resent = True
    # _thread, not threading: Thread.start() waits for the thread in Python code, where the signal
    # it sends could land, inside this hook
    _thread.start_new_thread(_send_again, (threading.main_thread().ident, state.signum))


def _send_again(main_thread: int, signum: int) -> None:
    time.sleep(RESEND_AFTER_S)  # this hook has returned by then: the handler runs in the command
    signal.pthread_kill(main_thread, signum)


@contextmanager
def taking_effect(*, final: bool = True) -> Iterator[None]:
    """Around a step no signal may cut (a COMMIT, the rename of a finished file into place): a
    signal arriving during it waits until it ended. `final`: the step makes the command's work
    take effect, and once it succeeded the signal changes nothing (see the module docstring);
    otherwise, and when the step fails, the signal then stops the command as any other."""
    if state.holding or threading.current_thread() is not threading.main_thread():
        yield  # inside another such step, which decides; or off the main thread, where no handler runs
        return
    if state.signum is not None and not state.finished and state.depth > 0:
        raise Interrupted(128 + state.signum)  # a signal came, and its exception was swallowed
    state.holding, state.held = True, None
    try:
        yield
    except BaseException:
        _release(None)
        raise
    _release(final)


def _release(took_effect: bool | None) -> None:
    held, state.holding, state.held = state.held, False, None
    if took_effect and state.depth > 0:  # under the CLI (the Python API installs no handler)
        state.finished = True
    elif held is not None and took_effect is None:  # the step failed: its target is as it was
        state.signum = state.signum or held
        state.at_s = time.monotonic()
    elif held is not None:
        on_signal(held, None)


def ignore_from_now() -> None:
    """Ignore the quit signals (when the command's status is decided and the process only exits)."""
    for signum in QUIT_SIGNALS:
        signal.signal(signum, signal.SIG_IGN)


def track(con: Any) -> Any:
    """Have a signal interrupt the statement `con` (a DuckDB connection) is running; returns it."""
    _connections.add(con)
    return con


def close_connections() -> None:
    """Close every connection `track` was given (an interrupted command's, before it exits)."""
    for con in list(_connections):
        try:
            con.close()
        except Exception:  # noqa: BLE001  closed already, or its statement still unwinding: nothing to keep
            pass


def received() -> int | None:
    """The signal that stopped the command, None when none did."""
    return state.signum


def enter(command: str, params: dict[str, Any]) -> None:
    """A command of the CLI begins (handle_errors): its name and options, for its line."""
    if state.command is None:
        state.command, state.params = command, params
    state.depth += 1


def leave() -> None:
    """A command of the CLI ended by an exception. (One that returned updates `state` itself,
    without a call in between, so that no signal lands between its return and its end.)"""
    state.depth -= 1
    if state.depth <= 0:
        state.finished = True


def take_line() -> str | None:
    """The one line for the signal received, once (None when there was none, or it was printed)."""
    if state.signum is None or state.reported:
        return None
    state.reported = True
    return interrupted_line(state.signum, state.command, state.params or {})


def interrupted_line(signum: int, command: str | None, params: dict[str, Any]) -> str:
    """`edgestats CMD: interrupted by SIGNAL` and what it left as it was (params: its options)."""
    name = signal.Signals(signum).name
    if command is None:
        return f"edgestats: interrupted by {name} before the command began; nothing was changed"
    left = _left_as_it_was(command, params)
    return f"edgestats {command}: interrupted by {name}" + (f"; {left}" if left else "")


# Commands that write all or nothing (one transaction; a temporary file or folder renamed into
# place): the option naming what they write, and what they do.
_WRITE_WHOLE = {"import": ("db", "imported"), "merge": ("out", "merged"), "export": ("parquet", "exported")}
_READ_ONLY = ("sql", "analyze", "compare", "doctor", "verify")  # sql without --write


def _left_as_it_was(command: str, params: dict[str, Any]) -> str:
    """What the command left as it was, for those that write all or nothing or only read ("" for
    the others: collect says it itself, with the runs it stored)."""
    if command == "export" and params.get("append"):
        return (
            f"nothing was appended: {params.get('parquet')} reads as it did (its manifest lists only "
            "complete appends; the next append removes files this one left)"
        )
    if command in _WRITE_WHOLE:
        option, done = _WRITE_WHOLE[command]
        target = params.get(option)
        return f"nothing was {done}: {target} " + (
            "is as it was" if Path(str(target)).exists() else "was not created"
        )
    if command == "sql" and params.get("write"):
        return f"the statement it was running was rolled back; {params.get('db')} keeps those before it"
    if command == "migrate":
        return f"{params.get('db')} is at the last schema version completed (each is its own transaction)"
    if command in _READ_ONLY:
        return "nothing was changed (it only reads the results)"
    return ""
