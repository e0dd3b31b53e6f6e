"""`edgestats collect`'s argument and options, declared once as `Annotated` aliases.

Separate from cli/collect.py because the declarations (flag names, metavars, help) are most of
the command's text and none of its logic: the command's signature names each option by its alias,
and its --help is built from these declarations alone.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from edgestats.cli.collect_progress import NOISY_EXIT
from edgestats.collectors.core.runconfig import WARMUP_AUTO_LIMIT, parse_warmup
from edgestats.collectors.core.sweep_limits import (
    DAY_S,
    MAX_INFERENCES,
    MAX_RUNS_PER_SWEEP,
    SEED_MAX,
    THREADS_PER_CPU,
)
from edgestats.collectors.telemetry.sentinel import DEFAULT_WAIT_S, NoiseThresholds
from edgestats.registry import power as power_sources
from edgestats.registry import runtimes

SweepFileArg = Annotated[
    Path | None,
    typer.Argument(help="A TOML sweep file with a [sweep] table (lists are axes, scalars fixed)."),
]
DbOpt = Annotated[
    Path, typer.Option("--db", metavar="PATH", help="Results DB to write (created if missing).")
]
KindOpt = Annotated[
    str | None,
    typer.Option(
        "--kind",
        metavar="KIND",
        help="inference (default), training (zoo models trained on --data) or generation (greedy "
        "token generation with a generation zoo model, llama15m by default).",
    ),
]

# -- the axes of an inference sweep -------------------------------------------------------------
FrameworkOpt = Annotated[
    list[str] | None,
    typer.Option("--framework", "-f", metavar="F", help=f"{runtimes.choices_text()} (repeatable: an axis)."),
]
ModelOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--model",
        "-m",
        metavar="M",
        help="Zoo model (alexnet, squeezenet, mobilenet_v2, mobilenet_v3_small, resnet18, cnn9, mnist_cnn, "
        "cifar_cnn, ...) or a model file (.pt, .onnx, .tflite, .keras). Repeatable.",
    ),
]
RuntimeOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--runtime", metavar="R", help="Runtime variant, e.g. torchscript or tf-eager (repeatable)."
    ),
]
BatchSizeOpt = Annotated[
    list[int] | None,
    typer.Option(
        "--batch-size", "-b", metavar="N", help="Batch size; generation: concurrent sequences (repeatable)."
    ),
]
ThreadsOpt = Annotated[
    list[int] | None,
    typer.Option(
        "--threads",
        "-t",
        metavar="N",
        help="Intra-op threads (repeatable); also sets OMP/MKL/OpenBLAS thread variables. At most "
        f"{THREADS_PER_CPU} per CPU this process may use.",
    ),
]
PrecisionOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--precision", metavar="P", help="fp32, fp16 or int8 where the runtime supports it (repeatable)."
    ),
]
AcceleratorOpt = Annotated[
    list[str] | None,
    typer.Option("--accelerator", metavar="cpu|cuda", help="cpu or cuda (repeatable)."),
]
InputOpt = Annotated[
    str | None,
    typer.Option(
        "--input",
        metavar="IMAGE",
        help="An image file to run on (decoded and resized); default: a synthetic input.",
    ),
]
IterationsOpt = Annotated[
    list[int] | None,
    typer.Option(
        "--iterations",
        "-n",
        metavar="N",
        help=f"Steady-state inferences per run (default 100, at most {MAX_INFERENCES:,}); training: "
        "optimizer steps (default: --epochs decides). Repeatable.",
    ),
]

# -- how each run goes --------------------------------------------------------------------------


def warmup_value(text: str) -> int | str:
    """--warmup N, auto or auto:MAX, as the sweep takes it (a count, or "auto:MAX")."""
    try:
        return parse_warmup(text)
    except ValueError as exc:
        raise typer.BadParameter(str(exc)) from None


WarmupOpt = Annotated[
    str | None,
    typer.Option(
        "--warmup",
        metavar="N|auto",
        parser=warmup_value,
        help="Warm-up inferences before steady state, stored and marked (default 5, at most "
        f"{MAX_INFERENCES:,}); auto or auto:MAX: until a steady state is detected, at most MAX (default "
        f"{WARMUP_AUTO_LIMIT}); generation: whole warm-up generations (default 1).",
    ),
]
RepeatOpt = Annotated[
    int | None,
    typer.Option(
        "--repeat",
        metavar="K",
        help="Fresh processes per configuration, for distributions of cold-start phases. A sweep is at most "
        f"{MAX_RUNS_PER_SWEEP:,} runs (its configurations × K).",
    ),
]
TimeoutOpt = Annotated[
    float | None,
    typer.Option(
        "--timeout",
        metavar="S",
        help="Seconds a run may take before its process tree is killed (status timeout).",
    ),
]
CooldownOpt = Annotated[
    float | None,
    typer.Option("--cooldown", metavar="S", help=f"Seconds to wait between runs (at most {DAY_S:g}, a day)."),
]
SeedOpt = Annotated[
    int | None,
    typer.Option(
        "--seed", metavar="N", help=f"Seed of model weights and synthetic input: 0 (default) to {SEED_MAX}."
    ),
]
ShuffleSeedOpt = Annotated[
    int | None,
    typer.Option(
        "--shuffle-seed", metavar="N", help="Seed of the run order (default: random, recorded with each run)."
    ),
]
OptionOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--option",
        "-o",
        metavar="KEY=VALUE",
        help="Adapter option (repeatable), e.g. interop_threads=1, jit_compile=true, xnnpack=false, "
        "architecture=resnet18 (docs/cli/collect.md lists them).",
    ),
]
CacheDirOpt = Annotated[
    Path | None,
    typer.Option(
        "--cache-dir",
        metavar="DIR",
        help="Where prepared model files are cached, or a model pack (edgestats prepare). Default: "
        "edgestats/models in the user cache (XDG_CACHE_HOME, else ~/.cache).",
    ),
]
SampleHzOpt = Annotated[
    float | None,
    typer.Option(
        "--sample-hz",
        metavar="HZ",
        help="Telemetry samples per second: memory, CPU, I/O, temperatures, GPU, power (default 10; "
        "0 = off).",
    ),
]
PowerOpt = Annotated[
    str | None,
    typer.Option(
        "--power",
        metavar="SRC",
        help=f"Power source for energy: {power_sources.spec_help()} (an external meter's log). Default "
        "auto: the best available, or none with the reason.",
    ),
]

# -- generation ---------------------------------------------------------------------------------
PromptTokensOpt = Annotated[
    list[int] | None,
    typer.Option(
        "--prompt-tokens", metavar="N", help="Generation: the prompt's tokens (default 128). Repeatable."
    ),
]
NewTokensOpt = Annotated[
    list[int] | None,
    typer.Option(
        "--new-tokens",
        metavar="N",
        help="Generation: tokens generated per sequence, exactly (default 64). Repeatable.",
    ),
]
ContextDepthOpt = Annotated[
    list[int] | None,
    typer.Option(
        "--context-depth",
        metavar="N",
        help="Generation: tokens already in the KV cache before the prompt (default 0). Repeatable.",
    ),
]

# -- training -----------------------------------------------------------------------------------
DataOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--data",
        metavar="DIR",
        help="Training: a dataset directory (MNIST IDX, CIFAR-10 binary or an image folder; `edgestats "
        "dataset make` writes one). Repeatable.",
    ),
]
EpochsOpt = Annotated[
    list[int] | None,
    typer.Option(
        "--epochs",
        metavar="N",
        help="Training: epochs (default 1, or as many as --iterations needs). Repeatable.",
    ),
]
LearningRateOpt = Annotated[
    list[float] | None,
    typer.Option("--learning-rate", metavar="LR", help="Training: learning rate (default 0.01). Repeatable."),
]
OptimizerOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--optimizer",
        metavar="sgd|adam",
        help="Training: sgd (momentum 0.9, default) or adam. Repeatable.",
    ),
]
NumWorkersOpt = Annotated[
    list[int] | None,
    typer.Option(
        "--num-workers",
        metavar="N",
        help="Training: data-loading workers (DataLoader num_workers, tf.data parallel calls); 0 = no "
        f"pipelining (default); at most {THREADS_PER_CPU} per CPU. Repeatable.",
    ),
]
EvictCacheOpt = Annotated[
    bool | None,
    typer.Option(
        "--evict-cache/--keep-cache",
        help="Training: drop the dataset from the page cache before the first epoch (cold start; no root "
        "needed).",
    ),
]

# -- the device and its meter -------------------------------------------------------------------
MemoryLimitOpt = Annotated[
    float | None,
    typer.Option(
        "--memory-limit-mb",
        metavar="MIB",
        help="Cap each worker's heap at this many MiB (RLIMIT_DATA), e.g. to emulate a board with less "
        "memory; an allocation past it is stored as an error with what the run measured.",
    ),
]
DeviceNameOpt = Annotated[
    str | None,
    typer.Option(
        "--device-name",
        metavar="NAME",
        help="Name this device (e.g. pi5-lab-3) instead of its host name; its runs are stored under this "
        "name, which is its identity across DBs and re-imaging, and later collects on this machine "
        "reuse it (edgestats doctor shows it).",
    ),
]
ClockOffsetOpt = Annotated[
    float | None,
    typer.Option(
        "--clock-offset",
        metavar="S",
        help="Seconds added to an external meter's timestamps to put them on this host's clock (meter 2 s "
        "behind: 2).",
    ),
]

# -- how many runs: --until-precise -------------------------------------------------------------
UntilPreciseOpt = Annotated[
    str | None,
    typer.Option(
        "--until-precise",
        metavar="PCT",
        help="Repeat each configuration in fresh processes until its median latency's 95 % interval (the "
        "run as unit) is within ±PCT, e.g. 2%; a pilot of 5 runs (or --repeat) plans the rest (Stein's "
        "two-stage rule), at most --max-repeat. Needs "
        "the analyze extra.",
    ),
]
MaxRepeatOpt = Annotated[
    int,
    typer.Option("--max-repeat", metavar="K", help="With --until-precise: the most runs per configuration."),
]

# -- the noise sentinel -------------------------------------------------------------------------
OnNoiseOpt = Annotated[
    str | None,
    typer.Option(
        "--on-noise",
        metavar="MODE",
        help="When the machine is busy with other work (noise sentinel): warn (default: store the run "
        "flagged noisy, print one line), wait (before each run, up to --noise-wait s, until the machine "
        f"is quiet), fail (stop the sweep after a noisy run, exit {NOISY_EXIT}).",
    ),
]
NoiseWaitOpt = Annotated[
    float | None,
    typer.Option(
        "--noise-wait",
        metavar="S",
        help="With --on-noise wait: the longest wait for a quiet machine before each run (default "
        f"{DEFAULT_WAIT_S:g}, at most {DAY_S:g}); the run then starts anyway and is judged as usual.",
    ),
]
NoiseCpuPctOpt = Annotated[
    float | None,
    typer.Option(
        "--noise-cpu-pct",
        metavar="PCT",
        help="A run is noisy when processes outside its tree used more than PCT % of all CPUs during it "
        f"(default {NoiseThresholds.cpu_pct:g}).",
    ),
]
NoiseLoadOpt = Annotated[
    float | None,
    typer.Option(
        "--noise-load",
        metavar="PER_CPU",
        help="A run is noisy when the 1-minute load average before it exceeds PER_CPU times the number of "
        f"CPUs (default {NoiseThresholds.load_per_cpu:g}).",
    ),
]

# -- what is said, what is retried ----------------------------------------------------------------
VerboseOpt = Annotated[
    bool,
    typer.Option(
        "--verbose",
        "-v",
        help="Say in full why each power source is unusable here (edgestats doctor says it too).",
    ),
]
ForceOpt = Annotated[
    bool,
    typer.Option(
        "--force",
        help="Append to the DB although `edgestats verify` (or a command that read it) found it damaged; "
        "without it collect refuses such a DB.",
    ),
]
RetryFailedOpt = Annotated[
    bool,
    typer.Option(
        "--retry-failed",
        help="Run again the configurations whose stored run failed (status error); without it, resuming "
        "retries only killed runs and errors that named a missing package.",
    ),
]
