"""The rows of one collected run, built from its record, how it ended, its spool and its
telemetry, and written in one transaction. The orchestrator stores each run it ran through
here, and recovery.py each run a dead collect left behind, so both store the same rows."""

from __future__ import annotations

import sys
from dataclasses import asdict
from pathlib import Path
from typing import Any

import pyarrow as pa

from edgestats.collectors.core.provenance import fleet_columns
from edgestats.collectors.core.runconfig import auto_warmup_limit
from edgestats.collectors.core.spool import SpoolContents
from edgestats.collectors.generation.rows import with_generation
from edgestats.collectors.record import RunEnd, RunRecord
from edgestats.collectors.steady_state import detect
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
        "warmup": warmup_count(record, spool),
        "seed": config.seed,
        "repeat_index": config.repeat_index,
        "config": {**asdict(config), "sweep": record.sweep},
        "config_hash": config.config_hash(),
        "environment": {
            "versions": versions,
            # the adapter's environment; --warmup auto's decision goes beside it (store_run)
            "runtime_detail": {k: v for k, v in spool.environment.items() if k != "warmup_auto"},
            "model": spool.model,
            "thread_env": record.thread_env,
            "python": sys.version.split()[0],
            "clock": record.clock_fields,
            "cpu": record.cpu,
            "memory_limit_bytes": record.memory_limit_bytes,
            "worker_start": spool.start,
            "torn_spool_lines": spool.torn_lines,
            "sampler": tele.stats if tele is not None else {},
            **record.host,  # os_image, kernel, container: read when the collect started
        },
        **fleet_columns(record.sweep.get("settings") or {}),  # class, unit id, tags (0010)
        "started_at": record.started_at,
        "ended_at": end.ended_at,
        "edgestats_version": __version__,
        "source": "collect",
    }


def warmup_count(record: RunRecord, spool: SpoolContents) -> int:
    """The warm-up inferences of the run: the configured count, or with --warmup auto the count the
    detection decided (the warm-up latencies in the spool)."""
    if auto_warmup_limit(record.config.warmup) is None:
        return record.config.warmup
    return sum(1 for r in spool.latencies if r["w"])


def steady_state_columns(spool: SpoolContents) -> tuple[dict[str, Any], dict[str, Any]]:
    """runs.steady_from and runs.no_steady_state from the change-point analysis of all the run's
    latencies, warm-up included, in iteration order (collectors/steady_state.py); and what
    environment.steady_state keeps of it. steady_from is an iteration index (latencies.iteration);
    both are NULL where there are too few latencies to judge (and for training runs)."""
    lat = sorted(spool.latencies, key=lambda r: r["i"])
    verdict = detect([r["ns"] for r in lat])
    columns = {
        "steady_from": lat[verdict.steady_from]["i"] if verdict.steady_from is not None else None,
        "no_steady_state": verdict.no_steady_state,
    }
    if verdict.no_steady_state is None:
        return columns, {}
    detail: dict[str, Any] = {"block_latencies": verdict.block}
    if verdict.drift is not None:  # the trend left in the steady segment (or the last one tested)
        detail["steady_drift_pct"] = round(100 * verdict.drift, 3)
    if verdict.slope is not None and verdict.slope_se:
        detail["steady_drift_t"] = round(verdict.slope / verdict.slope_se, 2)
    return columns, detail


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
    if "warmup_auto" in spool.environment:  # as the worker decided it (collectors/worker.py)
        run["environment"]["warmup_auto"] = spool.environment["warmup_auto"]
    steady, steady_detail = steady_state_columns(spool)
    run.update(steady)
    if steady_detail:
        run["environment"]["steady_state"] = steady_detail
    # A run without the sentinel's figures (recovered after its collect died) is not judged: NULL
    run["noisy"], run["noise_reason"] = noise_columns(run["environment"].get("noise"))
    if record.config.kind == "training":  # epochs, batches and per-run totals (training/rows.py)
        run, training = with_training(run, record.config, spool)
        if training.get("epochs") is not None:
            training["epochs"] = with_epoch_energy(training["epochs"], tele.series)
        rows.update(training)
    if record.config.kind == "generation":  # prompt / generation lengths, KV cache (generation/rows.py)
        run = with_generation(run, record.config, spool)
    with store_waiting(db_path) as store:
        store.write_run(run, **rows)
