"""The analysis extra, checked where a command needs it. A device-only install (`pip install
edgestats` or a runtime's extra) has no polars, scipy, statsmodels or Altair, and `analyze`,
`compare` and every other analysis path then end with one line naming the extra that adds them
(exit 1 through handle_errors), as `collect --until-precise` does, never with a traceback.

The analysis side is tested on Python 3.11-3.13 (with duckdb 2.x) and no lower: the device side also
installs and runs on 3.10 (with duckdb 1.x), and there an analysis path says, in one line, that it
needs Python 3.11 rather than run untested.

Cheap to import (standard library only): the CLI imports it at start-up.
"""

from __future__ import annotations

import functools
import importlib.util
import platform
import sys
from collections.abc import Callable
from typing import Any

from edgestats.errors import EdgestatsError

INSTALL = "pip install 'edgestats[analyze]'"
# The import names of the analyze extra's packages (pyproject.toml [project.optional-dependencies]
# analyze): checked before the command starts, so that nothing is half done when one is missing.
# vl_convert (vl-convert-python) is needed only to write PNG/SVG images: its absence is caught
# where it is imported.
REQUIRED = ("polars", "scipy", "statsmodels", "altair")
EXTRA_MODULES = frozenset((*REQUIRED, "vl_convert"))
# The lowest Python the analysis side is tested on (make test-lowest); pyproject's requires-python is
# the device side's, lower.
ANALYSIS_PYTHON = (3, 11)


class MissingExtraError(EdgestatsError):
    """A command needs the analysis extra, which is not installed here."""


def missing_error(what: str, module: str) -> MissingExtraError:
    return MissingExtraError(f"{what} needs the analysis extra ({module} is missing): {INSTALL}")


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # a finder that refuses it, or a broken half-installed package
        return False


def require_analysis_python(what: str) -> None:
    """Raise MissingExtraError on a Python below ANALYSIS_PYTHON (the device side's 3.10)."""
    if sys.version_info < ANALYSIS_PYTHON:
        lowest = ".".join(map(str, ANALYSIS_PYTHON))
        raise MissingExtraError(
            f"{what} needs Python >= {lowest} (this is {platform.python_version()}: collect, doctor, import, "
            f"sql and merge run here); analyse the DB on a machine with Python >= {lowest} ({INSTALL})"
        )


def require_analysis_extra(what: str) -> None:
    """Raise MissingExtraError on a Python below ANALYSIS_PYTHON, or naming the first package of the
    extra that is not installed."""
    require_analysis_python(what)
    for module in REQUIRED:
        if not _installed(module):
            raise missing_error(what, module)


def needs_analysis_extra(what: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Decorate a command (beneath @handle_errors): the extra is checked before it runs, and a
    package of the extra that still fails to import while it runs gives the same one line."""

    def decorate(command: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(command)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            require_analysis_extra(what)
            try:
                return command(*args, **kwargs)
            except ModuleNotFoundError as exc:
                root = (exc.name or "").split(".")[0]
                if root not in EXTRA_MODULES:
                    raise
                raise missing_error(what, root) from None

        return wrapper

    return decorate
