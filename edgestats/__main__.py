"""`python -m edgestats` is the `edgestats` command (the console script calls `run` too).

A Ctrl-C, SIGTERM or SIGHUP that arrives while the command is still starting (importing its
libraries takes a moment) ends it quietly with the shell's status 128 + signal, not with a
traceback of the import. `collect` then installs its own handlers, which stop its worker and
store the run (collectors/processes.py).
"""

import signal


def _exit_quietly(signum, _frame):
    raise SystemExit(128 + signum)


def run() -> None:
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, _exit_quietly)
    from edgestats.cli import main

    main()


if __name__ == "__main__":
    run()
