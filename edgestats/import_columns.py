"""The canonical columns of `edgestats import` (docs/architecture.md §9) and the units their names carry.

A source column is matched by its normalised name: exactly (`training_time_s`), or as the same
quantity in another unit of the same kind (`training_time_min`, `latency_us`, `mem_max_gib`,
`accuracy_frac`), which is converted. A unit of the wrong kind (`latency_mb`) is an error.
Memory units follow ps/top: `_mb` is a mebibyte (2**20 bytes), and kb/gb are read the same way.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# Factor from each unit to the family's base unit (seconds, MiB, joules, watts, percent).
UNIT_FACTORS: dict[str, dict[str, float]] = {
    "time": {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0, "sec": 1.0, "min": 60.0, "h": 3600.0},
    "memory": {"bytes": 2.0**-20, "b": 2.0**-20, "kb": 2.0**-10, "kib": 2.0**-10, "mb": 1.0, "mib": 1.0,
               "gb": 1024.0, "gib": 1024.0},
    "energy": {"j": 1.0, "mj": 1e-3, "kj": 1e3, "wh": 3600.0, "mwh": 3.6},
    "power": {"w": 1.0, "mw": 1e-3, "kw": 1e3},
    "pct": {"pct": 1.0, "frac": 100.0},
}
UNIT_FAMILY = {unit: family for family, units in UNIT_FACTORS.items() for unit in units}
# The count columns (batch_size, threads, ...) are INTEGER in the runs table (schema/0001_initial.sql):
# a value above this does not fit.
INT_MAX = 2**31 - 1


@dataclass(frozen=True)
class Canonical:
    name: str
    table: str  # "runs", "run_results" or "devices"
    type: str   # "text", "int" or "float"
    family: str | None = None  # unit family of a measured quantity

    @property
    def base(self) -> str:
        """The name without its unit suffix (latency for latency_ms)."""
        return self.name.rsplit("_", 1)[0] if self.family else self.name

    @property
    def unit(self) -> str | None:
        return self.name.rsplit("_", 1)[1] if self.family else None


def _columns() -> dict[str, Canonical]:
    text_runs = ["framework", "runtime", "model", "dataset", "kind", "optimizer", "storage", "precision", "status"]
    int_runs = ["batch_size", "iterations", "epochs", "threads", "num_workers"]
    measured = {
        "training_time_s": "time", "testing_time_s": "time", "accuracy_pct": "pct", "latency_ms": "time",
        "load_time_s": "time", "total_time_s": "time", "mem_avg_mb": "memory", "mem_max_mb": "memory",
        "cpu_user_pct": "pct", "cpu_system_pct": "pct", "cpu_iowait_pct": "pct", "cpu_total_pct": "pct",
        "energy_j": "energy", "power_w": "power", "fetch_stall_s": "time", "compute_s": "time", "e2e_s": "time",
    }
    cols = [Canonical("device", "devices", "text")]
    cols += [Canonical(n, "runs", "text") for n in text_runs]
    cols += [Canonical(n, "runs", "int") for n in int_runs]
    cols += [Canonical("learning_rate", "runs", "float")]
    cols += [Canonical(n, "run_results", "float", fam) for n, fam in measured.items()]
    return {c.name: c for c in cols}


CANONICAL: dict[str, Canonical] = _columns()
_BY_BASE = {c.base: c for c in CANONICAL.values() if c.family}


class UnitMismatch(ValueError):
    """A column names a known quantity in a unit of the wrong kind."""


def normalise(name: str) -> str:
    """'Training Time (s)' -> 'training_time_s'; 'Accuracy (%)' -> 'accuracy_pct'."""
    text = name.strip().lower().replace("%", "pct").replace("#", "")
    text = re.sub(r"[^a-z0-9]+", "_", text)
    return re.sub(r"_+", "_", text).strip("_")


def resolve(name: str) -> tuple[Canonical, float] | None:
    """(canonical column, factor to multiply values by), or None for a column to keep as extra.

    Raises UnitMismatch for a known quantity in a unit of another kind.
    """
    if name in CANONICAL:
        return CANONICAL[name], 1.0
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
