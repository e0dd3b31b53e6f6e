"""Intel/AMD RAPL energy counters through the powercap sysfs interface.

/sys/class/powercap holds one folder per zone, flat (the class links subzones too):

    intel-rapl:0      name=package-0   energy_uj  max_energy_range_uj
    intel-rapl:0:0    name=core        (subzone of package 0)
    intel-rapl:0:1    name=uncore      (integrated GPU on client parts)
    intel-rapl:0:2    name=dram        (servers; a top-level zone on some)
    intel-rapl:1      name=psys        (whole SoC platform, on recent laptops)

Subzones are parts of their package: summing a package and its core double-counts.
`intel-rapl-mmio:*` duplicates the package counter through MMIO, so it is left out.
"""

from __future__ import annotations

import os
import platform
import re
from collections import Counter
from collections.abc import Callable
from pathlib import Path

from edgestats.collectors.power.base import SYSTEM_ROOT, PowerSource, PowerSourceError, read_sysfs_text
from edgestats.collectors.power.energy import EnergyCounter

POWERCAP = Path("sys/class/powercap")
_ZONE_RE = re.compile(r"^intel-rapl:(\d+)(?::(\d+))?$")

PERMISSION_HELP = (
    "RAPL energy counters are readable only by root since Linux 5.10 (CVE-2020-8694, the "
    "PLATYPUS power side channel). Grant read access until the next boot with "
    "`sudo chmod o+r /sys/class/powercap/intel-rapl:*/energy_uj`, or at every boot with a udev "
    "rule such as /etc/udev/rules.d/99-rapl.rules: "
    'ACTION=="add", SUBSYSTEM=="powercap", KERNEL=="intel-rapl:*", RUN+="/bin/chmod o+r /sys%p/energy_uj" '
    "(or run edgestats as root)."
)


class _Zone:
    def __init__(self, folder: Path, package: int, sub: int | None):
        self.folder, self.package, self.sub = folder, package, sub
        self.name = ""
        self.rail = ""
        self.counter: EnergyCounter | None = None
        self.energy_path = folder / "energy_uj"
        self.fd = -1  # energy_uj kept open (default reader only): one pread per read


class RaplSource(PowerSource):
    name = "rapl"

    def __init__(self, root: Path = SYSTEM_ROOT, *, reader: Callable[[Path], str] | None = None):
        super().__init__(root)
        # Looked up at construction, so tests can monkeypatch the module's read_sysfs_text.
        self._reader = reader or read_sysfs_text
        self._zones: list[_Zone] = []
        self._opened = False

    def is_available(self) -> tuple[bool, str | None]:
        base = self.root / POWERCAP
        if not base.is_dir():
            return False, f"{base} does not exist: {_no_powercap_cause(platform.machine())}"
        zones = _find_zones(base)
        if not zones:
            return False, (
                f"no intel-rapl zones in {base}: not an Intel/AMD CPU with RAPL, or its driver "
                "is not loaded (sudo modprobe intel_rapl_msr)"
            )
        denied: list[Path] = []
        for zone in zones:
            try:
                zone.name = self._reader(zone.folder / "name")
                max_range_uj = int(self._reader(zone.folder / "max_energy_range_uj"))
                self._reader(zone.folder / "energy_uj")  # the root-only one: try it now
            except PermissionError:
                denied.append(zone.folder / "energy_uj")
                continue
            except (OSError, ValueError) as e:
                return False, f"cannot read RAPL zone {zone.folder}: {e}"
            zone.counter = EnergyCounter(max_range_uj)
        if denied:
            return False, f"permission denied reading {', '.join(map(str, denied))}. {PERMISSION_HELP}"
        _name_rails(zones)
        self.close()
        self._zones = zones
        return True, None

    def _open_counters(self) -> None:
        """Keep each energy_uj open: the sampler may read them 1000 times a second, and a pread
        of an open sysfs file (the kernel formats it afresh at offset 0) costs a fraction of
        open+read+close. A reader given by the caller (tests: a PermissionError mid-run) is
        used as is. Opened on the first read, not by is_available(): doctor and auto-selection
        probe sources they never read or close."""
        self._opened = True
        if self._reader is not read_sysfs_text:
            return
        for zone in self._zones:
            try:
                zone.fd = os.open(zone.energy_path, os.O_RDONLY | os.O_CLOEXEC)
            except OSError:
                zone.fd = -1  # read through the reader, which raises the helpful error

    def close(self) -> None:
        self._opened = False
        for zone in self._zones:
            if zone.fd >= 0:
                os.close(zone.fd)
                zone.fd = -1

    def rails(self) -> list[str]:
        return [zone.rail for zone in self._zones]

    def total_rails(self) -> list[str]:
        """Packages plus DRAM (outside the package's count on client and server parts alike);
        core/uncore are inside their package. psys (whole platform) overlaps the packages, so
        it is the total only where there is no package zone."""
        packages = [z.rail for z in self._zones if z.sub is None and z.name.startswith("package")]
        dram = [z.rail for z in self._zones if z.name == "dram"]
        if packages:
            return packages + dram
        return [z.rail for z in self._zones if z.sub is None] or self.rails()

    def _sample(self) -> tuple[dict[str, float], dict[str, float]]:
        if not self._zones:
            raise PowerSourceError("RAPL source read before is_available() found its zones")
        if not self._opened:
            self._open_counters()
        energy_j = {}
        for zone in self._zones:
            try:
                # int() takes the bytes as they are, trailing newline included
                raw_uj = int(os.pread(zone.fd, 32, 0) if zone.fd >= 0 else self._reader(zone.energy_path))
            except PermissionError as e:
                raise PowerSourceError(
                    f"permission denied reading {zone.energy_path}. {PERMISSION_HELP}"
                ) from e
            energy_j[zone.rail] = zone.counter.update(raw_uj)
        return energy_j, {}


def _find_zones(base: Path) -> list[_Zone]:
    zones = []
    for folder in base.iterdir():
        match = _ZONE_RE.match(folder.name)
        if match:
            sub = match.group(2)
            zones.append(_Zone(folder, int(match.group(1)), int(sub) if sub is not None else None))
    # Numeric order, so intel-rapl:10 comes after intel-rapl:2 and each package before its parts.
    return sorted(zones, key=lambda z: (z.package, -1 if z.sub is None else z.sub))


def _name_rails(zones: list[_Zone]) -> None:
    """Rail = the zone's own name ("package-0", "core"); a subzone whose name repeats across
    packages (two sockets: two "core") becomes "package-1/core" so rails stay unique."""
    packages = {z.package: z.name for z in zones if z.sub is None}
    counts = Counter(z.name for z in zones)
    for zone in zones:
        parent = packages.get(zone.package, f"intel-rapl:{zone.package}")
        zone.rail = f"{parent}/{zone.name}" if zone.sub is not None and counts[zone.name] > 1 else zone.name


X86_MACHINES = ("x86_64", "amd64", "i386", "i686")


def _no_powercap_cause(machine: str) -> str:
    """Why a kernel has no powercap folder, for this CPU: RAPL is an x86 feature, so on an ARM
    board that is the whole answer, and on x86 it is never the answer."""
    if machine.lower() not in X86_MACHINES:
        return f"RAPL exists on x86 CPUs only, and this one is {machine or 'not x86'}"
    return "this kernel has no powercap interface (CONFIG_POWERCAP off, or a VM or container that hides it)"
