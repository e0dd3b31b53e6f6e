"""What `collect` measures around each worker: the sampler and the power source, and the rows they
turn into. The rows are samples, energy per phase and per inference, and unavailable sensors.

The orchestrator owns one `Telemetry` for a whole sweep: the power source is probed once (an
explicitly named source that is unusable stops the sweep before any run; `auto` that finds
none records why on every run), and a fresh `Sampler` watches each worker.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa

from edgestats.collectors.power.attribution import (
    CumulativeEnergy,
    device_energy,
    inference_energies,
    phase_energy_rows,
    window_energies,
)
from edgestats.collectors.power.base import PowerSource, PowerSourceError
from edgestats.collectors.power.meter_csv import ClockAnchor
from edgestats.collectors.power.selection import path_source_hint, select_power_source
from edgestats.collectors.telemetry.sampler import SampleBatch, Sampler
from edgestats.contracts import POWER_PREFIX
from edgestats.errors import EdgestatsError
from edgestats.formatting import counted

DEFAULT_SAMPLE_HZ = 10.0
METER_MARGIN_NS = 2_000_000_000  # meter samples kept either side of the run, for edge interpolation
SAMPLES_SCHEMA = pa.schema([("t_ns", pa.int64()), ("metric", pa.string()), ("value", pa.float64())])


@dataclass
class Telemetry:
    """The sweep's sampling rate and power source. `sample_hz` 0 turns the sampler off (and with
    it every live power source: only an external meter's file still gives energy)."""

    sample_hz: float = DEFAULT_SAMPLE_HZ
    power: PowerSource | None = None
    power_name: str = "none"  # the source's label (rapl, csv:<file name>, ...) or none
    not_used: dict[str, str] = field(default_factory=dict)  # source -> why auto passed it over

    @classmethod
    def open(
        cls,
        power_spec: str = "auto",
        sample_hz: float = DEFAULT_SAMPLE_HZ,
        *,
        clock_offset_s: float = 0.0,
        root: Path = Path("/"),
    ) -> Telemetry:
        if sample_hz < 0:
            raise EdgestatsError(f"--sample-hz {sample_hz:g}: give a rate in Hz (0 turns sampling off)")
        source, name, reasons = select_power_source(power_spec, root, clock_offset_s=clock_offset_s)
        if source is not None and source.live and not sample_hz:
            raise EdgestatsError(
                f"--power {name} is read by the sampler, which --sample-hz 0 turns off; "
                "give a rate (e.g. --sample-hz 10) or --power none"
            )
        return cls(sample_hz, source, source.label if source is not None else name, reasons)

    @property
    def rails(self) -> list[str]:
        return self.power.total_rails() if self.power is not None else []

    def no_energy_reason(self) -> str | None:
        if self.power is not None:
            return None
        if not self.not_used:
            return "no power source: --power none"
        tried = "; ".join(f"{name}: {why}" for name, why in self.not_used.items())
        return (
            f"no power source found ({tried}). "
            f"Energy needs one: {path_source_hint()}, or fix the reason above"
        )

    def start_sampler(self, pid: int) -> Sampler | None:
        if not self.sample_hz:
            return None
        live = [self.power] if self.power is not None and self.power.live else []
        return Sampler(pid, self.sample_hz, extra_sources=live).start()

    def close(self) -> None:
        if self.power is not None:
            self.power.close()


@dataclass
class RunTelemetry:
    """One run's telemetry rows, ready for Store.write_run, and what goes into the runs row."""

    samples: pa.Table
    phase_energies: dict[str, list] | None
    latency_energy_j: list[float | None] | None
    sensor_notes: dict[str, list]
    run_columns: dict[str, Any]
    stats: dict[str, Any]
    series: CumulativeEnergy | None = None  # the device total, for windows cut later (epochs)


def run_telemetry(
    telemetry: Telemetry | None,
    batch: SampleBatch | None,
    phases: list[dict],
    latencies: list[dict],
    clock: dict | None,
) -> RunTelemetry:
    """Samples (the sampler's plus the meter's, on the monotonic clock) and gross energy per
    phase and per inference, from one run's sampler batch and spool contents."""
    telemetry = telemetry or Telemetry(sample_hz=0)
    samples = batch.to_arrow() if batch is not None and len(batch) else SAMPLES_SCHEMA.empty_table()
    notes = list(batch.unavailable) if batch is not None else []
    if batch is None:
        notes.append(
            (
                "sampler",
                "not sampled: --sample-hz 0, or the run was recovered after its `edgestats collect` died",
            )
        )
    reason = telemetry.no_energy_reason()
    if telemetry.power is not None and not telemetry.power.live:
        meter, why = _meter_samples(telemetry.power, phases, clock)
        if meter is not None:
            samples = pa.concat_tables([samples.cast(SAMPLES_SCHEMA), meter])
        reason = reason or why
    elif telemetry.power is not None and batch is None:
        reason = "the power source is read by the sampler, which did not run"
    series = None
    if reason is None:
        series, reason = device_energy(samples, telemetry.rails)
    energies = phase_energy_rows(series, phases, reason) if telemetry.power is not None else None
    per_inference = None
    if series is not None:
        per_inference = inference_energies(
            series, [r.get("s") for r in latencies], [r["ns"] for r in latencies]
        )
    columns = {
        "sample_hz": telemetry.sample_hz or None,
        "power_source": telemetry.power_name if telemetry.power is not None else None,
        "power_rails": telemetry.rails or None,
        "energy_unavailable_reason": reason,
    }
    return RunTelemetry(
        samples,
        energies,
        per_inference,
        {"sensor": [s for s, _ in notes], "reason": [r for _, r in notes]},
        columns,
        batch.stats if batch is not None else {},
        series,
    )


