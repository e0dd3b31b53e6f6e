"""Cheap readers of /proc and /sys for the sampler: parsers of bytes, discovery, and the reader
groups (sensors read together in one tick).

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
from pathlib import Path
from typing import Callable

Emit = Callable[[tuple, list], None]  # (metric names, their values): one call per group and tick
Note = Callable[[str, str], None]
MAX_FAILS = 5  # consecutive failed reads after which a sensor is no longer read

CLK_TCK = os.sysconf("SC_CLK_TCK")       # unit of the times in /proc/PID/stat and /proc/stat
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
    f = raw[raw.rindex(b")") + 2:].split(None, 40 if blkio else 22)  # split no further than needed
    # f[0] = state (field 3), f[1] = ppid (4), f[11..14] = utime stime cutime cstime (14-17),
    # f[21] = rss (24), f[39] = delayacct_blkio_ticks (42)
    ticks = int(f[39]) if blkio and len(f) > 39 else 0
    return int(f[1]), int(f[11]) + int(f[13]), int(f[12]) + int(f[14]), int(f[21]), ticks, f[0] in (b"Z", b"X")


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
    scale = 100.0 / total
    return ((d[0] + d[1]) * scale, (d[2] + d[5] + d[6]) * scale, d[4] * scale,
            (total - d[3] - d[4]) * scale)


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
JETSON_GPU_LOAD = ("sys/devices/gpu.0/load", "sys/devices/platform/gpu.0/load",
                   "sys/devices/platform/17000000.ga10b/load", "sys/devices/platform/17000000.gv11b/load",
                   "sys/devices/platform/bus@0/17000000.gpu/load")


def jetson_gpu_load(root: Path) -> Path | None:
    return next((root / p for p in JETSON_GPU_LOAD if (root / p).is_file()), None)


def children(pid: int, proc: str = "/proc") -> list[int] | None:
    """Direct children of `pid` from /proc/PID/task/*/children (a child is listed under the
    thread that forked it, so every thread is read). [] if the process is gone; None when the
    kernel has no children files (CONFIG_PROC_CHILDREN off). Plain strings and os.open: this
    runs a few times a second and Path objects tripled its cost."""
    base = f"{proc}/{pid}/task/"
    try:
        tids = os.listdir(base)
    except OSError:
        return []
    kids: list[int] = []
    for tid in tids:
        try:
            fd = os.open(f"{base}{tid}/children", os.O_RDONLY | os.O_CLOEXEC)
        except FileNotFoundError:
            if os.path.exists(f"{base}{tid}"):
                return None
            continue  # the thread ended between listdir and open
        except OSError:
            continue
        try:
            kids.extend(map(int, os.read(fd, 65536).split()))
        except OSError:
            pass
        finally:
            os.close(fd)
    return kids


def descendants(pid: int) -> list[int]:
    """Every descendant of `pid` (not pid itself); via psutil where the kernel lacks children files."""
    out: list[int] = []
    todo = [pid]
    while todo:
        kids = children(todo.pop())
        if kids is None:
            import psutil  # scans every /proc/*/stat: ~1 ms, so only as the fallback
            try:
                return [c.pid for c in psutil.Process(pid).children(recursive=True)]
            except psutil.Error:
                return []
        out.extend(kids)
        todo.extend(kids)
    return out


def delayacct_enabled(root: Path = Path("/")) -> bool:
    """Whether /proc/PID/stat's blkio-delay field counts: sysctl kernel.task_delayacct (off by
    default since Linux 5.14; before it, delay accounting was on unless booted with nodelayacct)."""
    return (_read_name(root / "proc/sys/kernel/task_delayacct") or "1") == "1"


class Unavailable(Exception):
    """A sensor group that cannot be used here; the message says why."""


# -- reader groups: sensors read together in one tick ---------------------------------------------

