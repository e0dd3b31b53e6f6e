"""Sweeps: a matrix of run configurations from a TOML file and/or command-line flags.

    [sweep]
    framework = ["pytorch", "tflite"]     # a list is an axis
    model = ["squeezenet", "mobilenet_v2"]
    batch_size = [1, 8]
    iterations = 100                      # a scalar is fixed
    warmup = "auto"                       # a count, or auto[:MAX]: until a steady state is detected
    repeat = 3                            # settings: repeat, timeout, cooldown, shuffle_seed
    on_noise = "wait"                     # noise sentinel: on_noise, noise_wait, noise_cpu_pct, noise_load

Everything is checked before any run starts; a mistake names the key and lists what is valid.
The keys, each one's type and whether it is an axis are collect's declared options
(collectors/options.py); the values each allows are checked here, ranges, thread counts against
the CPUs and the most runs of a sweep in collectors/core/sweep_limits.py.
"""

from __future__ import annotations

import itertools
import random
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from edgestats.collectors.core.provenance import check_fleet_settings, check_tags
from edgestats.collectors.core.runconfig import (
    ACCELERATORS,
    KINDS,
    OPTIMIZERS,
    PRECISIONS,
    TRAINING_FRAMEWORKS,
    RunConfig,
    parse_warmup,
)
from edgestats.collectors.core.sweep_limits import (
    SweepError,
    check_auto_warmup,
    check_name,
    check_options,
    check_plan_size,
    check_range,
)
from edgestats.collectors.generation.engines import engine_class
from edgestats.collectors.generation.sweep_checks import check_generation
from edgestats.collectors.options import COLLECT_OPTIONS
from edgestats.collectors.sweep_keys import sweep_keys, sweep_values
from edgestats.collectors.telemetry.sentinel import ON_NOISE
from edgestats.collectors.zoo.catalog import ZOO
from edgestats.collectors.zoo.llama_arch import DEFAULT_GENERATION_MODEL, LLAMA_ZOO
from edgestats.options import Opt
from edgestats.registry.runtimes import runtime, runtime_names
from edgestats.textfiles import decode_utf8

if sys.version_info >= (3, 11):
    import tomllib
else:  # Python 3.10 (JetPack 6, Ubuntu 22.04): tomli is the same parser, before it joined the stdlib
    import tomli as tomllib

MODEL_FILE_SUFFIXES = (".pt", ".pth", ".onnx", ".tflite", ".keras")

# The sweep's keys, their types and which are axes: collect's declared options (collectors/options.py).
SWEEP_KEYS = sweep_keys(COLLECT_OPTIONS)
# what values a key allows (checked here, where a sweep's values are)
CHOICES: dict[str, tuple] = {
    "framework": runtime_names(),
    "precision": PRECISIONS,
    "accelerator": ACCELERATORS,
    "optimizer": OPTIMIZERS,
    "kind": KINDS,
    "on_noise": ON_NOISE,
}
# axis -> (type, what values are allowed, or None)
AXES: dict[str, tuple[type, tuple | None]] = {
    k.feeds: (k.type, CHOICES.get(k.feeds)) for k in SWEEP_KEYS if k.axis
}
# settings: scalars that shape the sweep rather than a run
SETTINGS: dict[str, type] = {k.feeds: k.type for k in SWEEP_KEYS if not k.axis and not k.table}
TRAINING_ONLY = tuple(k.feeds for k in SWEEP_KEYS if k.kinds == ("training",))
GENERATION_ONLY = tuple(k.feeds for k in SWEEP_KEYS if k.kinds == ("generation",))
# what a training run refuses: the keys of inference (and generation) only
INFERENCE_ONLY = tuple(k.feeds for k in SWEEP_KEYS if "inference" in k.kinds and "training" not in k.kinds)
# what a generation run uses where the sweep does not say (warmup: warm-up generations)
GENERATION_DEFAULTS = {"prompt_tokens": 128, "new_tokens": 64, "context_depth": 0, "warmup": 1}
# what a training run uses where the sweep does not say
TRAINING_DEFAULTS = {"batch_size": 32, "learning_rate": 0.01, "optimizer": "sgd", "num_workers": 0}
# Adapter options (RunConfig.extra), fixed for the sweep: a TOML table, or --option KEY=VALUE.
ADAPTER_OPTIONS = {
    "input_shape": "one sample's shape for a model file that does not record it, e.g. [3, 224, 224]",
    "architecture": "the zoo architecture of a PyTorch state_dict file",
    "interop_threads": "inter-op threads (PyTorch, TensorFlow); default: --threads",
    "jit_compile": "XLA-compile the tf.function (TensorFlow)",
    "xnnpack": "use TFLite's XNNPACK delegate (default true)",
    "added_delay_ms": "a calibration: busy-wait this long inside every timed inference, a known slowdown "
    "that compare and analyze must detect (such runs measure the tool, not the runtime)",
}


