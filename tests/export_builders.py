"""Two-device results DBs and per-device row counts for the Parquet export's tests."""

from __future__ import annotations

import uuid
from pathlib import Path

import duckdb
from builders import make_results_db, write_inference_run, write_training_run

from edgestats.exports.append import append_parquet
from edgestats.exports.parquet import export_parquet
from edgestats.store.results import Store

ALL_TABLES = {
    "devices",
    "runs",
    "run_results",
    "phases",
    "latencies",
    "samples",
    "baselines",
    "epochs",
    "batches",
    "phase_energies",
    "sensor_notes",
    "schema_migrations",
}

# Independent of the exporter: how each table's rows belong to a device, in SQL on the DB.
DEVICE_OF = {
    "devices": "device_id",
    "runs": "device_id",
    "baselines": "device_id",
    "schema_migrations": "NULL",
}
DEVICE_VIA_RUN = "(SELECT r.device_id FROM runs r WHERE r.run_id = t.run_id)"


def make_two_device_db(path: Path) -> tuple[Path, uuid.UUID, uuid.UUID]:
    """What `merge` produces from two devices' files: two devices, their runs, a baseline,
    an imported-style run with run_results, and JSON facts."""
    with Store.open(path) as store:
        nano = store.register_device(
            {
                "name": "jetson-nano",
                "arch": "aarch64",
                "cores": 4,
                "facts": {"l4t": "32.7.1", "rails": ["VDD_IN"]},
            }
        )
        rpi = store.register_device(
            {"name": "rpi4", "arch": "aarch64", "cores": 4, "mem_total_bytes": 4 << 30}
        )
        for i in range(3):
            write_inference_run(store, nano, seed=i, framework=["pytorch", "onnxruntime"][i % 2])
        for i in range(2):
            write_inference_run(store, rpi, seed=100 + i, n_latencies=30, n_samples=20)
        write_training_run(store, nano, seed=0)
        write_training_run(store, rpi, seed=100)
        store.write_run(
            {
                "device_id": rpi,
                "kind": "inference",
                "status": "error",
                "error_text": "out of memory",
                "framework": "tflite",
                "model": "mobilenet_v2",
                "source": "import:old.csv",
                "hyperparameters": {"batch_size": 8},
            },
            results={"latency_ms": 12.5, "energy_j": 3.25},
        )
        store.write_baseline(
            {
                "device_id": nano,
                "seconds": 60.0,
                "source": "jetson",
                "mean_power_w": 1.9,
                "std_power_w": 0.05,
                "n": 600,
            }
        )
    return path, nano, rpi


def expected_counts(db: Path) -> dict[str, dict[str | None, int]]:
    """Per table: rows per device_id (None for rows without one), straight from the DB."""
    con = duckdb.connect(str(db), read_only=True)
    try:
        out = {}
        for table in ALL_TABLES:
            device = DEVICE_OF.get(table, DEVICE_VIA_RUN)
            rows = con.execute(
                f"SELECT CAST({device} AS VARCHAR) AS d, count(*) FROM {table} t GROUP BY d"
            ).fetchall()
            out[table] = dict(rows)
        return out
    finally:
        con.close()


def as_counts(rows) -> dict[str | None, int]:
    return {d: n for d, n in rows}


def two_device_lake(folder: Path, names: tuple[str, str] = ("dev-0", "dev-1"), seed_step: int = 7) -> Path:
    """Two devices' DBs in `folder` (d0.duckdb, d1.duckdb) and folder/lake: the first exported,
    the second appended, so the lake holds a file of each kind of write."""
    dbs = [
        make_results_db(folder / f"d{i}.duckdb", device_name=name, seed0=seed_step * i)
        for i, name in enumerate(names)
    ]
    export_parquet(dbs[0], folder / "lake")
    append_parquet(dbs[1], folder / "lake")
    return folder / "lake"