class Group:
    """Sensors read together. budget None: every tick; else a fraction of one core's wall time."""

    name = "group"
    budget: float | None = None

    def __init__(self) -> None:
        self.next_ns, self.cost_ns, self.reads, self.fails = 0, 0.0, 0, 0

    def read(self, t_ns: int, emit: Emit) -> None:
        raise NotImplementedError

    def close(self) -> None:
        pass


class _Proc:
    __slots__ = ("stat", "io", "smaps", "ppid", "last")

    def __init__(self, pid: int):
        self.stat = ProcFile(f"/proc/{pid}/stat", 1024)
        self.io: ProcFile | None = None
        self.smaps: ProcFile | None = None
        self.ppid, self.last = 0, None


class ProcessTree(Group):
    """rss, CPU and I/O of a pid and its descendants, every tick.

    The list of descendants is re-read every `refresh_ns`. Counters are followed per process
    (fields of `last`: user ticks, system ticks, blkio-delay ticks, read bytes, read syscalls,
    write bytes, each including the process's reaped children). When a child is reaped its
    counters move into its parent's (cutime/cstime, and the parent's /proc/PID/io), so the parent
    is credited with what was already counted for the child: nothing is counted twice, and the
    child's last moments still count. A process that exits between listing and reading is
    dropped quietly; when the worker itself exits (zombie or reaped) the tree has ended.
    """

    name = "process_tree"
    CPU = ("rss_bytes", "cpu_user_pct", "cpu_system_pct", "cpu_total_pct")
    IO = ("io_read_bytes", "io_read_ops", "io_write_bytes")
    NAMES = {False: (CPU, CPU + IO), True: (CPU + ("cpu_iowait_pct",), CPU + ("cpu_iowait_pct",) + IO)}

    def __init__(self, pid: int, note: Note, refresh_ns: int, iowait: bool):
        super().__init__()
        self.pid, self.note, self.refresh_ns, self.iowait = pid, note, refresh_ns, iowait
        self.procs: dict[int, _Proc] = {}
        self.credit: dict[int, list[int]] = {}
        self.io_total: list[int] = [0, 0, 0]
        self.t_prev = self.refresh_at = 0
        self.max_procs = 0
        self.ended = False

    def _open(self, pid: int) -> None:
        try:
            proc = _Proc(pid)
        except OSError:
            return  # exited between listing and opening
        try:
            proc.io = ProcFile(f"/proc/{pid}/io", 1024)
        except OSError as exc:
            self.note("io_read_bytes", f"/proc/{pid}/io: {exc.strerror}")
        self.procs[pid] = proc

    def _vanish(self, pid: int) -> None:
        """pid was reaped: its parent's counters will grow by what it had; credit what we counted."""
        proc = self.procs.pop(pid)
        if proc.last is not None and proc.ppid in self.procs:
            owed = self.credit.setdefault(proc.ppid, [0] * 6)
            for i, v in enumerate(proc.last):
                owed[i] += v
        for f in (proc.stat, proc.io, proc.smaps):
            if f is not None:
                f.close()

    def refresh(self) -> None:
        if self.ended:
            return
        listed = {self.pid, *descendants(self.pid)}
        for pid in listed - self.procs.keys():
            self._open(pid)
        for pid in self.procs.keys() - listed:
            try:
                self.procs[pid].stat.read()
                self.procs.pop(pid).stat.close()  # still alive: it left the tree (re-parented)
            except OSError:
                self._vanish(pid)
        self.max_procs = max(self.max_procs, len(self.procs))

    def sample(self) -> tuple[int, list[int]]:
        """(rss bytes, counter increments since the last sample) over the tree."""
        rss, delta, gone = 0, [0, 0, 0, 0, 0, 0], []
        deltas = []
        for pid, proc in self.procs.items():
            try:
                ppid, user, system, rss_pages, blkio, exited = parse_pid_stat(proc.stat.read(), self.iowait)
            except (OSError, ValueError, IndexError):
                gone.append(pid)  # reaped: ESRCH from the kept-open file
                continue
            if exited and pid == self.pid:
                gone.append(pid)  # the worker has ended (a zombie until the orchestrator reaps it)
                continue
            io = (0, 0, 0)
            if proc.io is not None:
                try:
                    io = parse_pid_io(proc.io.read())
                except ProcessLookupError:
                    gone.append(pid)
                    continue
                except (OSError, ValueError, IndexError, KeyError) as exc:
                    self.note("io_read_bytes", f"/proc/{pid}/io: {exc}")
                    proc.io.close()
                    proc.io = None
            cur = (user, system, blkio, *io)
            last = proc.last
            deltas.append((pid, [c - p for c, p in zip(cur, last)] if last else list(cur)))
            proc.ppid, proc.last = ppid, cur
            rss += rss_pages
        for pid in gone:
            self._vanish(pid)
        if self.pid in gone:  # the worker has ended, and with it the tree: nothing more to sample
            self.ended = True
            self.close()
            return 0, delta
        for pid, d in deltas:
            owed = self.credit.get(pid)
            if owed:  # a reaped child's counters arrived (or will) in this process's totals
                for i in range(6):
                    take = min(owed[i], max(d[i], 0))
                    d[i] -= take
                    owed[i] -= take
                if not any(owed):
                    del self.credit[pid]
            delta = [a + b if b > 0 else a for a, b in zip(delta, d)]
        return rss * PAGE_SIZE, delta

    def prime(self, t_ns: int) -> None:
        self.refresh()
        if self.pid not in self.procs:
            self.note("process_tree", f"process {self.pid} not found")
            self.ended = True
        _, delta = self.sample()
        self.io_total = delta[3:]
        self.t_prev, self.refresh_at = t_ns, t_ns + self.refresh_ns

    def read(self, t_ns: int, emit: Emit) -> None:
        if self.ended:
            return
        if t_ns >= self.refresh_at:
            self.refresh()
            self.refresh_at = t_ns + self.refresh_ns
        rss, d = self.sample()
        if self.ended or not self.procs:
            return
        scale = 100.0 / CLK_TCK / max((t_ns - self.t_prev) / 1e9, 1e-9)
        self.t_prev = t_ns
        user, system = d[0] * scale, d[1] * scale
        values = [rss, user, system, user + system]
        if self.iowait:
            values.append(d[2] * scale)
        has_io = any(p.io is not None for p in self.procs.values())
        if has_io:
            totals = self.io_total
            totals[0] += d[3]
            totals[1] += d[4]
            totals[2] += d[5]
            values += totals
        emit(self.NAMES[self.iowait][has_io], values)

    def close(self) -> None:
        for pid in list(self.procs):
            self._vanish(pid)


