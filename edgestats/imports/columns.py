"""The canonical columns of `edgestats import` (docs/architecture.md §9) and the units their names carry.

A source column is matched by its normalised name (edgestats/contracts.py, `normalise`: the store
names the run_extra view's columns by the same rule): exactly (`training_time_s`), or as the same
quantity in another unit of the same kind (`training_time_min`, `latency_us`, `mem_max_gib`,
`accuracy_frac`), which is converted. A unit of the wrong kind (`latency_mb`) is an error.
Memory units follow ps/top: `_mb` is a mebibyte (2**20 bytes), and kb/gb are read the same way.
"""

from __future__ import annotations

from dataclasses import dataclass

from edgestats.contracts import INT32_MAX, normalise

# Factor from each unit to the family's base unit (seconds, MiB, joules, watts, percent).
UNIT_FACTORS: dict[str, dict[str, float]] = {
    "time": {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0, "sec": 1.0, "min": 60.0, "h": 3600.0},
    "memory": {
        "bytes": 2.0**-20,
        "b": 2.0**-20,
        "kb": 2.0**-10,
        "kib": 2.0**-10,
        "mb": 1.0,
        "mib": 1.0,
        "gb": 1024.0,
        "gib": 1024.0,
    },
    "energy": {"j": 1.0, "mj": 1e-3, "kj": 1e3, "wh": 3600.0, "mwh": 3.6},
    "power": {"w": 1.0, "mw": 1e-3, "kw": 1e3},
    "pct": {"pct": 1.0, "frac": 100.0},
}
UNIT_FAMILY = {unit: family for family, units in UNIT_FACTORS.items() for unit in units}
# The count columns (batch_size, threads, ...) are INTEGER in the runs table (schema/0001_initial.sql):
# a value above this does not fit. The ranges of the configuration columns, which collect takes
# them in too: edgestats/contracts.py, CONFIG_RANGES.
INT_MAX = INT32_MAX
# Counts stored as BIGINT (schema/0006_dataset_size.sql): a dataset's bytes pass 2 GiB.
BIGINT_COLUMNS = ("dataset_bytes", "kv_cache_bytes", "model_params")
BIGINT_MAX = 2**63 - 1

# A run's place in a fleet (schema/0010_fleet.sql): a table's device_class and unit_id columns.
FLEET_COLUMNS = ("device_class", "unit_id")


@dataclass(frozen=True)
class Canonical:
    name: str
    table: str  # "runs", "run_results" or "devices"
    type: str  # "text", "int" or "float"
    family: str | None = None  # unit family of a measured quantity

    @property
    def base(self) -> str:
        """The name without its unit suffix (latency for latency_ms)."""
        return self.name.rsplit("_", 1)[0] if self.family else self.name

    @property
    def unit(self) -> str | None:
        return self.name.rsplit("_", 1)[1] if self.family else None


