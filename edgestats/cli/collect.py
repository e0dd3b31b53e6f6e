"""`edgestats collect`: run inference and training workloads on this device into a results DB.

The command's options are collect's declared options (collectors/options.py); it calls
edgestats.workflows.collect.collect with their values and hands its events to the terminal's
listener (reports/terminal/collect.py). What ended it becomes the exit status.
"""

from __future__ import annotations

from typing import Any

import typer

from edgestats.cli.analysis_extra import missing_error, require_analysis_python
from edgestats.cli.common import handle_errors
from edgestats.cli.declared import declared_command
from edgestats.collectors.core.processes import Interrupted
from edgestats.collectors.options import COLLECT_OPTIONS, NOISY_EXIT
from edgestats.reports.terminal.collect import CollectReport
from edgestats.workflows.collect import collect
from edgestats.workflows.collect_events import NoisyRun
from edgestats.workflows.collect_precise import StoppingRuleMissing


def collect_command(values: dict[str, Any]) -> None:
    """Run inference, training or generation workloads, one fresh process per run, and store
    every phase, latency, epoch, batch and token.

    Each run walks pCAMP's phases and stores each inference's latency. A sweep (the file and/or
    repeated flags) is checked before anything runs, shuffled with a recorded seed, and
    resumable: running it again skips runs already stored; what cannot run here is skipped.
    Training (`--kind training --data DIR`) stores each epoch and batch; generation (`--kind
    generation`) each token's latency and the prefill and decode phases (docs/generation.md).
    """
    if values["until_precise"] is not None:
        require_analysis_python("--until-precise")  # the analysis side needs Python 3.11+
    try:
        collect(**values, events=CollectReport())
    except StoppingRuleMissing as exc:
        raise missing_error("--until-precise", exc.name) from None
    except Interrupted as stop:  # said by the report, with the runs stored
        raise typer.Exit(stop.exit_code) from None
    except NoisyRun:
        raise typer.Exit(NOISY_EXIT) from None


def register(app: typer.Typer) -> None:
    app.command("collect")(handle_errors(declared_command(COLLECT_OPTIONS, collect_command)))