@dataclass
class Sweep:
    axes: dict[str, list[Any]] = field(default_factory=dict)
    settings: dict[str, Any] = field(default_factory=dict)
    options: dict[str, Any] = field(default_factory=dict)

    def configs(self) -> list[RunConfig]:
        """Every combination of the axes, times `repeat`, in a stable order."""
        names = list(self.axes)
        combos = itertools.product(*(self.axes[n] for n in names))
        repeat = self.settings.get("repeat", 1)
        kind = self.settings.get("kind")
        fixed = self._training_fixed() if kind == "training" else {}
        if kind == "generation":  # defaults made explicit, so runs record (and hash) what they used
            fixed = {"kind": kind, "iterations": 0}
            fixed.update({k: v for k, v in GENERATION_DEFAULTS.items() if k not in self.axes})
        return [
            RunConfig(**{**fixed, **dict(zip(names, values))}, repeat_index=k, extra=dict(self.options))
            for values in combos
            for k in range(repeat)
        ]

    def _training_fixed(self) -> dict[str, Any]:
        """A training run's defaults, made explicit so runs record (and hash) what they used:
        without --iterations the epochs decide (iterations 0 = no cap); without either, 1 epoch."""
        fixed: dict[str, Any] = {
            "kind": "training",
            **{k: v for k, v in TRAINING_DEFAULTS.items() if k not in self.axes},
        }
        if "iterations" not in self.axes:
            fixed["iterations"] = 0
            if "epochs" not in self.axes:
                fixed["epochs"] = 1
        fixed["warmup"] = 0
        return fixed


def _type_name(t: type) -> str:
    return {int: "an integer", float: "a number", str: "a string", bool: "true or false"}[t]


def _check_value(
    key: str, value: Any, expected: type, allowed: tuple | None, where: str, *, runs_here: bool = True
) -> Any:
    if key == "warmup" and isinstance(value, str):  # "auto" / "auto:MAX" (collectors/steady_state.py)
        try:
            value = parse_warmup(value)
        except ValueError as exc:
            raise SweepError(f"{where}warmup: {exc}") from None
        if isinstance(value, str):
            check_auto_warmup(value, where)
            return value
    if expected is float and isinstance(value, int) and not isinstance(value, bool):
        value = float(value)
    if not isinstance(value, expected) or (isinstance(value, bool) and expected is not bool):
        lists = "" if key in SETTINGS else " (or a list of them)"
        expected_text = _type_name(expected) + (' or "auto"' if key == "warmup" else "")
        raise SweepError(
            f"{where}{key}: expected {expected_text}{lists}, got {type(value).__name__} {value!r}"
        )
    if isinstance(value, str):
        check_name(key, value, where)
    if allowed is not None and value not in allowed:
        raise SweepError(f"{where}{key}: {value!r} is not valid; use one of {', '.join(allowed)}")
    check_range(key, value, where, runs_here=runs_here)  # finite, and within its range
    if key == "model":
        _check_model(value, where)
    if key == "input" and not Path(value).is_file():
        raise SweepError(f"{where}input: {value!r} is not a file; give the path of an image (JPEG, PNG)")
    return value


def _check_model(value: str, where: str) -> None:
    if value in ZOO or value in LLAMA_ZOO:  # which kind runs which: _check_kind
        return
    path = Path(value)
    if path.suffix in MODEL_FILE_SUFFIXES or path.is_dir():
        if not path.exists():
            raise SweepError(f"{where}model: the model file {value!r} does not exist")
        return
    raise SweepError(
        f"{where}model: {value!r} is neither a zoo model ({', '.join(sorted(ZOO))}; generation: "
        f"{', '.join(LLAMA_ZOO)}) nor a model file ({', '.join(MODEL_FILE_SUFFIXES)} or a SavedModel folder)"
    )


