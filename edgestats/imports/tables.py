"""The rows of an `edgestats import`, checked and converted, as the runs and run_results tables.

Separate from importer.py, which reads, plans and checks the file and writes what it made: this
module holds only what a run row of the store gets from a file's row (its run id from the file's
content, the row number and the import's identity; its status; its config naming where it came
from) and the Arrow types the columns are written with.
"""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa

from edgestats.contracts import dataset_name, device_uuid, name_uuid
from edgestats.imports.checks import SourceColumn
from edgestats.imports.columns import CANONICAL
from edgestats.imports.identity import identity_key
from edgestats.version import __version__

# The runs columns every imported run gets, before those the file's columns give.
RUN_FIELDS = (
    "run_id",
    "device_id",
    "kind",
    "status",
    "error_text",
    "extra",
    "config",
    "source",
    "edgestats_version",
)


def _arrow_type(column: str) -> pa.DataType:
    spec = CANONICAL.get(column)
    if spec is not None and spec.type == "int":
        return pa.int64()
    if spec is not None and spec.type == "float":
        return pa.float64()
    return pa.string()  # ids, text and JSON; DuckDB casts to UUID / JSON on insert


def build_tables(
    rows: list[dict], plan: list[SourceColumn], *, kind: str, path: Path, file_hash: str, identity: dict
):
    """The runs and run_results rows, as Arrow tables, from the checked and converted rows; and the
    numbers of the rows stored as diverged."""
    run_columns = [
        c.canonical.name
        for c in plan
        if c.canonical and c.canonical.table == "runs" and c.canonical.name not in ("kind", "status")
    ]
    result_columns = [c.canonical.name for c in plan if c.canonical and c.canonical.table == "run_results"]
    runs: dict[str, list] = {k: [] for k in [*RUN_FIELDS, *run_columns]}
    results: dict[str, list] = {k: [] for k in ["run_id", *result_columns]}
    diverged = []
    key = identity_key(identity)
    for row in rows:
        run_id = str(name_uuid("import", file_hash, *([key] if key else []), str(row["_row"])))
        status, error = row.get("status") or "ok", None
        if row["_nan_columns"] and not row.get("status"):
            # The published tables write NaN for a run whose training did not converge.
            status, error = "diverged", f"imported NaN/inf in {', '.join(row['_nan_columns'])}"
            diverged.append(row["_row"])
        fields = {
            "run_id": run_id,
            "device_id": device_uuid(row["device"]),
            "kind": kind,
            "status": status,
            "error_text": error,
            "extra": row.get("_extra"),
            "config": _run_config(row, path, file_hash, identity),
            "source": f"import:{path.name}",
            "edgestats_version": __version__,
        }
        for name, value in fields.items():
            runs[name].append(value)
        for name in run_columns:
            runs[name].append(row.get(name))
        results["run_id"].append(run_id)
        for name in result_columns:
            results[name].append(row.get(name))
    runs_table = pa.table({k: pa.array(v, _arrow_type(k)) for k, v in runs.items()})
    results_table = pa.table(
        {k: pa.array(v, pa.string() if k == "run_id" else pa.float64()) for k, v in results.items()}
    )
    return runs_table, results_table, diverged


def _run_config(row: dict, path: Path, file_hash: str, identity: dict) -> str:
    """The run's config: where it was imported from. Sets row["dataset"] to its one spelling."""
    # one spelling per dataset on both sides (contracts.dataset_name); the table's own stays in config
    written = row.get("dataset")
    row["dataset"] = dataset_name(written)
    return json.dumps(
        {
            "imported_from": path.name,
            "row": row["_row"],
            "sha256": file_hash,
            "import": identity,
            **({"dataset_as_written": written} if written != row["dataset"] else {}),
        }
    )