class Uss(Group):
    """USS of the tree from /proc/PID/smaps_rollup (budgeted: it walks page tables)."""

    name = "uss_bytes"

    def __init__(self, tree: ProcessTree, budget: float):
        super().__init__()
        self.tree, self.budget, self.psutil = tree, budget, False

    def read(self, t_ns: int, emit: Emit) -> None:
        total = read = 0
        for pid, proc in list(self.tree.procs.items()):
            try:
                if self.psutil:
                    import psutil
                    total += psutil.Process(pid).memory_full_info().uss
                else:
                    if proc.smaps is None:
                        proc.smaps = ProcFile(f"/proc/{pid}/smaps_rollup", 2048)
                    total += parse_smaps_rollup_uss(proc.smaps.read())
                read += 1
            except FileNotFoundError:
                if pid == self.tree.pid and not self.psutil:  # kernel < 4.14: no smaps_rollup
                    self.tree.note("uss_bytes", "no /proc/PID/smaps_rollup (kernel < 4.14): psutil, slower")
                    self.psutil = True
            except ProcessLookupError:
                pass  # exited since the tree was read; the next tree read drops it
            except Exception as exc:  # psutil.NoSuchProcess is the same; EACCES etc. are not
                if type(exc).__name__ != "NoSuchProcess":
                    raise
        if read:
            emit(("uss_bytes",), [total])


