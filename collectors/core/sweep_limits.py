"""The limits a sweep is checked against before anything is built or run (docs/cli/collect.md,
"Limits"). They are each key's range, thread counts against this machine's CPUs, the planned number
of runs, names without control characters, and the values of adapter options.

The ranges of the configuration columns (batch_size, threads, iterations, ...) are
edgestats/contracts.py's CONFIG_RANGES, which `import` applies to the same columns; collect is
stricter where one run must hold what it measures, or this machine must run what it is given.
"""

from __future__ import annotations

import math
import os
from typing import Any

from edgestats.collectors.zoo.catalog import ZOO
from edgestats.collectors.zoo.llama_arch import MAX_SEQ_LEN
from edgestats.contracts import CONFIG_RANGES, INT32_MAX, control_character
from edgestats.errors import EdgestatsError


class SweepError(EdgestatsError):
    """A sweep file or flag that cannot be run; raised before any run starts."""


# A sweep of more runs than this is refused before its run list is built. A run is a fresh process
# that loads a framework and a model (seconds at least), so 100,000 runs keep a device busy for days
# to months; beyond that a sweep is a mistake (a repeat typed with extra zeros) or work better split
# into sweeps that each resume into the same DB. A run list of 100,000 holds about 35 MB.
MAX_RUNS_PER_SWEEP = 100_000
# Inferences of one phase of a run (iterations, warm-up, auto's limit). The collector holds every
# latency of a run in memory while it stores it (a few hundred bytes each: 1,000,000 are a few
# hundred MB on a board); and a run's median is known to a fraction of a percent long before, while
# run-to-run spread is 1-8 %: more runs (--repeat) narrow an interval, more inferences do not.
MAX_INFERENCES = 1_000_000
# Threads (and data-loading workers) per CPU this process may use: oversubscribing a few times is
# a legitimate experiment (how a runtime degrades), hundreds of threads per CPU only queue on the
# scheduler, and 100,000 of them exhaust the machine before the run times out.
THREADS_PER_CPU = 8
DAY_S = 86_400.0  # cooldown, noise_wait: a day between runs is separate sessions, not one sweep
# numpy's legacy seeding (np.random.seed, which Keras' set_random_seed calls) takes 0 to 2**32 - 1.
SEED_MAX = 2**32 - 1
INT64_MAX = 2**63 - 1
# RLIMIT_DATA takes at most 2**63 - 1 bytes.
MEMORY_LIMIT_MAX_MB = 2**43 - 1
ADDED_DELAY_MAX_MS = 60_000.0  # a calibration's busy-wait: a few % of an inference, never minutes

STORED = "stored as a 32-bit integer"
# key -> (lowest, highest, why), both allowed; None: no bound on that side
LIMITS: dict[str, tuple[float | None, float | None, str]] = {
    **{k: (low, high, STORED) for k, (low, high) in CONFIG_RANGES.items() if k != "learning_rate"},
    "learning_rate": (CONFIG_RANGES["learning_rate"][0], None, "a positive number"),
    "iterations": (1, MAX_INFERENCES, "a run holds each latency in memory; for more, use --repeat"),
    "warmup": (0, MAX_INFERENCES, "a run holds each latency in memory"),
    "repeat": (1, None, ""),  # and the sweep's runs, at most MAX_RUNS_PER_SWEEP (check_plan_size)
    "seed": (0, SEED_MAX, "numpy's seeding takes no more"),
    "shuffle_seed": (None, INT64_MAX, "stored as a 64-bit integer"),
    "interop_threads": (1, INT32_MAX, "threads"),
    "timeout": (0.001, None, ""),
    "cooldown": (0, DAY_S, "a day; runs a day apart are separate sessions, not one sweep"),
    "noise_wait": (0, DAY_S, "a day"),
    "noise_cpu_pct": (0, 100, "a percentage of all CPUs"),
    "noise_load": (0, None, "per CPU"),
    "sample_hz": (0, 1000, "the sampler's fastest rate"),
    "memory_limit_mb": (1, MEMORY_LIMIT_MAX_MB, "RLIMIT_DATA takes at most 2**63 - 1 bytes"),
    # generation: within the generation models' context (zoo/llama_arch.py, MAX_SEQ_LEN)
    "prompt_tokens": (1, MAX_SEQ_LEN, "the generation models' context length"),
    "new_tokens": (1, MAX_SEQ_LEN, "the generation models' context length"),
    "context_depth": (0, MAX_SEQ_LEN, "the generation models' context length"),
}
CPU_BOUND = ("threads", "num_workers", "interop_threads")  # at most THREADS_PER_CPU per usable CPU
UNITS = {"timeout": " s", "cooldown": " s", "noise_wait": " s", "sample_hz": " Hz", "memory_limit_mb": " MiB"}


def usable_cpus() -> int:
    """The CPUs this process may run on (its affinity: a container's or taskset's share)."""
    try:
        return len(os.sched_getaffinity(0)) or 1
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def _shown(x: float) -> str:
    """A bound as a message gives it: 86,400 (not 86400.0), 0.001, 1e-12."""
    return f"{int(x):,}" if float(x).is_integer() and abs(x) < 1e18 else f"{x:g}"


