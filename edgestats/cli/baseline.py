"""`edgestats baseline`: measure this device's idle power and store it for energy attribution."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Annotated

import typer

from edgestats.cli.common import handle_errors
from edgestats.registry import names_text
from edgestats.registry.power import file_specs, spec_help

DbOpt = Annotated[
    Path, typer.Option("--db", help="Results DB to store the baseline in (created if missing).")
]
SecondsOpt = Annotated[
    float, typer.Option("--seconds", "-s", help="How long to measure; keep the device idle meanwhile.")
]
PowerOpt = Annotated[
    str, typer.Option("--power", help=f"{spec_help(with_none=False)} (docs/power-sources.md).")
]
HzOpt = Annotated[
    float,
    typer.Option("--hz", help="Reads per second of a source read live on this device (not a meter's log)."),
]
ClockOffsetOpt = Annotated[
    float,
    typer.Option(
        "--clock-offset", help="Seconds added to a meter's timestamps to put them on this host's clock."
    ),
]
StartOpt = Annotated[
    str | None,
    typer.Option(
        "--start",
        help=f"With --power {names_text(file_specs())}: use an idle stretch the "
        "meter logged earlier, starting at this time (Unix seconds or "
        "ISO 8601), instead of waiting.",
    ),
]
DeviceNameOpt = Annotated[
    str | None,
    typer.Option(
        "--device-name",
        metavar="NAME",
        help="The device's name, as collect --device-name gives it: the baseline is stored under it "
        "and the name is remembered for this machine. Without it: the remembered name, else the host name.",
    ),
]


@handle_errors
def baseline(
    db: DbOpt,
    seconds: SecondsOpt = 60.0,
    power: PowerOpt = "auto",
    hz: HzOpt = 10.0,
    clock_offset: ClockOffsetOpt = 0.0,
    start: StartOpt = None,
    device_name: DeviceNameOpt = None,
) -> None:
    """Measure the idle power of this device (mean, std, n) and store it in the DB.

    Energy figures subtract it: a workload's energy is the area between its power curve and
    this baseline (pCAMP Figure 1), and the baseline's uncertainty widens their intervals.
    Runs use the baseline of the same device and kind of power source measured closest in
    time, so a baseline measured after a sweep still applies to it. Name the device as its runs
    are named (--device-name, or the name collect remembered), or the runs find no baseline.
    """
    start_s = None if start is None else start_time_s(start)
    typer.echo(f"measuring idle power for {seconds:g} s: leave this device idle", err=True)
    row = measure_with_progress(
        db, power, seconds, hz, clock_offset_s=clock_offset, start_unix_s=start_s, device_name=device_name
    )
    if row["device_name_note"]:
        typer.echo(f"warning: {row['device_name_note']}", err=True)
    std = (
        "-" if row["std_power_w"] is None or math.isnan(row["std_power_w"]) else f"{row['std_power_w']:.4g} W"
    )
    typer.echo(
        f"{db}: idle power {row['mean_power_w']:.4g} W (std {std}, n {row['n']}, {row['seconds']:.1f} s) "
        f"from {row['source']} (rails {', '.join(row['rails'])}), device {row['device']}"
    )


def start_time_s(start: str) -> float:
    """--start as Unix seconds (Unix seconds or ISO 8601, as a meter's log writes them)."""
    from edgestats.collectors.power.meter_csv import parse_timestamp_s

    try:
        return parse_timestamp_s(start)
    except ValueError:
        raise typer.BadParameter(
            f"{start!r} is neither Unix seconds nor ISO 8601", param_hint="--start"
        ) from None


def measure_with_progress(
    db: Path,
    power: str,
    seconds: float,
    hz: float,
    *,
    clock_offset_s: float,
    start_unix_s: float | None,
    device_name: str | None,
) -> dict:
    """record_baseline under a transient progress bar of the seconds measured; its stored row."""
    from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn

    from edgestats.collectors.power.baseline import record_baseline

    with Progress(
        TextColumn("idle"),
        BarColumn(),
        TextColumn("{task.completed:.0f}/{task.total:.0f} s"),
        TimeRemainingColumn(),
        transient=True,
    ) as progress:
        task = progress.add_task("idle", total=seconds)
        return record_baseline(
            db,
            power,
            seconds,
            hz,
            clock_offset_s=clock_offset_s,
            start_unix_s=start_unix_s,
            device_name=device_name,
            on_progress=lambda s: progress.update(task, completed=min(s, seconds)),
        )


def register(app: typer.Typer) -> None:
    app.command("baseline")(baseline)
