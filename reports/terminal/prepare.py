"""What `edgestats prepare` prints: one line per model file as it is built (stderr), then the
pack's counts and what to run on the device (stdout)."""

from __future__ import annotations

from typing import Any

import typer

from edgestats.formatting import counted

STATUS_STYLE = {
    "built": "green",
    "hit": "green",
    "failed": "red",
    "cannot run here": "yellow",
    "used in place": "yellow",
}


class PrepareReport:
    """Each pack entry (collectors/pack.py's PackEntry) as one line, coloured by its status."""

    def __init__(self) -> None:
        from rich.console import Console

        self.console = Console(stderr=True, highlight=False)

    def __call__(self, entry: Any) -> None:
        from rich.markup import escape

        label = (
            f"{entry.framework}{'/' + entry.runtime if entry.runtime else ''} {entry.model} {entry.precision}"
        )
        style = STATUS_STYLE.get(entry.status.split(":")[0], "green")
        detail = f": {escape(entry.detail)}" if entry.detail else ""
        self.console.print(f"[{style}]{escape(entry.status)}[/] {escape(label)}{detail}")


def print_summary(result: Any) -> None:
    """The pack's counts (edgestats.workflows.prepare's PrepareResult) and the device's next step."""
    pack, in_place = result.pack, result.in_place
    typer.echo(
        f"{pack}: {counted(result.ready, 'model files')} ready, {result.failed} failed, "
        f"{result.cannot_run} cannot run here"
        f"{f', {in_place} used in place (copy them to the device yourself)' if in_place else ''}; "
        f"manifest {result.manifest}. On the device: edgestats collect ... --cache-dir {pack}"
    )