def build_sweep(values: dict[str, Any], where: str = "", *, runs_here: bool = True) -> Sweep:
    """Validate a {key: scalar or list} mapping (from a file's [sweep] table or from flags).
    `runs_here`: the sweep runs on this machine (collect; not prepare, which builds models for
    another), so its thread counts are checked against this machine's CPUs."""
    sweep = Sweep()
    for key, raw in values.items():
        if key == "options":
            sweep.options = _check_options(raw, where)
            check_options(sweep.options, where, runs_here=runs_here)
            continue
        if key == "tags":  # a run's labels in a fleet (collectors/core/provenance.py)
            sweep.settings["tags"] = check_tags(raw, where)
            continue
        if key in SETTINGS:
            sweep.settings[key] = _check_value(
                key, raw, SETTINGS[key], CHOICES.get(key), where, runs_here=runs_here
            )
            continue
        if key not in AXES:
            valid = ", ".join(list(AXES) + list(SETTINGS) + ["options", "tags"])
            raise SweepError(f"{where}unknown key {key!r}; valid keys: {valid}")
        expected, allowed = AXES[key]
        items = as_values(raw)
        if not items:
            raise SweepError(f"{where}{key}: an empty list gives no runs; give at least one value")
        sweep.axes[key] = [_check_value(key, v, expected, allowed, where, runs_here=runs_here) for v in items]
    check_fleet_settings(sweep.settings, where)
    if sweep.settings.get("kind") == "generation" and "model" not in sweep.axes:
        sweep.axes["model"] = [DEFAULT_GENERATION_MODEL]  # the smallest generation model
    if "framework" not in sweep.axes or "model" not in sweep.axes:
        raise SweepError(
            f"{where}a sweep needs at least one framework and one model "
            f"(frameworks: {', '.join(runtime_names())}; zoo models: {', '.join(sorted(ZOO))})"
        )
    check_plan_size(sweep.axes, sweep.settings.get("repeat", 1), where)  # before any list is built
    _check_kind(sweep, where)
    return sweep


def _check_kind(sweep: Sweep, where: str) -> None:
    """Keys that belong to the other kind of workload, and what a training sweep needs."""
    kind = sweep.settings.get("kind", "inference")
    if kind == "generation":
        check_generation(sweep, where)
        return
    given = [k for k in GENERATION_ONLY if k in sweep.axes]
    if given:
        raise SweepError(
            f'{where}{", ".join(given)}: only for generation; add kind = "generation" (--kind generation)'
        )
    llamas = [m for m in sweep.axes["model"] if m in LLAMA_ZOO]
    if llamas:
        raise SweepError(
            f'{where}model: {", ".join(llamas)} is a generation model; add kind = "generation" '
            "(--kind generation)"
        )
    if kind != "training":
        given = [k for k in TRAINING_ONLY if k in sweep.axes]
        if given:
            raise SweepError(
                f'{where}{", ".join(given)}: only for training; add kind = "training" (--kind training)'
            )
        return
    given = [
        k for k in INFERENCE_ONLY if k in sweep.axes and not (k == "precision" and sweep.axes[k] == ["fp32"])
    ]
    if given:
        raise SweepError(
            f"{where}{', '.join(given)}: only for inference; training runs the zoo model in fp32 eagerly"
        )
    wrong = [f for f in sweep.axes["framework"] if f not in TRAINING_FRAMEWORKS]
    if wrong:
        raise SweepError(
            f"{where}framework: {', '.join(wrong)} cannot train; use one of {', '.join(TRAINING_FRAMEWORKS)}"
        )
    files = [m for m in sweep.axes["model"] if m not in ZOO]
    if files:
        raise SweepError(
            f"{where}model: training builds a zoo model from code; {', '.join(files)} is not one "
            f"(zoo models: {', '.join(sorted(ZOO))})"
        )
    if "data" not in sweep.axes:
        raise SweepError(
            f"{where}training needs a dataset: --data DIR (MNIST IDX files, CIFAR-10 binary batches or "
            "an image folder); write one with `edgestats dataset make --format mnist --out DIR --n 2000`"
        )
    from edgestats.collectors.training.datasets import DatasetError, open_dataset

    for data in sweep.axes["data"]:
        try:
            open_dataset(data)
        except DatasetError as exc:
            raise SweepError(f"{where}data: {exc}") from None
    # absolute, so the worker and the stored config name the same directory wherever collect ran
    sweep.axes["data"] = [str(Path(d).resolve()) for d in sweep.axes["data"]]


