"""The telemetry's /proc and /sys parsers and its system CPU group on fake trees: /proc/stat deltas
and CPUs coming and going, thermal zones, hwmon and disks, the per-process files. Separate from
test_sampler.py, which runs the sampler against real child processes."""

from __future__ import annotations

import pytest
from procfs_fakes import STAT_1, STAT_2, write_tree

from edgestats.collectors.telemetry import groups as sample_groups
from edgestats.collectors.telemetry import procfs


def test_proc_stat_deltas_on_a_fake_tree(tmp_path):
    assert procfs.parse_proc_stat(STAT_1.encode())["cpu1"] == (40, 0, 30, 400, 30, 0, 0, 0)
    # whole system: deltas user 60, system 40 + irq 5 + softirq 5, idle 80, iowait 20 -> total 210
    assert procfs.cpu_pcts((100, 10, 50, 800, 40, 0, 0, 0), (160, 10, 90, 880, 60, 5, 5, 0)) == pytest.approx(
        (60 / 210 * 100, 50 / 210 * 100, 20 / 210 * 100, 110 / 210 * 100)
    )
    root = write_tree(tmp_path, {"proc/stat": STAT_1})
    group = sample_groups.SysCpu(root)
    (root / "proc/stat").write_text(STAT_2)  # same inode: the kept-open file sees the new content
    out: dict[str, float] = {}
    group.read(0, lambda names, vals: out.update(zip(names, vals)))
    group.close()
    assert out["sys_cpu_user_pct"] == pytest.approx(60 / 210 * 100)
    assert out["sys_cpu_iowait_pct"] == pytest.approx(20 / 210 * 100)
    assert out["cpu_core0_pct"] == pytest.approx(60 / 100 * 100)  # cpu0: busy 60 of 100 ticks
    assert out["cpu_core1_pct"] == pytest.approx(
        50 / 110 * 100
    )  # cpu1: 20 + 20 + 5 + 5 busy, 40 idle, 20 iowait


def test_a_fully_busy_cpu_is_100_percent_exactly(tmp_path):
    """A stored sample read 100.00000000000001 %: 11 ticks all busy, as 11 * (100 / 11). The shares
    divide last, so a busy CPU is 100 % and no share leaves 0-100, for any tick count."""
    for ticks in (11, 22, 39, 151, 1999):
        user, system, iowait, busy = procfs.cpu_pcts((0,) * 8, (ticks, 0, 0, 0, 0, 0, 0, 0))
        assert (user, busy) == (100.0, 100.0) and system == iowait == 0.0
    root = write_tree(tmp_path, {"proc/stat": "cpu  0 0 0 0 0 0 0 0 0 0\ncpu0 0 0 0 0 0 0 0 0 0 0\n"})
    group = sample_groups.SysCpu(root)
    (root / "proc/stat").write_text("cpu  11 0 0 0 0 0 0 0 0 0\ncpu0 11 0 0 0 0 0 0 0 0 0\n")
    out: dict[str, float] = {}
    group.read(0, lambda names, vals: out.update(zip(names, vals)))
    group.close()
    assert out["cpu_core0_pct"] == out["sys_cpu_total_pct"] == 100.0


def test_proc_stat_cpu_coming_online_and_going_offline(tmp_path):
    """A CPU brought online gets a name and no delta on its first read; one taken offline
    drops out of the names."""
    root = write_tree(tmp_path, {"proc/stat": STAT_1})
    group = sample_groups.SysCpu(root)
    out: list[dict[str, float]] = []
    emit = lambda names, vals: out.append(dict(zip(names, vals)))  # noqa: E731
    online = STAT_2.replace("intr", "cpu2 10 0 10 80 0 0 0 0 0 0\nintr")
    for text in (online, online.replace("cpu2 10 0 10 80", "cpu2 30 0 10 100"), STAT_2):
        (root / "proc/stat").write_text(text)
        group.read(0, emit)
    group.close()
    assert "cpu_core2_pct" in out[0] and out[0]["cpu_core2_pct"] == 0.0  # no earlier line: no delta yet
    assert out[1]["cpu_core2_pct"] == pytest.approx(20 / 40 * 100)
    assert out[1]["sys_cpu_total_pct"] == 0.0  # the other lines did not move
    assert "cpu_core2_pct" not in out[2] and set(out[2]) == set(out[0]) - {"cpu_core2_pct"}
    assert procfs.parse_proc_stat(b"cpu  1 2 3 4\ncpu0 1 2 3 4\n")["cpu0"] == (
        1,
        2,
        3,
        4,
        0,
        0,
        0,
        0,
    )  # old kernels


