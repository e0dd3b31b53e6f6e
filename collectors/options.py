"""The options of `edgestats collect`, each declared once.

COLLECT_OPTIONS is the one list: cli/collect.py's signature is built from it (cli/declared.py), the
sweep file's keys, their types and which are axes are read from it (collectors/sweep.py), a flag
reaches the sweep under its key (collectors/sweep_keys.py `sweep_values`), and
edgestats.workflows.collect takes the same names as Python keywords. An option that is a key of the
sweep is a `SweepKey`; prepare and baseline take some of these (collectors/command_options.py).
Adding an option to collect is one entry here. No typer: the device side and `--help` import it.
"""

from __future__ import annotations

from pathlib import Path

from edgestats.collectors.core.provenance import parse_tag_flags
from edgestats.collectors.core.runconfig import WARMUP_AUTO_LIMIT, parse_warmup
from edgestats.collectors.core.sweep_limits import (
    DAY_S,
    MAX_INFERENCES,
    MAX_RUNS_PER_SWEEP,
    SEED_MAX,
    THREADS_PER_CPU,
)
from edgestats.collectors.precision import DEFAULT_MAX_REPEAT, PILOT_RUNS
from edgestats.collectors.sweep_keys import SweepKey, axis, parse_option_flags
from edgestats.collectors.telemetry.sentinel import DEFAULT_WAIT_S, NoiseThresholds
from edgestats.options import Opt
from edgestats.registry import power as power_sources
from edgestats.registry import runtimes

NOISY_EXIT = 3  # --on-noise fail stopped the sweep (docs/cli/collect.md "Noise sentinel")


