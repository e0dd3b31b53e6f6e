"""`python -m edgestats` is the `edgestats` command (the console script calls `run` too).

A Ctrl-C, SIGTERM or SIGHUP ends any command with one line on stderr and the shell's status
128 + signal, never a traceback: while it is still starting (importing its libraries takes a
moment), and during any DuckDB statement, where DuckDB turns the signal into an error of its own
(edgestats/interrupts.py; the command's line, saying what it left as it was, comes from the CLI's
handle_errors). `collect` installs its own handlers while it runs, which stop its worker and store
the run (collectors/core/processes.py).
"""

import os
import sys

import edgestats.interrupts as interrupts


def run() -> None:
    interrupts.install()
    try:
        _command()
    except SystemExit as exc:
        if not interrupts.state.reported:  # no signal stopped it (its line is printed when one did)
            raise
        status = exc.code if isinstance(exc.code, int) else 1
    finally:
        # The status is decided: a signal during the interpreter's shutdown must not replace it
        # (Python restores the default handlers there, and a SIGTERM would then kill the process).
        interrupts.ignore_from_now()
    # Interrupted: the command has said its one line and left its files as they were. It ends here,
    # without the interpreter's shutdown, where duckdb's bindings (nanobind) once printed 43 lines
    # of "leaked instances" after that line: a connection the interrupted statement's frames still
    # held. Its connections are closed first; nothing else is pending (no atexit work is ours).
    interrupts.close_connections()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(status)


def _command() -> None:
    try:
        from edgestats.cli import main

        main()
    except BaseException:
        # A signal before the command began (while importing, parsing options), or one its wrapper
        # could not report (handle_errors): its line, unless the command printed one. A command
        # whose work took effect keeps its status (click's SystemExit(0) passes here too).
        line = None if interrupts.state.finished else interrupts.take_line()
        if line is None:
            raise
        print(line, file=sys.stderr)
        raise SystemExit(128 + interrupts.received()) from None


if __name__ == "__main__":
    run()