def check_range(key: str, value: Any, where: str, *, runs_here: bool = True) -> None:
    """Refuse a number that is not finite or is outside its key's range, in one line with the
    range and why. `runs_here`: the sweep runs on this machine (collect), so thread counts are
    bounded by its CPUs."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return
    low, high, why = LIMITS.get(key, (None, None, ""))
    if key in CPU_BOUND and runs_here:
        cpus = usable_cpus()
        high = THREADS_PER_CPU * cpus
        why = (
            f"{THREADS_PER_CPU} per CPU, {cpus} CPU{'s' if cpus != 1 else ''} here; oversubscribing a few "
            "times is an experiment, more only queues on the scheduler"
        )
    unit = UNITS.get(key, "")
    if low is not None and high is not None:
        allowed = f"{_shown(low)} to {_shown(high)}{unit}"
    elif low is not None or high is not None:
        allowed = f"{_shown(low)}{unit} or more" if low is not None else f"at most {_shown(high)}{unit}"
    detail = f" (range {allowed}{': ' + why if why else ''})" if low is not None or high is not None else ""
    if not isinstance(value, int) and not math.isfinite(value):
        raise SweepError(f"{where}{key}: {value!r} is not a finite number{detail}")
    if low is not None and value < low:
        raise SweepError(f"{where}{key}: {value!r} must be at least {_shown(low)}{detail}")
    if high is not None and value > high:
        raise SweepError(f"{where}{key}: {value!r} must be at most {_shown(high)}{detail}")


def check_name(key: str, value: str, where: str) -> None:
    """A text value with a control character (NUL, a newline, an escape, ...) is refused: it
    would be stored as a name that prints as something else."""
    found = control_character(value)
    if found:
        raise SweepError(
            f"{where}{key}: {value!r} contains a control character ({found}); give printable text"
        )


def check_auto_warmup(value: str, where: str) -> None:
    """An "auto:MAX" warm-up: MAX within the warm-up's range."""
    limit = int(value.partition(":")[2])
    if limit > MAX_INFERENCES:
        raise SweepError(
            f"{where}warmup: {value!r}: auto's limit must be at most {MAX_INFERENCES:,} inferences "
            f"(range auto:1 to auto:{MAX_INFERENCES}: a run holds each latency in memory)"
        )


# The axes as the size of a sweep names them, in the plural (the singular drops the final s).
AXIS_NOUNS = {
    "batch_size": "batch sizes",
    "threads": "thread counts",
    "iterations": "iteration counts",
    "warmup": "warm-ups",
    "data": "datasets",
    "epochs": "epoch counts",
    "num_workers": "worker counts",
    "evict_cache": "cache settings",
    "prompt_tokens": "prompt lengths",
    "new_tokens": "generation lengths",
    "context_depth": "context depths",
}


def _count(n: int, plural: str) -> str:
    return f"{n:,} {plural if n != 1 else plural[:-1]}"


def check_plan_size(axes: dict[str, list[Any]], repeat: int, where: str) -> None:
    """Refuse a sweep of more than MAX_RUNS_PER_SWEEP runs, from the product of its axes' lengths
    and repeat, before a run list is built (a mistyped repeat would otherwise fill memory)."""
    total = math.prod(len(values) for values in axes.values()) * repeat
    if total <= MAX_RUNS_PER_SWEEP:
        return
    factors = [
        _count(len(values), AXIS_NOUNS.get(key, key.replace("_", " ") + "s"))
        for key, values in axes.items()
        if len(values) > 1
    ] or ["1 configuration"]
    factors.append(_count(repeat, "repeats"))
    raise SweepError(
        f"{where}{' × '.join(factors)} = {total:,} runs; a sweep runs at most {MAX_RUNS_PER_SWEEP:,} "
        "(docs/cli/collect.md, Limits): lower repeat or an axis, or split the sweep into several "
        "that collect into the same DB"
    )


def check_options(options: dict[str, Any], where: str, *, runs_here: bool = True) -> None:
    """The adapter options a run would otherwise fail on (or hang with) after it started."""
    for key, value in options.items():
        label = f"options.{key}"
        if key in ("xnnpack", "jit_compile") and not isinstance(value, bool):
            raise SweepError(f"{where}{label}: expected true or false, got {value!r}")
        if key == "interop_threads":
            if isinstance(value, bool) or not isinstance(value, int):
                raise SweepError(f"{where}{label}: expected a whole number of threads, got {value!r}")
            check_range("interop_threads", value, where + "options.", runs_here=runs_here)
        if key == "added_delay_ms":
            if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
                raise SweepError(f"{where}{label}: expected a number of milliseconds, got {value!r}")
            if not 0 <= value <= ADDED_DELAY_MAX_MS:
                raise SweepError(
                    f"{where}{label}: {value!r} must be from 0 to {ADDED_DELAY_MAX_MS:g} ms "
                    "(a calibration's delay is a few % of an inference)"
                )
        if key == "architecture" and not (isinstance(value, str) and value in ZOO):
            raise SweepError(
                f"{where}{label}: {value!r} is not a zoo model; use one of {', '.join(sorted(ZOO))}"
            )
        if key == "input_shape" and not (
            isinstance(value, list)
            and value
            and all(isinstance(d, int) and not isinstance(d, bool) and 1 <= d <= INT32_MAX for d in value)
        ):
            raise SweepError(f"{where}{label}: expected a list of positive whole numbers, e.g. [3, 224, 224]")