COLLECT_OPTIONS: tuple[Opt, ...] = (
    Opt(
        "sweep_file",
        Path,
        "A TOML sweep file with a [sweep] table (lists are axes, scalars fixed).",
        argument=True,
    ),
    Opt("db", Path, "Results DB to write (created if missing).", metavar="PATH", required=True),
    SweepKey(
        "kind",
        str,
        "inference (default), training (zoo models trained on --data) or generation (greedy token "
        "generation with a generation zoo model, llama15m by default).",
        metavar="KIND",
    ),
    # -- the axes of an inference sweep ---------------------------------------------------------
    axis(
        "framework",
        str,
        f"{runtimes.choices_text()} (repeatable: an axis).",
        flags=("--framework", "-f"),
        metavar="F",
    ),
    axis(
        "model",
        str,
        "Zoo model (alexnet, squeezenet, mobilenet_v2, mobilenet_v3_small, resnet18, cnn9, mnist_cnn, "
        "cifar_cnn, ...) or a model file (.pt, .onnx, .tflite, .keras). Repeatable.",
        flags=("--model", "-m"),
        metavar="M",
    ),
    axis(
        "runtime",
        str,
        "Runtime variant, e.g. torchscript or tf-eager (repeatable).",
        metavar="R",
        kinds=("inference", "generation"),
    ),
    axis(
        "batch_size",
        int,
        "Batch size; generation: concurrent sequences (repeatable).",
        flags=("--batch-size", "-b"),
        metavar="N",
    ),
    axis(
        "threads",
        int,
        "Intra-op threads (repeatable); also sets OMP/MKL/OpenBLAS thread variables. At most "
        f"{THREADS_PER_CPU} per CPU this process may use.",
        flags=("--threads", "-t"),
        metavar="N",
    ),
    axis(
        "precision",
        str,
        "fp32, fp16 or int8 where the runtime supports it (repeatable).",
        metavar="P",
        kinds=("inference", "generation"),
    ),
    axis("accelerator", str, "cpu or cuda (repeatable).", metavar="cpu|cuda"),
    SweepKey(
        "input_path",
        str,
        "An image file to run on (decoded and resized); default: a synthetic input.",
        flags=("--input",),
        metavar="IMAGE",
        key="input",
        axis=True,
        kinds=("inference",),
    ),
    axis(
        "iterations",
        int,
        f"Steady-state inferences per run (default 100, at most {MAX_INFERENCES:,}); training: "
        "optimizer steps (default: --epochs decides). Repeatable.",
        flags=("--iterations", "-n"),
        metavar="N",
    ),
    # -- how each run goes ----------------------------------------------------------------------
    SweepKey(
        "warmup",
        int,  # or "auto:MAX": the parser's and the sweep's check (collectors/steady_state.py)
        "Warm-up inferences before steady state, stored and marked (default 5, at most "
        f"{MAX_INFERENCES:,}); auto or auto:MAX: until a steady state is detected, at most MAX (default "
        f"{WARMUP_AUTO_LIMIT}); generation: whole warm-up generations (default 1).",
        metavar="N|auto",
        parser=parse_warmup,
        axis=True,
    ),
    SweepKey(
        "repeat",
        int,
        "Fresh processes per configuration, for distributions of cold-start phases. A sweep is at most "
        f"{MAX_RUNS_PER_SWEEP:,} runs (its configurations × K).",
        metavar="K",
    ),
    SweepKey(
        "timeout",
        float,
        "Seconds a run may take before its process tree is killed (status timeout).",
        metavar="S",
    ),
    SweepKey("cooldown", float, f"Seconds to wait between runs (at most {DAY_S:g}, a day).", metavar="S"),
    SweepKey(
        "seed",
        int,
        f"Seed of model weights and synthetic input: 0 (default) to {SEED_MAX}.",
        metavar="N",
        axis=True,
    ),
    SweepKey(
        "shuffle_seed", int, "Seed of the run order (default: random, recorded with each run).", metavar="N"
    ),
    SweepKey(
        "option",
        str,
        "Adapter option (repeatable), e.g. interop_threads=1, jit_compile=true, xnnpack=false, "
        "architecture=resnet18 (docs/cli/collect.md lists them).",
        flags=("--option", "-o"),
        metavar="KEY=VALUE",
        repeatable=True,
        key="options",
        table=True,
        to_sweep=parse_option_flags,
    ),
    Opt(
        "cache_dir",
        Path,
        "Where prepared model files are cached, or a model pack (edgestats prepare). Default: "
        "edgestats/models in the user cache (XDG_CACHE_HOME, else ~/.cache).",
        metavar="DIR",
    ),
    SweepKey(
        "sample_hz",
        float,
        "Telemetry samples per second: memory, CPU, I/O, temperatures, GPU, power (default 10; 0 = off).",
        metavar="HZ",
    ),
    SweepKey(
        "power",
        str,
        f"Power source for energy: {power_sources.spec_help()} (an external meter's log). Default "
        "auto: the best available, or none with the reason.",
        metavar="SRC",
    ),
    # -- training -------------------------------------------------------------------------------
    axis(
        "data",
        str,
        "Training: a dataset directory (MNIST IDX, CIFAR-10 binary or an image folder; `edgestats "
        "dataset make` writes one). Repeatable.",
        metavar="DIR",
        kinds=("training",),
    ),
    axis(
        "epochs",
        int,
        "Training: epochs (default 1, or as many as --iterations needs). Repeatable.",
        metavar="N",
        kinds=("training",),
    ),
    axis(
        "learning_rate",
        float,
        "Training: learning rate (default 0.01). Repeatable.",
        metavar="LR",
        kinds=("training",),
    ),
    axis(
        "optimizer",
        str,
        "Training: sgd (momentum 0.9, default) or adam. Repeatable.",
        metavar="sgd|adam",
        kinds=("training",),
    ),
    axis(
        "num_workers",
        int,
        "Training: data-loading workers (DataLoader num_workers, tf.data parallel calls); 0 = no "
        f"pipelining (default); at most {THREADS_PER_CPU} per CPU. Repeatable.",
        metavar="N",
        kinds=("training",),
    ),
    SweepKey(
        "evict_cache",
        bool,
        "Training: drop the dataset from the page cache before the first epoch (cold start; no root needed).",
        flags=("--evict-cache/--keep-cache",),
        axis=True,
        kinds=("training",),
    ),
    # -- generation -----------------------------------------------------------------------------
    axis(
        "prompt_tokens",
        int,
        "Generation: the prompt's tokens (default 128). Repeatable.",
        metavar="N",
        kinds=("generation",),
    ),
    axis(
        "new_tokens",
        int,
        "Generation: tokens generated per sequence, exactly (default 64). Repeatable.",
        metavar="N",
        kinds=("generation",),
    ),
    axis(
        "context_depth",
        int,
        "Generation: tokens already in the KV cache before the prompt (default 0). Repeatable.",
        metavar="N",
        kinds=("generation",),
    ),
    # -- the device and its meter ---------------------------------------------------------------
    SweepKey(
        "memory_limit_mb",
        float,
        "Cap each worker's heap at this many MiB (RLIMIT_DATA), e.g. to emulate a board with less "
        "memory; an allocation past it is stored as an error with what the run measured.",
        metavar="MIB",
    ),
    SweepKey(
        "clock_offset",
        float,
        "Seconds added to an external meter's timestamps to put them on this host's clock (meter 2 s "
        "behind: 2).",
        metavar="S",
    ),
    SweepKey(
        "device_name",
        str,
        "Name this device (e.g. pi5-lab-3) instead of its host name; its runs are stored under this "
        "name, which is its identity across DBs and re-imaging, and later collects on this machine "
        "reuse it (edgestats doctor shows it).",
        metavar="NAME",
    ),
    SweepKey(
        "device_class",
        str,
        "The class of identical units this device is one of (e.g. pi5), stored with every run: "
        "analyses group a class's units as replicates.",
        metavar="NAME",
    ),
    SweepKey(
        "unit_id",
        str,
        "This unit's own id (a serial number, an asset tag), stored with every run, to tell two "
        "units of one class apart.",
        metavar="ID",
    ),
    SweepKey(
        "tags",
        str,
        "A label stored with every run (repeatable), e.g. --tag lab=b2 --tag psu=official; in a "
        'sweep file: tags = { lab = "b2" }. Keys are identifiers.',
        flags=("--tag",),
        metavar="KEY=VALUE",
        repeatable=True,
        table=True,
        to_sweep=parse_tag_flags,
    ),
    # -- how many runs: --until-precise ---------------------------------------------------------
    Opt(
        "until_precise",
        str,
        "Repeat each configuration in fresh processes until its median latency's 95 % interval (the "
        f"run as unit) is within ±PCT, e.g. 2%; a pilot of {PILOT_RUNS} runs (or --repeat) plans the "
        "rest (Stein's two-stage rule), at most --max-repeat. Needs the analyze extra.",
        metavar="PCT",
    ),
    Opt(
        "max_repeat",
        int,
        "With --until-precise: the most runs per configuration.",
        default=DEFAULT_MAX_REPEAT,
        metavar="K",
    ),
    # -- the noise sentinel ---------------------------------------------------------------------
    SweepKey(
        "on_noise",
        str,
        "When the machine is busy with other work (noise sentinel): warn (default: store the run "
        "flagged noisy, print one line), wait (before each run, up to --noise-wait s, until the machine "
        f"is quiet), fail (stop the sweep after a noisy run, exit {NOISY_EXIT}).",
        metavar="MODE",
    ),
    SweepKey(
        "noise_wait",
        float,
        "With --on-noise wait: the longest wait for a quiet machine before each run (default "
        f"{DEFAULT_WAIT_S:g}, at most {DAY_S:g}); the run then starts anyway and is judged as usual.",
        metavar="S",
    ),
    SweepKey(
        "noise_cpu_pct",
        float,
        "A run is noisy when processes outside its tree used more than PCT % of all CPUs during it "
        f"(default {NoiseThresholds.cpu_pct:g}).",
        metavar="PCT",
    ),
    SweepKey(
        "noise_load",
        float,
        "A run is noisy when the 1-minute load average before it exceeds PER_CPU times the number of "
        f"CPUs (default {NoiseThresholds.load_per_cpu:g}).",
        metavar="PER_CPU",
    ),
    # -- what is said, what is retried ----------------------------------------------------------
    Opt(
        "verbose",
        bool,
        "Say in full why each power source is unusable here (edgestats doctor says it too).",
        default=False,
        flags=("--verbose", "-v"),
    ),
    SweepKey(
        "retry_failed",
        bool,
        "Run again the configurations whose stored run failed (status error); without it, resuming "
        "retries only killed runs and errors that named a missing package.",
        default=False,
    ),
    Opt(
        "force",
        bool,
        "Append to the DB although `edgestats verify` (or a command that read it) found it damaged; "
        "without it collect refuses such a DB.",
        default=False,
    ),
)
