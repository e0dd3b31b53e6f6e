"""What `edgestats baseline` prints. That it measures (stderr), a transient progress bar of the seconds
measured, then the stored baseline in one line (stdout)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import typer


class BaselineProgress:
    """While the baseline is measured: the line saying so, then the bar (gone when it ends)."""

    def __init__(self, seconds: float) -> None:
        self.seconds, self.progress, self.task = seconds, None, None

    def __enter__(self) -> BaselineProgress:
        return self

    def __exit__(self, *exc: Any) -> None:
        if self.progress is not None:
            self.progress.stop()

    def start(self) -> None:
        from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn

        typer.echo(f"measuring idle power for {self.seconds:g} s: leave this device idle", err=True)
        self.progress = Progress(
            TextColumn("idle"),
            BarColumn(),
            TextColumn("{task.completed:.0f}/{task.total:.0f} s"),
            TimeRemainingColumn(),
            transient=True,
        )
        self.progress.start()
        self.task = self.progress.add_task("idle", total=self.seconds)

    def update(self, seconds_done: float) -> None:
        if self.progress is not None:
            self.progress.update(self.task, completed=min(seconds_done, self.seconds))


def print_baseline(db: Path, row: dict[str, Any]) -> None:
    """The stored baselines row: mean, std, n and how long, the source and its rails, the device."""
    if row["device_name_note"]:
        typer.echo(f"warning: {row['device_name_note']}", err=True)
    std = (
        "-" if row["std_power_w"] is None or math.isnan(row["std_power_w"]) else f"{row['std_power_w']:.4g} W"
    )
    typer.echo(
        f"{db}: idle power {row['mean_power_w']:.4g} W (std {std}, n {row['n']}, {row['seconds']:.1f} s) "
        f"from {row['source']} (rails {', '.join(row['rails'])}), device {row['device']}"
    )
