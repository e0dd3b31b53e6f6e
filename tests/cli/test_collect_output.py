"""What `collect` prints, read as a newcomer reads it: one short telemetry line (the paragraph on
why each power source is unusable only with -v), and nothing to run said once, without an empty
progress bar.
Cost: about 5 s of test time in make test's parallel lane (measured from a fresh clone on 2 cores)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from typer.testing import CliRunner

from edgestats.cli import app
from edgestats.reports.terminal.collect import telemetry_line

pytestmark = pytest.mark.frameworks

ARGS = ["collect", "-f", "onnxruntime", "-m", "cnn9", "-n", "3", "--warmup", "1", "--sample-hz", "0"]


def telemetry(output: str) -> str:
    [line] = [line for line in output.splitlines() if line.startswith("telemetry:")]
    return line


def test_one_short_telemetry_line(tmp_path):
    args = ARGS + [
        "--db",
        str(tmp_path / "r.duckdb"),
        "--cache-dir",
        str(tmp_path / "cache"),
        "--power",
        "auto",
    ]
    plain = CliRunner().invoke(app, args, env={"COLUMNS": "80"})
    assert plain.exit_code == 0, plain.output
    line = telemetry(plain.output)
    assert len(line) <= 160 and "/sys/" not in line, line  # here: no source; with RAPL: its rails


def test_verbose_says_why_each_power_source_is_unusable():
    reasons = {
        "rapl": "/sys/class/powercap does not exist: this kernel has no powercap interface",
        "nvml": "NVML cannot be used: NVML Shared Library Not Found",
    }
    telemetry = SimpleNamespace(
        sample_hz=10.0,
        power=None,
        not_used=reasons,
        no_energy_reason=lambda: "no power source found (" + "; ".join(reasons.values()) + ")",
    )
    short = telemetry_line(telemetry)
    assert short == (
        "telemetry: sampler 10 Hz; energy none here (rapl, nvml unusable: -v or edgestats doctor says "
        "why; an external meter: --power csv:PATH)"
    )
    assert "/sys/class/powercap does not exist" in telemetry_line(telemetry, verbose=True)


def test_nothing_to_run_prints_no_progress_bar(tmp_path):
    args = ARGS + [
        "--db",
        str(tmp_path / "r.duckdb"),
        "--cache-dir",
        str(tmp_path / "cache"),
        "--power",
        "none",
    ]
    assert CliRunner().invoke(app, args).exit_code == 0
    again = CliRunner().invoke(app, args, env={"COLUMNS": "80"})
    assert again.exit_code == 0, again.output
    assert "0/0" not in again.output and "━" not in again.output
    assert "1 run planned: 0 to run, 1 already stored" in again.output
    assert "energy off (--power none)" in telemetry(again.output)
    assert again.output.rstrip().endswith("nothing to run; 1 already stored, 0 cannot run here")
