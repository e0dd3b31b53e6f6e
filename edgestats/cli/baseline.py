"""`edgestats baseline`: measure this device's idle power and store it for energy attribution."""

from __future__ import annotations

import math
from pathlib import Path

import typer

from edgestats.cli.common import handle_errors
from edgestats.registry import names_text
from edgestats.registry.power import file_specs, spec_help


@handle_errors
def baseline(
    db: Path = typer.Option(..., "--db", help="Results DB to store the baseline in (created if missing)."),
    seconds: float = typer.Option(
        60.0, "--seconds", "-s", help="How long to measure; keep the device idle meanwhile."
    ),
    power: str = typer.Option(
        "auto", "--power", help=f"{spec_help(with_none=False)} (docs/power-sources.md)."
    ),
    hz: float = typer.Option(
        10.0, "--hz", help="Reads per second of a source read live on this device (not a meter's log)."
    ),
    clock_offset: float = typer.Option(
        0.0, "--clock-offset", help="Seconds added to a meter's timestamps to put them on this host's clock."
    ),
    start: str = typer.Option(
        None,
        "--start",
        help=f"With --power {names_text(file_specs())}: use an idle stretch the "
        "meter logged earlier, starting at this time (Unix seconds or "
        "ISO 8601), instead of waiting.",
    ),
) -> None:
    """Measure the idle power of this device (mean, std, n) and store it in the DB.

    Energy figures subtract it: a workload's energy is the area between its power curve and
    this baseline (pCAMP Figure 1), and the baseline's uncertainty widens their intervals.
    Runs use the baseline of the same device and kind of power source measured closest in
    time, so a baseline measured after a sweep still applies to it.
    """
    from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn

    from edgestats.collectors.power.baseline import record_baseline
    from edgestats.collectors.power.meter_csv import parse_timestamp_s

    start_s = None
    if start is not None:
        try:
            start_s = parse_timestamp_s(start)
        except ValueError:
            raise typer.BadParameter(
                f"{start!r} is neither Unix seconds nor ISO 8601", param_hint="--start"
            ) from None
    typer.echo(f"measuring idle power for {seconds:g} s: leave this device idle", err=True)
    with Progress(
        TextColumn("idle"),
        BarColumn(),
        TextColumn("{task.completed:.0f}/{task.total:.0f} s"),
        TimeRemainingColumn(),
        transient=True,
    ) as progress:
        task = progress.add_task("idle", total=seconds)
        row = record_baseline(
            db,
            power,
            seconds,
            hz,
            clock_offset_s=clock_offset,
            start_unix_s=start_s,
            on_progress=lambda s: progress.update(task, completed=min(s, seconds)),
        )
    std = (
        "-" if row["std_power_w"] is None or math.isnan(row["std_power_w"]) else f"{row['std_power_w']:.4g} W"
    )
    typer.echo(
        f"{db}: idle power {row['mean_power_w']:.4g} W (std {std}, n {row['n']}, {row['seconds']:.1f} s) "
        f"from {row['source']} (rails {', '.join(row['rails'])})"
    )


def register(app: typer.Typer) -> None:
    app.command("baseline")(baseline)