class SysCpu(Group):
    """System-wide and per-core CPU from /proc/stat."""

    name = "sys_cpu"

    def __init__(self, root: Path):
        super().__init__()
        self.file = ProcFile(root / "proc/stat", 16384)
        self.prev = parse_proc_stat(self.file.read())
        self.names: tuple[str, ...] | None = None

    def read(self, t_ns: int, emit: Emit) -> None:
        cur = parse_proc_stat(self.file.read())
        if cur.keys() != self.prev.keys():  # a CPU went on- or offline
            self.prev = {k: self.prev.get(k, v) for k, v in cur.items()}
            self.names = None
        if self.names is None:
            self.names = tuple(n for k in cur for n in (
                ("sys_cpu_user_pct", "sys_cpu_system_pct", "sys_cpu_iowait_pct", "sys_cpu_total_pct")
                if k == "cpu" else (f"cpu_core{k[3:]}_pct",)))
        values: list[float] = []
        prev = self.prev
        for label, now in cur.items():
            pcts = cpu_pcts(prev[label], now)
            if label == "cpu":
                values += pcts
            else:
                values.append(pcts[3])
        self.prev = cur
        emit(self.names, values)

    def close(self) -> None:
        self.file.close()


class SysDisk(Group):
    """Reads of the whole physical disks, cumulative from the sampler's start: one kept-open
    /sys/block/DISK/stat per disk (the kernel formats just that disk), else /proc/diskstats."""

    name = "sys_io"

    def __init__(self, root: Path):
        super().__init__()
        disks = physical_disks(root)
        self.files = [ProcFile(root / "sys/block" / d / "stat", 512) for d in sorted(disks or ())]
        self.diskstats = None if self.files else ProcFile(root / "proc/diskstats", 16384)
        self.first = self._counters()

    def _counters(self) -> tuple[int, int]:
        if self.diskstats is not None:
            return parse_diskstats(self.diskstats.read(), None)
        ops = nbytes = 0
        for f in self.files:
            o, b = parse_block_stat(f.read())
            ops, nbytes = ops + o, nbytes + b
        return ops, nbytes

    def read(self, t_ns: int, emit: Emit) -> None:
        ops, nbytes = self._counters()
        emit(("sys_io_read_bytes", "sys_io_read_ops"), [nbytes - self.first[1], ops - self.first[0]])

    def close(self) -> None:
        for f in [*self.files, self.diskstats]:
            if f is not None:
                f.close()


class SysfsGauges(Group):
    """Small sysfs value files (temperatures, Jetson GPU load) times a scale; budgeted."""

    def __init__(self, name: str, inputs: list[tuple[str, Path]], scale: float, budget: float,
                 note: Note):
        super().__init__()
        self.name, self.scale, self.budget, self.note = name, scale, budget, note
        self.files: list[list] = []  # [metric, ProcFile, consecutive failures]
        for metric, path in inputs:
            try:
                self.files.append([metric, ProcFile(path, 64), 0])
            except OSError as exc:
                note(metric, f"{path}: {exc.strerror}")
        if not self.files:
            raise Unavailable("none of its files could be opened")

    def read(self, t_ns: int, emit: Emit) -> None:
        names, values = [], []
        for entry in list(self.files):
            try:
                values.append(int(entry[1].read()) * self.scale)
                names.append(entry[0])
                entry[2] = 0
            except (OSError, ValueError) as exc:
                self.note(entry[0], f"{entry[1].path}: {exc}")
                entry[2] += 1
                if entry[2] >= MAX_FAILS:
                    self.files.remove(entry)
                    entry[1].close()
        emit(tuple(names), values)

    def close(self) -> None:
        for entry in self.files:
            entry[1].close()
