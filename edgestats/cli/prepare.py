"""`edgestats prepare [SWEEP] --cache-dir PACK`: build a sweep's model files into a model pack,
for a device that has only its runtime (docs/cli/prepare.md; collectors/pack.py)."""

from __future__ import annotations

from pathlib import Path

import typer

from edgestats.cli.common import handle_errors
from edgestats.formatting import counted

STATUS_STYLE = {
    "built": "green",
    "hit": "green",
    "failed": "red",
    "cannot run here": "yellow",
    "used in place": "yellow",
}


def prepare_command(
    sweep_file: Path | None = typer.Argument(
        None,
        metavar="[SWEEP.toml]",
        help="The sweep the device will collect (its [sweep] table); flags override its keys.",
        show_default=False,
    ),
    cache_dir: Path = typer.Option(
        ...,
        "--cache-dir",
        metavar="PACK",
        help="The pack folder to build into (created if missing); copy it to the device and collect there "
        "with --cache-dir PACK.",
    ),
    framework: list[str] = typer.Option([], "--framework", "-f", help="Framework (repeatable)."),
    model: list[str] = typer.Option([], "--model", "-m", help="Zoo model or model file (repeatable)."),
    runtime: list[str] = typer.Option([], "--runtime", help="Runtime variant (repeatable)."),
    precision: list[str] = typer.Option([], "--precision", help="fp32, fp16 or int8 (repeatable)."),
    accelerator: list[str] = typer.Option([], "--accelerator", help="cpu or cuda (repeatable)."),
    seed: list[int] = typer.Option([], "--seed", help="Model weight seed (repeatable)."),
    kind: str | None = typer.Option(
        None,
        "--kind",
        metavar="KIND",
        help="inference (default) or generation (a generation zoo model: its ONNX graph with the KV cache, "
        "its GGUF for llama.cpp, ...).",
    ),
    option: list[str] = typer.Option(
        [], "--option", metavar="KEY=VALUE", help="Adapter option, as collect's (repeatable)."
    ),
) -> None:
    """Build a sweep's model files into a pack, for a device that has only its runtime.

    Each zoo model is exported or converted for its runtime (ONNX, TFLite, OpenVINO IR,
    TorchScript, ...) with its SHA-256, and PACK/pack.json lists them. Run it where PyTorch and
    TensorFlow are installed; on the device, `edgestats collect SWEEP --cache-dir PACK` then
    needs only the runtime.

    Exits 1 when a model could not be built (its error is printed)."""
    failed = _prepare(
        sweep_file=sweep_file,
        pack=cache_dir,
        flags={
            "framework": framework,
            "model": model,
            "runtime": runtime,
            "precision": precision,
            "accelerator": accelerator,
            "seed": seed,
            "kind": kind,
            "options": option,
        },
    )
    if failed:
        raise typer.Exit(1)


@handle_errors
def _prepare(*, sweep_file: Path | None, pack: Path, flags: dict) -> int:
    from rich.console import Console
    from rich.markup import escape

    from edgestats.collectors.pack import MANIFEST, USED_IN_PLACE, prepare_pack
    from edgestats.collectors.sweep import combine, load_sweep_file
    from edgestats.collectors.sweep_keys import parse_option_flags

    flags = {**flags, "options": parse_option_flags(flags["options"]) or None}
    # runs_here=False: the models are built here for another device, whose CPUs bound its threads
    sweep = combine(load_sweep_file(sweep_file) if sweep_file else None, flags, sweep_file, runs_here=False)
    console = Console(stderr=True, highlight=False)

    def show(entry) -> None:
        label = (
            f"{entry.framework}{'/' + entry.runtime if entry.runtime else ''} {entry.model} {entry.precision}"
        )
        style = STATUS_STYLE.get(entry.status.split(":")[0], "green")
        detail = f": {escape(entry.detail)}" if entry.detail else ""
        console.print(f"[{style}]{escape(entry.status)}[/] {escape(label)}{detail}")

    entries = prepare_pack(sweep, pack, on_entry=show)
    failed = sum(e.status == "failed" for e in entries)
    ready = sum(e.artifact is not None for e in entries)
    in_place = sum(e.status == USED_IN_PLACE for e in entries)
    typer.echo(
        f"{pack}: {counted(ready, 'model files')} ready, {failed} failed, "
        f"{sum(e.status == 'cannot run here' for e in entries)} cannot run here"
        f"{f', {in_place} used in place (copy them to the device yourself)' if in_place else ''}; "
        f"manifest {pack / MANIFEST}. On the device: edgestats collect ... --cache-dir {pack}"
    )
    return failed


def register(app: typer.Typer) -> None:
    app.command("prepare", no_args_is_help=True)(prepare_command)
