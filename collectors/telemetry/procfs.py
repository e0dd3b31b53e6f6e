"""Cheap readers of /proc and /sys for the sampler: parsers of bytes and discovery. The reader
groups that use them (sensors read together in one tick) are in groups.py.

Cost rules, measured on the 2-core VM the project is developed on (bench/sampler_cost.py): a
file opened once and re-read with os.pread(fd, n, 0) costs one syscall (warm: ~1-9 us for
/proc/PID/stat, /proc/PID/io, /proc/stat, /sys/block/DISK/stat), against ~12 us for
open+read+close and 10-20 us per psutil call; psutil's recursive children() scans all of /proc
(~1 ms) where /proc/PID/task/*/children costs ~10 us. So files are kept open. An open fd of
/proc/PID/* also pins that process: once it is reaped the read raises ProcessLookupError, so a
reused pid is never misread. Parsers take bytes (tests feed them fake content); discovery and
system groups take a `root` so tests run them on fake trees.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

Emit = Callable[[tuple, list], None]  # (metric names, their values): one call per group and tick
Note = Callable[[str, str], None]
MAX_FAILS = 5  # consecutive failed reads after which a sensor is no longer read

CLK_TCK = os.sysconf("SC_CLK_TCK")  # unit of the times in /proc/PID/stat and /proc/stat
PAGE_SIZE = os.sysconf("SC_PAGE_SIZE")


class ProcFile:
    """One file kept open and re-read from offset 0 (one pread per read)."""

    __slots__ = ("path", "fd", "size")

    def __init__(self, path: Path | str, size: int = 4096):
        self.path = str(path)
        self.fd = os.open(self.path, os.O_RDONLY | os.O_CLOEXEC)
        self.size = size

    def read(self) -> bytes:
        data = os.pread(self.fd, self.size, 0)
        while len(data) >= self.size:  # the buffer was too small: grow it and read again
            self.size *= 4
            data = os.pread(self.fd, self.size, 0)
        return data

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


# -- parsers ---------------------------------------------------------------------------------------


def parse_pid_stat(raw: bytes, blkio: bool = True) -> tuple[int, int, int, int, int, bool]:
    """/proc/PID/stat -> (ppid, user ticks, system ticks, rss pages, blkio-delay ticks, exited).

    exited: a zombie (state Z or X) waiting to be reaped: its times are final, its memory gone.

    User and system include the process's reaped children (cutime, cstime): the kernel moves a
    child's times there when it is waited for, so the sum over a tree stays continuous. The
    command name may hold spaces and ')' so fields are counted after the last ')'.
    """
    f = raw[raw.rindex(b")") + 2 :].split(None, 40 if blkio else 22)  # split no further than needed
    # f[0] = state (field 3), f[1] = ppid (4), f[11..14] = utime stime cutime cstime (14-17),
    # f[21] = rss (24), f[39] = delayacct_blkio_ticks (42)
    ticks = int(f[39]) if blkio and len(f) > 39 else 0
    return (
        int(f[1]),
        int(f[11]) + int(f[13]),
        int(f[12]) + int(f[14]),
        int(f[21]),
        ticks,
        f[0] in (b"Z", b"X"),
    )


def parse_pid_io(raw: bytes) -> tuple[int, int, int]:
    """/proc/PID/io -> (read_bytes from storage, read syscalls, write_bytes to storage).

    Lines rchar, wchar, syscr, syscw, read_bytes, write_bytes, ... in this order since 2.6.20;
    read by position (checked), with a by-name fallback should that ever change."""
    f = raw.split()
    if f[4] == b"syscr:" and f[8] == b"read_bytes:" and f[10] == b"write_bytes:":
        return int(f[9]), int(f[5]), int(f[11])
    values = dict(zip(f[0::2], f[1::2]))
    return int(values[b"read_bytes:"]), int(values[b"syscr:"]), int(values[b"write_bytes:"])


def parse_smaps_rollup_uss(raw: bytes) -> int:
    """USS in bytes from /proc/PID/smaps_rollup: Private_Clean + Private_Dirty + Private_Hugetlb."""
    total_kib = 0
    for line in raw.splitlines():
        if line.startswith(b"Private_"):
            total_kib += int(line.split()[1])
    return total_kib * 1024


def parse_proc_stat(raw: bytes) -> dict[str, tuple[int, ...]]:
    """The cpu lines of /proc/stat: {'cpu': (user nice system idle iowait irq softirq steal), 'cpu0': ...}.

    guest and guest_nice are left out: the kernel already counts them in user and nice.
    """
    out = {}
    for line in raw.split(b"\n"):
        if not line.startswith(b"cpu"):
            break  # the cpu lines come first
        parts = line.split()
        values = tuple(map(int, parts[1:9]))
        out[parts[0].decode()] = values + (0,) * (8 - len(values))
    return out


def cpu_pcts(prev: tuple[int, ...], cur: tuple[int, ...]) -> tuple[float, float, float, float]:
    """(user, system, iowait, total busy) in % of the capacity of the CPUs of one /proc/stat line.

    user = user + nice; system = system + irq + softirq; busy = everything but idle and iowait
    (steal counts as busy, as in psutil). 0 when no tick elapsed.
    """
    d = [c - p for c, p in zip(cur, prev)]
    total = sum(d)
    if total <= 0:
        return 0.0, 0.0, 0.0, 0.0
    # 100 * part / total, the division last: total * (100 / total) is 100.00000000000001 for 108
    # of the totals below 2,000 (11 ticks, say), a share past its range; this is exact at 100
    return (
        100.0 * (d[0] + d[1]) / total,
        100.0 * (d[2] + d[5] + d[6]) / total,
        100.0 * d[4] / total,
        100.0 * (total - d[3] - d[4]) / total,
    )


def parse_diskstats(raw: bytes, disks: frozenset[str] | None) -> tuple[int, int]:
    """(read ops completed, read bytes) summed over `disks` of /proc/diskstats; disks None: every
    device that is not a partition of another listed one (sda1 of sda, mmcblk0p1 of mmcblk0)."""
    rows = {f[2].decode(): f for f in (line.split() for line in raw.splitlines()) if len(f) >= 6}
    if disks is None:
        disks = frozenset(n for n in rows if not any(n != o and n.startswith(o) for o in rows))
    ops = sectors = 0
    for name in disks & rows.keys():
        ops += int(rows[name][3])
        sectors += int(rows[name][5])
    return ops, sectors * 512  # diskstats sectors are 512 bytes whatever the device's block size


def parse_block_stat(raw: bytes) -> tuple[int, int]:
    """(read ops completed, read bytes) of one disk from /sys/block/DISK/stat (diskstats' fields
    from the 4th on, for that disk alone)."""
    f = raw.split()
    return int(f[0]), int(f[2]) * 512


def parse_millidegrees(raw: bytes) -> float:
    """A sysfs temperature (millidegrees Celsius, as thermal zones and hwmon write it) in degrees."""
    return int(raw.strip()) / 1000.0


# -- discovery -------------------------------------------------------------------------------------


def physical_disks(root: Path) -> frozenset[str] | None:
    """Whole disks backed by a device (sda, nvme0n1, mmcblk0, vda): /sys/block entries with a
    `device` link. Partitions, loop, zram and device-mapper volumes are left out so bytes are
    not counted twice. None when /sys/block is missing (then every diskstats line counts)."""
    block = root / "sys/block"
    if not block.is_dir():
        return None
    return frozenset(p.name for p in block.iterdir() if (p / "device").exists())


def _read_name(path: Path) -> str | None:
    try:
        return path.read_text().strip() or None
    except OSError:
        return None


def temperature_inputs(root: Path) -> tuple[list[tuple[str, Path]], str]:
    """[(metric, file)] of temperatures and where they came from.

    Thermal zones first (`temp_c:<zone type>`; a type shared by several zones gets the zone
    number appended); hwmon inputs (`temp_c:<chip>/<label>`, what psutil.sensors_temperatures
    reads) only when there is no thermal zone, since most zones are mirrored in hwmon.
    """
    found: list[tuple[str, Path]] = []
    zones = sorted((root / "sys/class/thermal").glob("thermal_zone*"), key=lambda p: int(p.name[12:] or 0))
    types = [_read_name(z / "type") or z.name for z in zones]
    for zone, kind in zip(zones, types):
        name = kind if types.count(kind) == 1 else f"{kind}-{zone.name[12:]}"
        found.append((f"temp_c:{name}", zone / "temp"))
    if found:
        return found, "thermal"
    for chip in sorted((root / "sys/class/hwmon").glob("hwmon*")):
        chip_name = _read_name(chip / "name") or chip.name
        for inp in sorted(chip.glob("temp*_input")):
            label = _read_name(chip / inp.name.replace("_input", "_label")) or inp.name.split("_")[0]
            found.append((f"temp_c:{chip_name}/{label}", inp))
    return found, "hwmon"


# Jetson iGPU load (per mille), across L4T releases; NVML does not exist there.
JETSON_GPU_LOAD = (
    "sys/devices/gpu.0/load",
    "sys/devices/platform/gpu.0/load",
    "sys/devices/platform/17000000.ga10b/load",
    "sys/devices/platform/17000000.gv11b/load",
    "sys/devices/platform/bus@0/17000000.gpu/load",
)


def jetson_gpu_load(root: Path) -> Path | None:
    return next((root / p for p in JETSON_GPU_LOAD if (root / p).is_file()), None)


class Descendants:
    """A process's descendants from /proc/PID/task/*/children (a child is listed under the
    thread that forked it, so every thread is read), via psutil where the kernel lacks children
    files (CONFIG_PROC_CHILDREN off).

    The tree is re-listed a few times a second and a worker has a thread per core or more, so
    each thread's children file is kept open between listings (one pread, not open+read+close);
    only the task folders are listed afresh, and the files of threads no longer listed are
    closed. A kept file of a thread that ended reads empty; its tid could name a new thread
    only after the pid space wrapped within one listing interval. Plain strings and os calls:
    Path objects tripled the cost."""

    def __init__(self, proc: str = "/proc"):
        self.proc = proc
        self.fds: dict[str, int] = {}  # children file -> fd, for the threads seen last time
        self.seen: set[str] = set()

    def __call__(self, pid: int) -> list[int]:
        """Every descendant of `pid` (not pid itself)."""
        out: list[int] = []
        todo = [pid]
        self.seen = set()
        while todo:
            kids = self.children(todo.pop())
            if kids is None:
                import psutil  # scans every /proc/*/stat: ~1 ms, so only as the fallback

                try:
                    return [c.pid for c in psutil.Process(pid).children(recursive=True)]
                except psutil.Error:
                    return []
            out.extend(kids)
            todo.extend(kids)
        for path in self.fds.keys() - self.seen:  # threads that ended, processes that left
            os.close(self.fds.pop(path))
        return out

    def children(self, pid: int) -> list[int] | None:
        """Direct children of `pid`; [] if the process is gone; None without children files."""
        base = f"{self.proc}/{pid}/task/"
        try:
            tids = os.listdir(base)
        except OSError:
            return []
        kids: list[int] = []
        for tid in tids:
            path = f"{base}{tid}/children"
            try:
                raw = self._read(path)
            except FileNotFoundError:
                if os.path.exists(f"{base}{tid}"):
                    return None
                continue  # the thread ended between listdir and open
            except OSError:
                continue
            kids.extend(map(int, raw.split()))
        return kids

    def _read(self, path: str) -> bytes:
        fd = self.fds.get(path)
        if fd is not None:
            try:
                raw = os.pread(fd, 65536, 0)
                self.seen.add(path)
                return raw
            except OSError:  # whatever the kept file says now, the path is tried afresh
                os.close(self.fds.pop(path))
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
        self.fds[path] = fd
        self.seen.add(path)
        return os.pread(fd, 65536, 0)

    def close(self) -> None:
        for fd in self.fds.values():
            os.close(fd)
        self.fds.clear()


def delayacct_enabled(root: Path = Path("/")) -> bool:
    """Whether /proc/PID/stat's blkio-delay field counts: sysctl kernel.task_delayacct (off by
    default since Linux 5.14; before it, delay accounting was on unless booted with nodelayacct)."""
    return (_read_name(root / "proc/sys/kernel/task_delayacct") or "1") == "1"
