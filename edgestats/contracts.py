"""Facts both sides of the data flow must agree on (docs/architecture.md §3). It is one module that
imports only the standard library, so every layer (collectors, store, imports, analysis, reports)
may import it without importing another layer.

- Ids: the uuid5 namespace and rule of deterministic ids; a device's id from its name.
- The samples table: the metric-name prefixes of a power source's rails.
- Datasets: the one spelling of a dataset name in runs.dataset.
- Column names: the one normal form of a column's name, for import's canonical columns and the
  store's run_extra view alike.
- Training factors: which columns count iterations, and which can draw a chart's series.
- Ranges: the values a run's configuration may take, for collect and import alike; what counts
  as a control character in a name.
"""

from __future__ import annotations

import re
import uuid

# Namespace for deterministic ids (uuid5): the same device or imported row always gets the
# same id, so importing or merging twice changes nothing.
EDGESTATS_NAMESPACE = uuid.UUID("5f0c3c1e-8d2a-4a57-9e57-6a1b2c3d4e5f")


def name_uuid(*parts: str) -> uuid.UUID:
    """A deterministic UUID for a name (device name, imported file + row)."""
    return uuid.uuid5(EDGESTATS_NAMESPACE, "\x1f".join(parts))


def device_uuid(name: str) -> str:
    """The device-id rule: collected devices (from their machine-id or hostname) and imported
    ones (from the table's device column) get the same id for the same name."""
    return str(name_uuid("device", name))


# Metric names of a power source's rails in the samples table: a cumulative counter (joules
# since the first read) and instantaneous power, each followed by the rail's name.
ENERGY_PREFIX, POWER_PREFIX = "energy_j:", "power_w:"


def dataset_name(text: str | None) -> str | None:
    """The one spelling of a dataset name, for runs.dataset on both sides (the importer's column
    and the collector's format or image folder name), so that runs of one dataset group together:
    lowercase, every character but a-z and 0-9 dropped ('MNIST' -> 'mnist', 'CIFAR-10' ->
    'cifar10', 'Tiny ImageNet' -> 'tinyimagenet'). A name with none of those is kept lowercase
    and trimmed rather than emptied. schema/0006_dataset_size.sql applies the same rule in SQL
    to the runs stored before."""
    if text is None or not text.strip():
        return None
    return re.sub(r"[^a-z0-9]", "", text.lower()) or text.strip().lower()


def normalise(name: str) -> str:
    """The normal form of a column's name, by which `import` matches a source column to its
    canonical one (imports/columns.py) and the store names an imported extra column in the view
    run_extra (store/run_extra.py): 'Training Time (s)' -> 'training_time_s'; 'Accuracy (%)' ->
    'accuracy_pct'."""
    text = name.strip().lower().replace("%", "pct").replace("#", "")
    text = re.sub(r"[^a-z0-9]+", "_", text)
    return re.sub(r"_+", "_", text).strip("_")


# Training: the columns that count iterations (hyperparams fits time through the origin on
# them; the report draws them on the x axis), and those that can colour a chart's series.
ITERATION_FACTORS = ("iterations", "epochs")
SERIES_CANDIDATES = ("batch_size", "learning_rate", "optimizer")


# Ranges of a run's configuration, one table for both ways a run reaches a DB: `collect` refuses
# an option outside its range before the first run (collectors/core/sweep_limits.py), `import` a cell
# outside it before the DB is opened (imports/checks.py). (lowest, highest), both allowed. The
# counts are INTEGER columns of runs (schema/0001_initial.sql), so none passes 2**31 - 1.
# Where collect is stricter (more than one run can hold, or this machine can use), its own
# limits say so: collectors/core/sweep_limits.py.
INT32_MAX = 2**31 - 1
CONFIG_RANGES: dict[str, tuple[float, float]] = {
    "batch_size": (1, INT32_MAX),
    "threads": (1, INT32_MAX),  # intra-op threads; the framework's own default is NULL, not 0
    "iterations": (0, INT32_MAX),  # 0: a training run without a step cap (its epochs decide)
    "epochs": (1, INT32_MAX),
    "num_workers": (0, INT32_MAX),  # 0: no data-loading workers (no pipelining)
    "learning_rate": (1e-12, float("inf")),
}


# Control characters (U+0000-U+001F, U+007F-U+009F: NUL, tab, newline, escape, ...), as a
# character class that Python's re and DuckDB's regexp functions (RE2) read alike. A name (device,
# framework, model, ...) holding one prints as something else, or breaks the lines and files it
# is written into: collect and import refuse it.
CONTROL_CHARACTERS = r"[\x00-\x1f\x7f-\x9f]"


def control_character(text: str) -> str | None:
    """The first control character of `text` as 'U+001B', or None."""
    found = re.search(CONTROL_CHARACTERS, text)
    return f"U+{ord(found.group()):04X}" if found else None


MAX_DEVICE_NAME_CHARS = 64  # a device's name is a label in tables and charts


def device_name_problem(name: str) -> str | None:
    """Why `name` cannot name a device ('is too long (10,000 characters)'), or None: the one rule of
    `collect --device-name` and `import --device`. Surrounding blanks do not count."""
    text = name.strip()
    found = control_character(text)
    if found:
        return f"contains a control character ({found})"
    if not text:
        return "is empty"
    if len(text) > MAX_DEVICE_NAME_CHARS:
        return f"is too long ({len(text):,} characters)"
    return None
