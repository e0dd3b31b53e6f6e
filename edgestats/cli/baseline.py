"""`edgestats baseline`: measure this device's idle power and store it for energy attribution.

The command's options are baseline's (collectors/command_options.py: collect's --db, --power,
--clock-offset and --device-name with its own); it calls edgestats.workflows.baseline.baseline
under reports/terminal/baseline.py's progress bar, which then prints the stored row.
"""

from __future__ import annotations

from typing import Any

import typer

from edgestats.cli.common import handle_errors
from edgestats.cli.declared import declared_command
from edgestats.collectors.command_options import BASELINE_OPTIONS
from edgestats.reports.terminal.baseline import BaselineProgress, print_baseline
from edgestats.workflows.baseline import baseline


def baseline_command(values: dict[str, Any]) -> None:
    """Measure the idle power of this device (mean, std, n) and store it in the DB.

    Energy figures subtract it: a workload's energy is the area between its power curve and
    this baseline (pCAMP Figure 1), and the baseline's uncertainty widens their intervals.
    Runs use the baseline of the same device and kind of power source measured closest in
    time, so a baseline measured after a sweep still applies to it. Name the device as its runs
    are named (--device-name, or the name collect remembered), or the runs find no baseline.
    """
    with BaselineProgress(values["seconds"]) as progress:
        row = baseline(**values, on_start=progress.start, on_progress=progress.update)
    print_baseline(values["db"], row)


def register(app: typer.Typer) -> None:
    app.command("baseline")(handle_errors(declared_command(BASELINE_OPTIONS, baseline_command)))