def with_epoch_energy(epochs: pa.Table, series: CumulativeEnergy | None) -> pa.Table:
    """The epochs table plus the gross energy of each epoch's training and testing windows."""

    def column(start: str, end: str) -> pa.Array:
        starts, ends = epochs[start].to_pylist(), epochs[end].to_pylist()
        return pa.array(window_energies(series, starts, ends), pa.float64())

    return epochs.append_column(
        "train_energy_gross_j", column("train_start_ns", "train_end_ns")
    ).append_column("test_energy_gross_j", column("test_start_ns", "test_end_ns"))


def _meter_samples(
    source: PowerSource, phases: list[dict], clock: dict | None
) -> tuple[pa.Table | None, str | None]:
    """An external meter's samples around the run, mapped to the monotonic clock through the
    run's (monotonic, unix) anchor, as power_w:meter rows."""
    starts = [p["start_ns"] for p in phases if p.get("start_ns") is not None]
    ends = [p["end_ns"] for p in phases if p.get("end_ns") is not None]
    if not clock or not starts or not ends:
        return None, "the run recorded no phase windows to match the meter's log against"
    anchor = ClockAnchor(clock["monotonic_ns"], clock["unix_ns"])
    try:
        source.load()  # again: a meter logging live has appended to its file since the last run
        rows = source.samples_monotonic_ns(min(starts) - METER_MARGIN_NS, max(ends) + METER_MARGIN_NS, anchor)
    except PowerSourceError as exc:
        return None, str(exc)
    if len(rows) < 2:
        return None, (
            f"the meter's log {source.path} has no samples around this run (host clock "
            f"{anchor.to_unix_s(min(starts)):.1f}-{anchor.to_unix_s(max(ends)):.1f} s); "
            "check that it was logging, and --clock-offset if its clock differs from this host's"
        )
    rail = source.rails()[0]
    return pa.table(
        {
            "t_ns": pa.array([t for t, _ in rows], pa.int64()),
            "metric": pa.array([f"{POWER_PREFIX}{rail}"] * len(rows), pa.string()),
            "value": pa.array([w for _, w in rows], pa.float64()),
        }
    ), None


def describe_sensors(root: Path = Path("/")) -> list[dict[str, Any]]:
    """Every sensor group the sampler reads, for `edgestats doctor`: usable, or why not."""
    from edgestats.collectors.telemetry import procfs

    rows: list[dict[str, Any]] = []

    def row(name: str, usable: bool, detail: str) -> None:
        rows.append({"name": name, "usable": usable, "detail": detail})

    row(
        "process memory, CPU, I/O",
        (root / "proc").is_dir(),
        "RSS/USS, CPU user/system, read bytes/ops of the worker's tree (/proc)",
    )
    delay = procfs.delayacct_enabled(root)
    row(
        "per-process I/O wait",
        delay,
        "kernel delay accounting is on"
        if delay
        else "needs kernel delay accounting: sysctl -w kernel.task_delayacct=1 "
        "(system-wide iowait is still recorded)",
    )
    stat = (root / "proc/stat").is_file()
    row("system CPU and per-core use", stat, "/proc/stat" if stat else f"{root / 'proc/stat'} is missing")
    disks = procfs.physical_disks(root)
    row(
        "disk reads",
        bool(disks),
        f"disks: {', '.join(sorted(disks))}" if disks else f"no physical disk under {root / 'sys/block'}",
    )
    temps, kind = procfs.temperature_inputs(root)
    row(
        "temperatures",
        bool(temps),
        f"{counted(len(temps), kind + ' sensors')}: {', '.join(m.split(':', 1)[1] for m, _ in temps[:6])}"
        if temps
        else f"no thermal zone or hwmon temperature under {root / 'sys/class'}",
    )
    jetson = procfs.jetson_gpu_load(root)
    if jetson:
        row("GPU utilisation (Jetson)", True, str(jetson))
    else:
        usable, detail = _nvml_gpus()
        row("GPU utilisation, memory, power (NVML)", usable, detail)
    return rows


def _nvml_gpus() -> tuple[bool, str]:
    try:
        import pynvml
    except ImportError:
        return False, "pynvml not installed (pip install 'edgestats[nvidia]')"
    try:
        pynvml.nvmlInit()
    except Exception as exc:
        return False, f"NVML not usable: {exc}"
    try:
        names = [
            pynvml.nvmlDeviceGetName(pynvml.nvmlDeviceGetHandleByIndex(i))
            for i in range(pynvml.nvmlDeviceGetCount())
        ]
        return bool(names), ", ".join(
            n.decode() if isinstance(n, bytes) else str(n) for n in names
        ) or "no GPU found"
    except Exception as exc:
        return False, f"NVML query failed: {exc}"
    finally:
        try:
            pynvml.nvmlShutdown()
        except Exception:
            pass
