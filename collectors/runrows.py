"""The rows of one collected run, built from its record, how it ended, its spool and its
telemetry, and written in one transaction. The orchestrator stores each run it ran through
here, and recovery.py each run a dead collect left behind, so both store the same rows."""

from __future__ import annotations

import sys
from dataclasses import asdict
from pathlib import Path
from typing import Any

import pyarrow as pa

from edgestats.collectors.record import RunEnd, RunRecord
from edgestats.collectors.spool import SpoolContents
from edgestats.collectors.storeaccess import store_waiting
from edgestats.collectors.telemetry.sampler import SampleBatch
from edgestats.collectors.telemetry.session import RunTelemetry, Telemetry, run_telemetry, with_epoch_energy
from edgestats.collectors.training.rows import with_training
from edgestats.version import __version__


def run_row(
    record: RunRecord, end: RunEnd, spool: SpoolContents, tele: RunTelemetry | None = None
) -> dict[str, Any]:
    """The runs row of a collected run, from its record, how it ended and its spool."""
    config, versions = record.config, spool.versions
    telemetry_columns = tele.run_columns if tele is not None else {}
    return {
        **telemetry_columns,
        "run_id": str(record.run_id),
        "sweep_id": str(record.sweep_id) if record.sweep_id else None,
        "device_id": str(record.device_id),
        "kind": "inference",
        "status": end.status,
        "error_text": end.error_text,
        "framework": config.framework,
        "framework_version": next(iter(versions.values()), None),
        "runtime": spool.runtime or config.runtime,
        "model": config.model,
        "model_params": spool.model.get("params"),
        "model_flops": spool.model.get("flops"),
        "batch_size": config.batch_size,
        "threads": config.threads,
        "precision": config.precision,
        "accelerator": config.accelerator,
        "iterations": config.iterations,
        "warmup": config.warmup,
        "seed": config.seed,
        "repeat_index": config.repeat_index,
        "config": {**asdict(config), "sweep": record.sweep},
        "config_hash": config.config_hash(),
        "environment": {
            "versions": versions,
            "runtime_detail": spool.environment,
            "model": spool.model,
            "thread_env": record.thread_env,
            "python": sys.version.split()[0],
            "clock": record.clock_fields,
            "cpu": record.cpu,
            "memory_limit_bytes": record.memory_limit_bytes,
            "worker_start": spool.start,
            "torn_spool_lines": spool.torn_lines,
            "sampler": tele.stats if tele is not None else {},
        },
        "started_at": record.started_at,
        "ended_at": end.ended_at,
        "edgestats_version": __version__,
        "source": "collect",
    }


def phase_list(spool: SpoolContents) -> list[dict[str, Any]]:
    rows = sorted(spool.phases, key=lambda p: p["seq"])
    if spool.start and spool.start.get("spawn_ns"):
        # Process start-up (interpreter + edgestats) is harness time, before pCAMP's phases.
        rows = [
            {
                "phase": "process_start",
                "seq": -1,
                "start_ns": spool.start["spawn_ns"],
                "end_ns": spool.start["start_ns"],
            },
            *rows,
        ]
    return rows


def phase_rows(rows: list[dict[str, Any]]) -> pa.Table:
    return pa.table(
        {
            "seq": pa.array([p["seq"] for p in rows], pa.int32()),
            "phase": [p["phase"] for p in rows],
            "start_ns": pa.array([p["start_ns"] for p in rows], pa.int64()),
            "end_ns": pa.array([p.get("end_ns") for p in rows], pa.int64()),
        }
    )


def latency_rows(spool: SpoolContents, energy_gross_j: list[float | None] | None = None) -> pa.Table:
    lat = spool.latencies
    return pa.table(
        {
            "iteration": pa.array([r["i"] for r in lat], pa.int32()),
            "warmup": pa.array([bool(r["w"]) for r in lat], pa.bool_()),
            "start_ns": pa.array([r["s"] for r in lat], pa.int64()),
            "latency_ns": pa.array([r["ns"] for r in lat], pa.int64()),
            "energy_gross_j": pa.array(
                energy_gross_j if energy_gross_j is not None else [None] * len(lat), pa.float64()
            ),
        }
    )


def noise_columns(noise: dict[str, Any] | None) -> tuple[bool | None, str | None]:
    """runs.noisy and runs.noise_reason from environment.noise (None, None: not judged)."""
    if not noise:
        return None, None
    return bool(noise["noisy"]), "; ".join(noise["reasons"]) or None


def store_run(
    db_path: Path,
    telemetry: Telemetry,
    record: RunRecord,
    end: RunEnd,
    spool: SpoolContents,
    batch: SampleBatch | None = None,
    environment: dict[str, Any] | None = None,
) -> None:
    """Write one run with all its rows, in one transaction."""
    phases = phase_list(spool)
    tele = run_telemetry(telemetry, batch, phases, spool.latencies, record.clock_fields)
    rows = {
        "phases": phase_rows(phases),
        "latencies": latency_rows(spool, tele.latency_energy_j),
        "samples": tele.samples,
        "phase_energies": tele.phase_energies,
        "sensor_notes": tele.sensor_notes,
    }
    run = run_row(record, end, spool, tele)
    run["environment"].update(environment or {})
    # A run without the sentinel's figures (recovered after its collect died) is not judged: NULL
    run["noisy"], run["noise_reason"] = noise_columns(run["environment"].get("noise"))
    if record.config.kind == "training":  # epochs, batches and per-run totals (training/rows.py)
        run, training = with_training(run, record.config, spool)
        if training.get("epochs") is not None:
            training["epochs"] = with_epoch_energy(training["epochs"], tele.series)
        rows.update(training)
    with store_waiting(db_path) as store:
        store.write_run(run, **rows)