def _columns() -> dict[str, Canonical]:
    text_runs = [
        "framework",
        "runtime",
        "model",
        "dataset",
        "kind",
        "optimizer",
        "storage",
        "precision",
        "accelerator",
        "status",
    ]
    int_runs = ["batch_size", "iterations", "epochs", "threads", "num_workers"]
    measured = {
        "training_time_s": "time",
        "testing_time_s": "time",
        "accuracy_pct": "pct",
        "latency_ms": "time",
        # a run's percentiles as a benchmark tool prints them (0007)
        "latency_p50_ms": "time",
        "latency_p90_ms": "time",
        "latency_p99_ms": "time",
        "load_time_s": "time",
        "total_time_s": "time",
        "mem_avg_mb": "memory",
        "mem_max_mb": "memory",
        "cpu_user_pct": "pct",
        "cpu_system_pct": "pct",
        "cpu_iowait_pct": "pct",
        "cpu_total_pct": "pct",
        "energy_j": "energy",
        "power_w": "power",
        "fetch_stall_s": "time",
        "compute_s": "time",
        "e2e_s": "time",
        "epoch_time_s": "time",
    }
    cols = [Canonical("device", "devices", "text")]
    cols += [Canonical(n, "runs", "text") for n in (*text_runs, *FLEET_COLUMNS)]
    cols += [Canonical(n, "runs", "int") for n in int_runs]
    # epochs_run: the epochs actually run, as a table gives them (fractional when derived from
    # iterations x batch / dataset size); epochs stays the whole number a run was set to do.
    cols += [Canonical("learning_rate", "runs", "float"), Canonical("epochs_run", "runs", "float")]
    # the dataset's size (0006): samples per split, image size; its bytes may come in any memory
    # unit (dataset_gb, dataset_mb), converted to bytes as the other memory columns are
    cols += [
        Canonical(n, "runs", "int")
        for n in (
            "dataset_samples",
            "dataset_test_samples",
            "dataset_image_h",
            "dataset_image_w",
            "dataset_image_c",
        )
    ]
    cols += [Canonical("dataset_bytes", "runs", "int", "memory")]
    cols += [Canonical(n, "run_results", "float", fam) for n, fam in measured.items()]
    cols += _generation_columns()
    return {c.name: c for c in cols}


def _generation_columns() -> list[Canonical]:
    """A generation run's columns (schema 0009) and the model's parameters (0001) a tool reports."""
    # its shape and KV cache: prompt and generated tokens, tokens in the cache before the prompt
    cols = [
        Canonical(n, "runs", "int") for n in ("prompt_tokens", "new_tokens", "context_depth", "model_params")
    ]
    cols += [Canonical("kv_cache_bytes", "runs", "int", "memory")]
    cols += [Canonical("ttft_ms", "run_results", "float", "time")]  # time to first token
    # rates: no unit family, so 'per_s' is never read as seconds and never converted
    cols += [Canonical(n, "run_results", "float") for n in ("prefill_tokens_per_s", "decode_tokens_per_s")]
    return cols


CANONICAL: dict[str, Canonical] = _columns()
_BY_BASE = {c.base: c for c in CANONICAL.values() if c.family}

# Other names published tables give a canonical column under, matched exactly (after
# normalise) like the canonical names themselves: they are the same quantity, not a guess.
ALIASES: dict[str, str] = {
    "epochs_derived": "epochs_run",
    "epochs_actual": "epochs_run",
    "actual_epochs": "epochs_run",
    "epochs_completed": "epochs_run",
    "epochs_trained": "epochs_run",
    "epochs_run": "epochs_run",
    "epochs_set": "epochs",
    "max_epochs": "epochs",
    "train_samples": "dataset_samples",
    "training_samples": "dataset_samples",
    "n_train": "dataset_samples",
    "dataset_train_samples": "dataset_samples",
    "test_samples": "dataset_test_samples",
    "n_test": "dataset_test_samples",
    "image_height": "dataset_image_h",
    "image_width": "dataset_image_w",
    "image_channels": "dataset_image_c",
}


class UnitMismatch(ValueError):
    """A column names a known quantity in a unit of the wrong kind."""


def resolve(name: str) -> tuple[Canonical, float] | None:
    """(canonical column, factor to multiply values by), or None for a column to keep as extra.

    Raises UnitMismatch for a known quantity in a unit of another kind.
    """
    if name in CANONICAL:
        return CANONICAL[name], 1.0
    if name in ALIASES:
        return CANONICAL[ALIASES[name]], 1.0
    if "_" not in name:
        return None
    base, unit = name.rsplit("_", 1)
    target = _BY_BASE.get(base)
    if target is None or unit not in UNIT_FAMILY:
        return None
    if UNIT_FAMILY[unit] != target.family:
        raise UnitMismatch(
            f"column {name!r}: '{unit}' is a {UNIT_FAMILY[unit]} unit but {base} is a {target.family} "
            f"({target.name}); fix the header or rename it with --map"
        )
    factors = UNIT_FACTORS[target.family]
    return target, factors[unit] / factors[target.unit]


