"""The sampler's reader groups: the sensors read together in one tick, each with its own
failure handling and read budget. Parsers and discovery are in procfs.py."""

from __future__ import annotations

from pathlib import Path

from edgestats.collectors.telemetry.procfs import (
    CLK_TCK,
    MAX_FAILS,
    PAGE_SIZE,
    Descendants,
    Emit,
    Note,
    ProcFile,
    cpu_pcts,
    parse_block_stat,
    parse_diskstats,
    parse_pid_io,
    parse_pid_stat,
    parse_proc_stat,
    parse_smaps_rollup_uss,
    physical_disks,
)


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
        self.descendants = Descendants()
        self.credit: dict[int, list[int]] = {}
        self.io_total: list[int] = [0, 0, 0]
        self.t_prev = self.refresh_at = 0
        self.max_procs = 0
        self.ended = self.has_io = False

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
        listed = {self.pid, *self.descendants(self.pid)}
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
        """(rss bytes, counter increments since the last sample) over the tree; sets `has_io`.

        Runs every tick, so the common case (no process gone, no credit owed) sums the
        increments in the one loop; `_settle` redoes the sum in the rare other case."""
        rss, delta, gone, deltas, has_io = 0, [0, 0, 0, 0, 0, 0], [], [], False
        iowait, worker = self.iowait, self.pid
        for pid, proc in self.procs.items():
            try:
                ppid, user, system, rss_pages, blkio, exited = parse_pid_stat(proc.stat.read(), iowait)
            except (OSError, ValueError, IndexError):
                gone.append(pid)  # reaped: ESRCH from the kept-open file
                continue
            if exited and pid == worker:
                gone.append(pid)  # the worker has ended (a zombie until the orchestrator reaps it)
                continue
            rb = ro = wb = 0
            if proc.io is not None:
                try:
                    rb, ro, wb = parse_pid_io(proc.io.read())
                    has_io = True
                except ProcessLookupError:
                    gone.append(pid)
                    continue
                except (OSError, ValueError, IndexError, KeyError) as exc:
                    self.note("io_read_bytes", f"/proc/{pid}/io: {exc}")
                    proc.io.close()
                    proc.io = None
            last = proc.last
            d = (
                [user - last[0], system - last[1], blkio - last[2], rb - last[3], ro - last[4], wb - last[5]]
                if last is not None
                else [user, system, blkio, rb, ro, wb]
            )
            deltas.append((pid, d))
            for i in range(6):  # a counter that went down (a closed io file) adds nothing
                if d[i] > 0:
                    delta[i] += d[i]
            proc.ppid, proc.last = ppid, (user, system, blkio, rb, ro, wb)
            rss += rss_pages
        self.has_io = has_io
        if gone or self.credit:
            return self._settle(gone, deltas, rss)
        return rss * PAGE_SIZE, delta

    def _settle(self, gone: list[int], deltas: list, rss: int) -> tuple[int, list[int]]:
        """sample()'s sum when processes went or a reaped child's counters are owed."""
        delta = [0, 0, 0, 0, 0, 0]
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
        has_io = self.has_io
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
        self.descendants.close()


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
    TOTAL = ("sys_cpu_user_pct", "sys_cpu_system_pct", "sys_cpu_iowait_pct", "sys_cpu_total_pct")

    def __init__(self, root: Path):
        super().__init__()
        self.file = ProcFile(root / "proc/stat", 16384)
        self.prev = parse_proc_stat(self.file.read())
        self.names: tuple[str, ...] | None = None

    def read(self, t_ns: int, emit: Emit) -> None:
        cur = parse_proc_stat(self.file.read())
        prev = self.prev
        if cur.keys() != prev.keys():  # a CPU went on- or offline
            prev = self.prev = {k: prev.get(k, v) for k, v in cur.items()}
            self.names = None
        if self.names is None:
            self.names = tuple(
                n for k in cur for n in (self.TOTAL if k == "cpu" else (f"cpu_core{k[3:]}_pct",))
            )
        values: list[float] = []
        for label, now in cur.items():
            if label == "cpu":
                values += cpu_pcts(prev[label], now)
                continue
            # cpu_pcts(...)[3] without its other three figures: the same arithmetic, fewer objects
            was = prev[label]
            total = sum(now) - sum(was)
            values.append(
                100.0 * (total - (now[3] - was[3]) - (now[4] - was[4])) / total if total > 0 else 0.0
            )
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

    def __init__(self, name: str, inputs: list[tuple[str, Path]], scale: float, budget: float, note: Note):
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