def test_thermal_zones_hwmon_and_disks_on_fake_trees(tmp_path):
    thermal = write_tree(
        tmp_path / "a",
        {
            "sys/class/thermal/thermal_zone0/type": "cpu-thermal\n",
            "sys/class/thermal/thermal_zone0/temp": "45678\n",
            "sys/class/thermal/thermal_zone1/type": "acpitz\n",
            "sys/class/thermal/thermal_zone1/temp": "30000\n",
            "sys/class/thermal/thermal_zone10/type": "acpitz\n",
            "sys/class/thermal/thermal_zone10/temp": "-5000\n",
            "sys/class/hwmon/hwmon0/name": "coretemp",
            "sys/class/hwmon/hwmon0/temp1_input": "50000",
        },
    )
    inputs, kind = procfs.temperature_inputs(thermal)
    assert kind == "thermal"
    assert [m for m, _ in inputs] == ["temp_c:cpu-thermal", "temp_c:acpitz-1", "temp_c:acpitz-10"]
    assert [procfs.parse_millidegrees(p.read_bytes()) for _, p in inputs] == [45.678, 30.0, -5.0]
    hwmon = write_tree(
        tmp_path / "b",
        {
            "sys/class/hwmon/hwmon0/name": "coretemp\n",
            "sys/class/hwmon/hwmon0/temp1_input": "51000\n",
            "sys/class/hwmon/hwmon0/temp1_label": "Package id 0\n",
            "sys/class/hwmon/hwmon0/temp2_input": "49000\n",
        },
    )
    inputs, kind = procfs.temperature_inputs(hwmon)
    assert kind == "hwmon" and [m for m, _ in inputs] == [
        "temp_c:coretemp/Package id 0",
        "temp_c:coretemp/temp2",
    ]
    disks = write_tree(
        tmp_path / "c",
        {
            "sys/block/vda/device/model": "x",
            "sys/block/vda/stat": "  100 5 2000 7 9 9 9 9 0 0 0\n",
            "sys/block/loop0/stat": "1 0 8 0 0 0 0 0 0 0 0\n",
            "proc/diskstats": "7 0 loop0 1 0 8 0 0\n254 0 vda 100 5 2000 7 9\n254 1 vda1 90 5 1900 7 9\n",
        },
    )
    assert procfs.physical_disks(disks) == {"vda"}
    assert procfs.parse_block_stat((disks / "sys/block/vda/stat").read_bytes()) == (100, 2000 * 512)
    raw = (disks / "proc/diskstats").read_bytes()
    assert procfs.parse_diskstats(raw, None) == (101, 2008 * 512)  # vda1 is a partition of vda
    assert procfs.parse_diskstats(raw, frozenset({"vda"})) == (100, 2000 * 512)


def test_pid_file_parsers():
    stat = (
        b"42 (a) b (c)) S 7 42 42 0 -1 4194304 5 0 0 0 11 22 33 44 20 0 3 0 100 5000 1234"
        + b" 0" * 20
        + b" 9 0 0\n"
    )
    ppid, user, system, rss_pages, _, exited = procfs.parse_pid_stat(stat)
    assert (ppid, user, system, rss_pages, exited) == (7, 11 + 33, 22 + 44, 1234, False)
    assert procfs.parse_pid_stat(stat.replace(b") S ", b") Z "))[5]
    io = b"rchar: 1\nwchar: 2\nsyscr: 3\nsyscw: 4\nread_bytes: 5\nwrite_bytes: 6\ncancelled_write_bytes: 7\n"
    assert procfs.parse_pid_io(io) == (5, 3, 6)
    assert procfs.parse_pid_io(
        b"syscr: 3\nrchar: 1\nread_bytes: 5\nwrite_bytes: 6\nwchar: 2\nsyscw: 4\n"
    ) == (5, 3, 6)
    rollup = b"Rss: 100 kB\nPrivate_Clean: 8 kB\nPrivate_Dirty: 16 kB\nPrivate_Hugetlb: 0 kB\nSwap: 4 kB\n"
    assert procfs.parse_smaps_rollup_uss(rollup) == 24 * 1024
