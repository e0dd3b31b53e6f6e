"""NVIDIA GPUs through NVML (the `pynvml` module of nvidia-ml-py).

Volta and newer count total energy in the driver (nvmlDeviceGetTotalEnergyConsumption, mJ
since the driver loaded): exact, whatever the sampling rate. Older GPUs answer NotSupported
and give only power (nvmlDeviceGetPowerUsage, mW, itself a ~1 s average on many boards),
which is integrated like any other sampled power. Rails are "gpu0", "gpu1", ... by NVML index.

Tests pass a fake module with the same function names; the code path is the one the real
library takes.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from types import ModuleType
from typing import Any

from edgestats.collectors.power.base import SYSTEM_ROOT, PowerSource, PowerSourceError


class NvmlSource(PowerSource):
    name = "nvml"

    def __init__(self, root: Path = SYSTEM_ROOT, *, nvml: ModuleType | Any | None = None):
        super().__init__(root)  # NVML reads no files: root only keeps the interface uniform
        self._nvml = nvml
        self._initialised = False
        self._handles: list[tuple[str, Any]] = []
        self._has_energy: dict[str, bool] = {}
        self._has_power: dict[str, bool] = {}
        self._first_mj: dict[str, int] = {}

    def is_available(self) -> tuple[bool, str | None]:
        if self._nvml is None:
            try:
                self._nvml = importlib.import_module("pynvml")
            except ImportError:
                return False, "Python module 'pynvml' is not installed: pip install 'edgestats[nvidia]'"
        nvml = self._nvml
        try:
            nvml.nvmlInit()
            self._initialised = True
            count = nvml.nvmlDeviceGetCount()
            handles = [(f"gpu{i}", nvml.nvmlDeviceGetHandleByIndex(i)) for i in range(count)]
        except nvml.NVMLError as e:
            # On a machine without the driver: "NVML Shared Library Not Found".
            return False, f"NVML cannot be used: {e} (no NVIDIA driver, or no GPU visible)"
        for rail, handle in handles:
            energy = self._probe(handle, nvml.nvmlDeviceGetTotalEnergyConsumption)
            power = self._probe(handle, nvml.nvmlDeviceGetPowerUsage)
            if energy is None and power is None:
                continue  # e.g. consumer boards that report neither: leave the rail out
            self._has_energy[rail] = energy is not None
            self._has_power[rail] = power is not None
            self._handles.append((rail, handle))
        if not self._handles:
            return False, (
                f"NVML sees {count} GPU(s) but none reports energy or power" if count else "NVML sees no GPU"
            )
        return True, None

    def _probe(self, handle: Any, function: Any) -> int | None:
        try:
            return function(handle)
        except self._nvml.NVMLError_NotSupported:
            return None

    def rails(self) -> list[str]:
        return [rail for rail, _ in self._handles]

    def energy_rails(self) -> list[str]:
        """Rails with a driver energy counter (the rest are integrated from power)."""
        return [rail for rail, has in self._has_energy.items() if has]

    def _sample(self) -> tuple[dict[str, float], dict[str, float]]:
        if not self._handles:
            raise PowerSourceError("NVML source read before is_available() found its GPUs")
        nvml = self._nvml
        energy_j, power_w = {}, {}
        for rail, handle in self._handles:
            try:
                if self._has_energy[rail]:
                    total_mj = nvml.nvmlDeviceGetTotalEnergyConsumption(handle)
                    # Joules since our first read, like every other source's counters.
                    first_mj = self._first_mj.setdefault(rail, total_mj)
                    energy_j[rail] = (total_mj - first_mj) / 1e3
                if self._has_power[rail]:
                    power_w[rail] = nvml.nvmlDeviceGetPowerUsage(handle) / 1e3
            except nvml.NVMLError as e:
                raise PowerSourceError(f"NVML read of {rail} failed: {e}") from e
        return energy_j, power_w

    def close(self) -> None:
        if self._initialised:
            self._initialised = False
            try:
                self._nvml.nvmlShutdown()
            except self._nvml.NVMLError:
                pass  # already shut down by someone else sharing the library: nothing to release


def probe_detail(pynvml: Any) -> dict[str, Any]:
    """doctor's facts about an imported pynvml: the driver and how many GPUs it sees. Without a
    driver the module imports but cannot be used (Jetson boards have no NVML)."""
    from edgestats.collectors.host.probes import Unusable

    try:
        pynvml.nvmlInit()
    except Exception as exc:
        raise Unusable(
            f"nvmlInit failed: {exc} (no NVIDIA driver here; Jetson boards have no NVML)"
        ) from None
    try:
        driver = pynvml.nvmlSystemGetDriverVersion()
        return {
            "driver_version": driver.decode() if isinstance(driver, bytes) else driver,
            "device_count": int(pynvml.nvmlDeviceGetCount()),
        }
    finally:
        pynvml.nvmlShutdown()