def as_values(raw: Any) -> list[Any]:
    """A key's values as a list: a list, a tuple or any other sequence is an axis (click, and typer
    before 0.29, hand a repeated option over as a tuple); a scalar, a string included, is one value."""
    if isinstance(raw, Sequence) and not isinstance(raw, str | bytes):
        return list(raw)
    return [raw]


def _check_options(raw: Any, where: str) -> dict[str, Any]:
    if not isinstance(raw, Mapping):
        raise SweepError(
            f"{where}options: expected a table of adapter options, e.g. options = {{ xnnpack = false }}"
        )
    unknown = [k for k in raw if k not in ADAPTER_OPTIONS]
    if unknown:
        valid = "; ".join(f"{k}: {v}" for k, v in ADAPTER_OPTIONS.items())
        raise SweepError(f"{where}options: unknown option(s) {', '.join(unknown)}; valid options — {valid}")
    # a tuple (input_shape from the Python API) is stored and compared as the list TOML and JSON give
    return {k: as_values(v) if isinstance(v, tuple) else v for k, v in raw.items()}


def load_sweep_file(path: Path) -> dict[str, Any]:
    """The [sweep] table of a TOML file, unvalidated."""
    if not path.is_file():
        raise SweepError(f"{path}: no such sweep file")
    text = decode_utf8(
        path.read_bytes(),
        path,
        SweepError,
        "TOML files are UTF-8: save it as UTF-8 (e.g. iconv -f latin1 -t utf-8)",
    )
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise SweepError(f"{path}: not valid TOML: {exc}") from exc
    unknown = [k for k in data if k != "sweep"]
    if unknown or "sweep" not in data:
        raise SweepError(f"{path}: expected one [sweep] table, found {', '.join(unknown) or 'none'}")
    return data["sweep"]


def combine(
    file_values: dict[str, Any] | None,
    flag_values: dict[str, Any],
    path: Path | None,
    *,
    runs_here: bool = True,
) -> Sweep:
    """Flags override the file's keys of the same name. `runs_here`: as build_sweep's."""
    merged = dict(file_values or {})
    merged.update({k: v for k, v in flag_values.items() if v not in (None, [], ())})
    where = f"{path}: sweep." if path and file_values is not None else ""
    return build_sweep(merged, where=where, runs_here=runs_here)


def sweep_of(
    source: Path | str | Mapping[str, Any] | None,
    options: Iterable[Opt],
    values: Mapping[str, Any],
    *,
    runs_here: bool = True,
) -> Sweep:
    """A command's sweep: `source` (a sweep file's path, or its [sweep] table as a mapping) with
    the sweep keys among the options' values (by option name; collectors/options.py) over its own."""
    path = Path(source) if isinstance(source, str | Path) else None
    file_values = load_sweep_file(path) if path else None if source is None else dict(source)
    return combine(file_values, sweep_values(options, values), path, runs_here=runs_here)


def shuffled(configs: list[RunConfig], seed: int) -> list[RunConfig]:
    """Run order shuffled with a recorded seed, so drift (thermal, background load) does not
    line up with one axis of the sweep."""
    order = list(configs)
    random.Random(seed).shuffle(order)
    return order


def feasibility(configs: list[RunConfig]) -> tuple[list[RunConfig], list[tuple[RunConfig, str]]]:
    """Split into runnable configurations and those that cannot run here, with the reason."""
    runnable, skipped, cache = [], [], {}
    for config in configs:
        key = (config.kind == "generation", config.framework)
        if key not in cache:
            cls = (
                engine_class(config.framework)
                if config.kind == "generation"
                else runtime(config.framework).adapter_class()
            )
            cache[key] = (cls, cls.is_available())
        cls, (available, why) = cache[key]
        reason = why if not available else cls.check_config(config)
        if reason:
            skipped.append((config, reason))
        else:
            runnable.append(config)
    return runnable, skipped
