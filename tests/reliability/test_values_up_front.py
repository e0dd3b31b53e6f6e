"""Values a run could not use are refused before anything is built or run (issue 30): a sweep's
planned size against its cap, seeds, cooldowns, threads against this machine's CPUs, timeouts,
inference counts, adapter options and names, each one line through the real `collect` command
(exit 1, no traceback, no DB or spool left); and collect and import refuse a configuration
column outside the same range (edgestats/contracts.py CONFIG_RANGES)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from cli_asserts import one_line_error
from import_builders import write
from typer.testing import CliRunner

from edgestats.cli import app
from edgestats.collectors.core.sweep_limits import MAX_RUNS_PER_SWEEP, THREADS_PER_CPU, usable_cpus
from edgestats.collectors.sweep import SweepError, build_sweep, combine
from edgestats.contracts import CONFIG_RANGES

runner = CliRunner()


def collect_refused(tmp_path: Path, *args: str) -> str:
    """The one error line of `collect` with `args`; it created nothing in tmp_path."""
    db = tmp_path / "r.duckdb"
    line = one_line_error(runner.invoke(app, ["collect", "--db", str(db), "-f", "onnxruntime", *args]))
    assert sorted(p.name for p in tmp_path.iterdir()) == [], "nothing may be created"
    return line


def test_a_billion_repeats_is_refused_in_seconds_with_the_arithmetic(tmp_path):
    """Was: the run list grew until the kernel killed collect at 24 GB (exit 137, no message)."""
    started = time.monotonic()
    line = collect_refused(
        tmp_path, "-f", "tflite", "-m", "cnn9", "-m", "squeezenet", "--repeat", "1000000000"
    )
    assert time.monotonic() - started < 5
    assert line == (
        "error: 2 frameworks × 2 models × 1,000,000,000 repeats = 4,000,000,000 runs; a sweep runs at most "
        "100,000 (docs/cli/collect.md, Limits): lower repeat or an axis, or split the sweep into several "
        "that collect into the same DB"
    )


def test_the_cap_counts_every_axis_and_names_a_sweep_file(tmp_path):
    sweep = tmp_path / "in" / "s.toml"
    sweep.parent.mkdir()
    sweep.write_text(
        '[sweep]\nframework = "onnxruntime"\nmodel = "cnn9"\nbatch_size = [1, 2, 4, 8]\n'
        "seed = [0, 1, 2, 3, 4]\nrepeat = 5001\n"
    )
    db = tmp_path / "r.duckdb"
    line = one_line_error(runner.invoke(app, ["collect", str(sweep), "--db", str(db)]))
    assert f"{sweep}: sweep.4 batch sizes × 5 seeds × 5,001 repeats = 100,020 runs" in line
    assert not db.exists()
    at_cap = {
        "framework": "onnxruntime",
        "model": "cnn9",
        "batch_size": [1, 2, 4, 8],
        "seed": [0, 1, 2, 3, 4],
    }
    assert build_sweep({**at_cap, "repeat": MAX_RUNS_PER_SWEEP // 20}).settings["repeat"] == 5000


@pytest.mark.parametrize(
    "args, expected",
    [
        (["--seed", "-1"], "seed: -1 must be at least 0 (range 0 to 4,294,967,295: numpy's seeding"),
        (["--seed", "4294967296"], "seed: 4294967296 must be at most 4,294,967,295"),
        (["--cooldown", "1e12"], "cooldown: 1000000000000.0 must be at most 86,400 (range 0 to 86,400 s"),
        (["--cooldown", "nan"], "cooldown: nan is not a finite number (range 0 to 86,400 s"),
        (["--noise-wait", "1e9"], "noise_wait: 1000000000.0 must be at most 86,400"),
        (["--timeout", "0"], "timeout: 0.0 must be at least 0.001 (range 0.001 s or more)"),
        (["--timeout", "inf"], "timeout: inf is not a finite number"),
        (["-n", "2000000"], "iterations: 2000000 must be at most 1,000,000 (range 1 to 1,000,000"),
        (["--warmup", "2000000"], "warmup: 2000000 must be at most 1,000,000"),
        (["--warmup", "auto:2000000"], "warmup: 'auto:2000000': auto's limit must be at most 1,000,000"),
        (["--memory-limit-mb", "1e300"], "memory_limit_mb: 1e+300 must be at most 8,796,093,022,207"),
        (["-o", "added_delay_ms=-1"], "options.added_delay_ms: -1 must be from 0 to 60000 ms"),
        (["-o", "xnnpack=3"], "options.xnnpack: expected true or false, got 3"),
        (["-o", "architecture=vgg99"], "options.architecture: 'vgg99' is not a zoo model"),
        (["--runtime", "ort\x1b[2J"], r"runtime: 'ort\x1b[2J' contains a control character (U+001B)"),
        (["-m", "cnn9\n"], r"model: 'cnn9\n' contains a control character (U+000A)"),
    ],
)
def test_a_value_a_run_could_not_use_is_one_line_before_anything_runs(tmp_path, args, expected):
    """Was: --seed -1 stored every run as error, --cooldown 1e12 ended in an OverflowError
    traceback after the first run."""
    model = [] if "-m" in args else ["-m", "cnn9"]
    assert expected in collect_refused(tmp_path, *model, *args)


@pytest.mark.parametrize("flag", ["--threads", "--num-workers", "-o"])
def test_threads_are_bounded_by_this_machines_cpus(tmp_path, flag):
    """Was: --threads 100000 hung until the timeout. At most THREADS_PER_CPU per usable CPU."""
    cap = THREADS_PER_CPU * usable_cpus()
    value = "interop_threads=100000" if flag == "-o" else "100000"
    kind = ["--kind", "training"] if flag == "--num-workers" else []
    line = collect_refused(tmp_path, "-m", "cnn9", flag, value, *kind)
    assert f"100000 must be at most {cap} (range {0 if flag == '--num-workers' else 1} to {cap}: " in line
    assert f"{THREADS_PER_CPU} per CPU, {usable_cpus()} CPU" in line
    assert build_sweep({"framework": "onnxruntime", "model": "cnn9", "threads": [1, cap]}).axes[
        "threads"
    ] == [1, cap]
    # prepare builds for another device: its CPUs, not these, bound the sweep's threads
    other = combine(
        None, {"framework": ["onnxruntime"], "model": ["cnn9"], "threads": [100000]}, None, runs_here=False
    )
    assert other.axes["threads"] == [100000]


@pytest.mark.parametrize("column", sorted(CONFIG_RANGES))
def test_collect_and_import_refuse_the_same_column_below_its_range(tmp_path, column):
    """One table of ranges: a value just below a column's lowest is refused by both ways in."""
    low = CONFIG_RANGES[column][0]
    below = low - 1 if isinstance(low, int) else low / 10
    training = column in ("epochs", "learning_rate", "num_workers")
    values = {"framework": "pytorch", "model": "cnn9", column: below}
    with pytest.raises(SweepError, match=column):
        build_sweep({**values, **({"kind": "training", "data": "."} if training else {})})
    measure = "training_time_s" if training else "latency_ms"
    src = write(tmp_path / "t.csv", f"device,framework,{column},{measure}\npi,pytorch,{below!r},3\n")
    db = tmp_path / "r.duckdb"
    kind = "training" if training else "inference"
    line = one_line_error(runner.invoke(app, ["import", str(db), str(src), "--kind", kind]))
    assert f"column '{column}': '{below!r}'" in line and not db.exists()