# Names published tables give a measure under that are not the same quantity for sure (a total
# training time may include testing): never mapped by themselves, only suggested as a --map.
SUGGESTIONS: dict[str, str] = {
    "total_training_time": "training_time_s",
    "total_train_time": "training_time_s",
    "train_time": "training_time_s",
    "training_duration": "training_time_s",
    "time_to_train": "training_time_s",
    "training": "training_time_s",
    "test_time": "testing_time_s",
    "total_testing_time": "testing_time_s",
    "inference_time": "latency_ms",
    "inference_latency": "latency_ms",
    "mean_latency": "latency_ms",
    "avg_latency": "latency_ms",
    "average_latency": "latency_ms",
    "median_latency": "latency_ms",
    "time_per_inference": "latency_ms",
    "acc": "accuracy_pct",
    "top1": "accuracy_pct",
    "top_1": "accuracy_pct",
    "top1_accuracy": "accuracy_pct",
    "top_1_accuracy": "accuracy_pct",
    "test_accuracy": "accuracy_pct",
    "peak_memory": "mem_max_mb",
    "max_memory": "mem_max_mb",
    "memory_peak": "mem_max_mb",
    "peak_rss": "mem_max_mb",
    "memory": "mem_max_mb",
    "avg_memory": "mem_avg_mb",
    "mean_memory": "mem_avg_mb",
    "model_load_time": "load_time_s",
    "loading_time": "load_time_s",
    "total_energy": "energy_j",
    "avg_power": "power_w",
    "mean_power": "power_w",
    "time_per_epoch": "epoch_time_s",
    "epoch_duration": "epoch_time_s",
    "stall_time": "fetch_stall_s",
    "end_to_end_time": "e2e_s",
    "e2e_time": "e2e_s",
    "num_threads": "threads",
    "n_threads": "threads",
    "batchsize": "batch_size",
    "bs": "batch_size",
    "lr": "learning_rate",
    "workers": "num_workers",
    "dataset_size": "dataset_bytes",
    "size_on_disk": "dataset_bytes",
    "num_samples": "dataset_samples",
    "samples": "dataset_samples",
    "images": "dataset_samples",
    "num_images": "dataset_samples",
}


def _split_unit(name: str) -> tuple[str, str | None]:
    if "_" in name:
        base, unit = name.rsplit("_", 1)
        if unit in UNIT_FAMILY:
            return base, unit
    return name, None


def suggest(name: str, *, numeric: bool) -> str | None:
    """The --map target a column that matched nothing probably means ('Total Training Time (s)'
    -> 'training_time_s', 'latency_msec' -> 'latency_ms'), or None. Numeric columns are compared
    with the measures and counts, text columns with the text columns only."""
    import difflib  # only when a column matched nothing

    normal = normalise(name)
    base, unit = _split_unit(normal)
    target = SUGGESTIONS.get(base) or SUGGESTIONS.get(normal)
    if target is None:
        if numeric:
            names = {c.base: c.name for c in CANONICAL.values() if c.family or c.type in ("int", "float")}
        else:
            names = {c.name: c.name for c in CANONICAL.values() if c.type == "text"}
        for candidate in (normal, base):
            close = difflib.get_close_matches(candidate, list(names), n=1, cutoff=0.8)
            if close:
                target = names[close[0]]
                break
        else:
            # every word of exactly one measure's name in the column's (total_latency -> latency)
            words = set(base.split("_"))
            contained = [full for short, full in names.items() if set(short.split("_")) <= words]
            target = contained[0] if numeric and len(contained) == 1 else None
    if target is None or (not numeric and CANONICAL[target].type != "text"):
        return None
    spec = CANONICAL[target]
    # keep the column's own unit where it is one of the measure's, so the values are converted
    if spec.family and unit and UNIT_FAMILY.get(unit) == spec.family:
        return f"{spec.base}_{unit}"
    return target
