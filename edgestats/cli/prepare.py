"""`edgestats prepare [SWEEP] --cache-dir PACK`: build a sweep's model files into a model pack. The
pack is for a device that has only its runtime (docs/cli/prepare.md; collectors/pack.py).

The command's options are collect's, as prepare takes them (collectors/command_options.py); it
calls edgestats.workflows.prepare.prepare and hands each entry and the counts to
reports/terminal/prepare.py.
"""

from __future__ import annotations

from typing import Any

import typer

from edgestats.cli.common import handle_errors
from edgestats.cli.declared import declared_command
from edgestats.collectors.command_options import PREPARE_OPTIONS
from edgestats.reports.terminal.prepare import PrepareReport, print_summary
from edgestats.workflows.prepare import prepare


def prepare_command(values: dict[str, Any]) -> None:
    """Build a sweep's model files into a pack, for a device that has only its runtime.

    Each zoo model is exported or converted for its runtime (ONNX, TFLite, OpenVINO IR,
    TorchScript, ...) with its SHA-256, and PACK/pack.json lists them. Run it where PyTorch and
    TensorFlow are installed; on the device, `edgestats collect SWEEP --cache-dir PACK` then
    needs only the runtime.

    Exits 1 when a model could not be built (its error is printed)."""
    result = prepare(**values, on_entry=PrepareReport())
    print_summary(result)
    if result.failed:
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    app.command("prepare", no_args_is_help=True)(
        handle_errors(declared_command(PREPARE_OPTIONS, prepare_command))
    )
