"""The noise sentinel without real load: its readers on fake /proc and /sys trees (hardware this
machine lacks: cpufreq, thermal throttle counters, thermal zones, the Pi firmware's flags), the
threshold logic, doctor's checks, the stored columns and analyze --noisy."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from edgestats.collectors.runrows import noise_columns
from edgestats.collectors.telemetry.noise_checks import busy_processes, noise_checks, process_cpu_ticks
from edgestats.collectors.telemetry.procfs import CLK_TCK
from edgestats.collectors.telemetry.sentinel import (
    MachineState,
    NoiseThresholds,
    during,
    judge,
    noise_record,
    outside_cpu,
    parse_loadavg,
    parse_vmstat,
    read_state,
    wait_until_quiet,
)
from edgestats.reports.terminal.doctor import noise_lines

PAGE = os.sysconf("SC_PAGE_SIZE")


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text + "\n")


def fake_machine(
    root: Path,
    *,
    busy: int = 100,
    idle: int = 900,
    load: str = "0.10 0.20 0.30 1/150 99",
    swap_in: int = 0,
    swap_out: int = 0,
    throttles: tuple[int, int] = (0, 0),
    temp_mc: int = 45000,
    governor: str = "performance",
    max_khz: int = 2400000,
    no_turbo: int | None = 1,
    pi_throttled: str | None = None,
    swap_free_kb: int = 1048576,
) -> Path:
    """A 2-CPU x86 laptop's /proc and /sys as the sentinel reads them (cpu times in ticks)."""
    write(
        root / "proc/stat",
        f"cpu  {busy} 0 0 {idle} 0 0 0 0 0 0\ncpu0 0 0 0 0 0 0 0 0\ncpu1 0 0 0 0 0 0 0 0\nintr 1",
    )
    write(root / "proc/loadavg", load)
    write(root / "proc/vmstat", f"nr_free_pages 1000\npswpin {swap_in}\npswpout {swap_out}\npgfault 5")
    write(root / "proc/meminfo", f"MemTotal: 8000000 kB\nSwapTotal: 1048576 kB\nSwapFree: {swap_free_kb} kB")
    for n, count in enumerate(throttles):
        cpu = root / f"sys/devices/system/cpu/cpu{n}"
        write(cpu / "cpufreq/scaling_governor", governor)
        write(cpu / "cpufreq/scaling_cur_freq", str(max_khz - 100000 * n))
        write(cpu / "cpufreq/scaling_max_freq", str(max_khz))
        write(cpu / "thermal_throttle/core_throttle_count", str(count))
        write(cpu / "thermal_throttle/package_throttle_count", "0")
    if no_turbo is not None:
        write(root / "sys/devices/system/cpu/intel_pstate/no_turbo", str(no_turbo))
    write(root / "sys/class/thermal/thermal_zone0/type", "x86_pkg_temp")
    write(root / "sys/class/thermal/thermal_zone0/temp", str(temp_mc))
    write(root / "sys/class/thermal/thermal_zone1/type", "acpitz")
    write(root / "sys/class/thermal/thermal_zone1/temp", "30000")
    if pi_throttled is not None:
        write(root / "sys/devices/platform/soc/soc:firmware/get_throttled", pi_throttled)
    return root


def test_parsers():
    assert parse_loadavg("0.52 0.58 0.59 3/168 31475") == ([0.52, 0.58, 0.59], 3)
    assert parse_loadavg("") == (None, None)
    assert parse_vmstat("pswpin 12\npswpout 7\nbad line x") == {"pswpin": 12, "pswpout": 7}


def test_state_of_a_fake_laptop(tmp_path):
    state = read_state(fake_machine(tmp_path, throttles=(3, 4), temp_mc=71500, swap_free_kb=1048576 - 2048))
    assert (state.cpu_busy_ticks, state.cpu_all_ticks, state.cpus) == (100, 1000, 2)
    assert state.loadavg == [0.1, 0.2, 0.3] and state.runnable == 1
    assert state.governors == ["performance", "performance"] and state.cur_khz == [2400000, 2300000]
    assert state.throttle_count == 7 and state.temp_max_c == 71.5 and state.turbo is False
    assert (
        state.swap_used_bytes == 2048 * 1024 and state.own_cpu_s == 0.0
    )  # a fake root: nothing of ours runs there
    assert state.as_dict()["cur_khz"] == [2300000, 2400000]


def test_state_of_a_machine_without_the_hardware(tmp_path):
    write(tmp_path / "proc/stat", "cpu  1 0 0 1 0 0 0 0\n")
    state = read_state(tmp_path)
    assert state.governors == [] and state.throttle_count is None and state.temp_max_c is None
    assert state.turbo is None and state.loadavg is None and state.swap_in_pages is None


@pytest.mark.parametrize(
    "boost, no_turbo, turbo", [("1", None, True), ("0", None, False), (None, 0, True), (None, 1, False)]
)
def test_turbo_from_boost_or_intel_pstate(tmp_path, boost, no_turbo, turbo):
    fake_machine(tmp_path, no_turbo=no_turbo)
    if boost is not None:
        write(tmp_path / "sys/devices/system/cpu/cpufreq/boost", boost)
    assert read_state(tmp_path).turbo is turbo


def _states(tmp_path, before: dict, after: dict) -> tuple[MachineState, MachineState]:
    one = read_state(fake_machine(tmp_path / "a", **before))
    two = read_state(fake_machine(tmp_path / "b", **after))
    return one, two


def test_outside_cpu_is_busy_time_minus_our_own():
    """2 CPUs for 1 s = 2 s of capacity; 1.5 s busy, 0.5 s of it ours: 1 s outside = 50 %."""
    before = MachineState(t_s=10.0, cpu_busy_ticks=0, cpu_all_ticks=0, own_cpu_s=3.0, cpus=2)
    after = MachineState(
        t_s=11.0, cpu_busy_ticks=int(1.5 * CLK_TCK), cpu_all_ticks=2 * CLK_TCK, own_cpu_s=3.5, cpus=2
    )
    figures = outside_cpu(before, after)
    assert figures["outside_cpu_pct"] == pytest.approx(50.0) and figures[
        "outside_cpu_cores"
    ] == pytest.approx(1.0)
    assert judge(before, after, figures, NoiseThresholds(cpu_pct=49)) == [
        "other processes used 50 % of 2 CPUs (> 49 %)"
    ]
    assert judge(before, after, figures, NoiseThresholds(cpu_pct=50)) == []
    assert outside_cpu(before, MachineState(t_s=11.0)) is None  # nothing to compare: not judged on CPU


def test_a_quiet_window_has_no_reason(tmp_path):
    before, after = _states(tmp_path, {}, {"busy": 110, "idle": 1890})
    record = noise_record(before, after, NoiseThresholds())
    assert record["reasons"] == [] and record["noisy"] is False
    assert record["during"]["swap_bytes"] == 0 and record["during"]["throttle_events"] == 0
    assert noise_columns(record) == (False, None) and noise_columns(None) == (None, None)


@pytest.mark.parametrize(
    "before, after, reason",
    [
        ({}, {"swap_in": 300, "swap_out": 200}, "swapped"),
        ({}, {"swap_in": 100}, None),  # under 1 MiB: not noisy (with 4 KiB pages)
        ({"throttles": (3, 0)}, {"throttles": (4, 0)}, "1 thermal throttle events"),
        ({"throttles": (3, 0)}, {"throttles": (3, 0)}, None),  # counted since boot: only an increase counts
        ({}, {"temp_mc": 80000}, "temperature 80 C (>= 80 C)"),
        ({}, {"temp_mc": 79000}, None),
        ({}, {"max_khz": 1800000}, "CPU frequency capped to 1800 MHz"),
        ({}, {"governor": "powersave"}, "governor changed to powersave"),
        ({"load": "4.5 1 1 1/100 1"}, {}, "load average 4.5 before the run (> 2 per CPU)"),
        ({"load": "4.0 1 1 1/100 1"}, {}, None),
        ({}, {"pi_throttled": "0x4"}, "firmware throttling: currently throttled (get_throttled 0x4)"),
        (
            {"pi_throttled": "0x50000"},
            {"pi_throttled": "0x50000"},
            None,
        ),  # "has happened since boot" bits only
    ],
)
def test_each_threshold(tmp_path, before, after, reason):
    if after.get("swap_in", 0) + after.get("swap_out", 0) and PAGE != 4096:
        pytest.fail("the swap cases assume 4 KiB pages")
    one, two = _states(tmp_path, before, after)
    reasons = judge(one, two, during(one, two), NoiseThresholds())
    if reason is None:
        assert reasons == []
    else:
        assert len(reasons) == 1 and reason in reasons[0], reasons


def test_sampled_temperatures_count(tmp_path):
    one, two = _states(tmp_path, {}, {})
    record = noise_record(one, two, NoiseThresholds(), temps_c=[50.0, 91.0, 60.0])
    assert record["during"]["temp_max_c"] == 91.0 and record["noisy"]


def test_wait_returns_at_once_when_quiet_and_gives_up_at_its_bound(tmp_path):
    root = fake_machine(tmp_path)
    slept: list[float] = []
    quiet = wait_until_quiet(NoiseThresholds(), 5.0, root=root, window_s=0.01, sleep=slept.append)
    assert quiet["quiet"] and quiet["reasons"] == [] and slept == [0.01]
    hot = fake_machine(tmp_path / "hot", temp_mc=95000)
    told: list[list[str]] = []
    busy = wait_until_quiet(
        NoiseThresholds(), 0.3, root=hot, window_s=0.05, sleep=time.sleep, on_busy=told.append
    )
    assert not busy["quiet"] and "temperature 95 C" in busy["reasons"][0] and 0.2 <= busy["waited_s"] <= 0.3
    assert len(told) == 1 and told[0] == busy["reasons"], "told once why it waits"


def test_doctor_checks_on_a_fake_laptop(tmp_path):
    root = fake_machine(
        tmp_path,
        governor="powersave",
        no_turbo=0,
        throttles=(2, 0),
        temp_mc=85000,
        swap_free_kb=1048576 - 4096,
    )
    # while doctor watches, the machine's CPUs are busy 150 of 200 ticks: 75 % by other processes
    busier = lambda s: write(root / "proc/stat", "cpu  250 0 0 950 0 0 0 0\n")  # noqa: E731
    checks = {c["name"]: c for c in noise_checks(root, window_s=0, sleep=busier)}
    assert checks["governor"]["ok"] is False and "cpupower" in checks["governor"]["fix"]
    assert checks["turbo"]["ok"] is False and checks["turbo"]["detail"] == "on"
    assert checks["swap"]["ok"] is False and checks["swap"]["detail"] == "4 MiB in use"
    assert checks["temperature"]["ok"] is False and checks["thermal throttling"]["ok"] is False
    assert checks["load average"]["ok"] is True
    assert checks["background CPU"]["ok"] is False and checks["background CPU"]["detail"].startswith(
        "75 % of 2 CPUs"
    )
    text = "\n".join(noise_lines(list(checks.values())))
    assert (
        "governor            warn  powersave" in text and "sudo cpupower frequency-set -g performance" in text
    )


def test_doctor_checks_where_nothing_is_known(tmp_path):
    write(tmp_path / "proc/stat", "cpu  1 0 0 1 0 0 0 0\n")
    checks = {c["name"]: c for c in noise_checks(tmp_path, window_s=0, sleep=lambda s: None)}
    assert (
        checks["governor"]["ok"] is None
        and checks["turbo"]["ok"] is None
        and checks["temperature"]["ok"] is None
    )
    assert "thermal throttling" not in checks and all(c["fix"] is None for c in checks.values())


def test_busy_processes_are_named_busiest_first(tmp_path):
    for pid, name, ticks in ((10, "idle one", 5), (11, "hog (x)", 500), (12, "half", 200)):
        write(tmp_path / f"proc/{pid}/stat", f"{pid} ({name}) R 1 1 1 0 -1 0 0 0 0 0 {ticks} 0 0 0 20 0 1 0")
    before = {pid: (name, 0) for pid, (name, _) in process_cpu_ticks(tmp_path).items()}
    busy = busy_processes(before, process_cpu_ticks(tmp_path), seconds=5 / CLK_TCK * 100)
    assert [(pid, name) for pid, name, _ in busy] == [(11, "hog (x)"), (12, "half")]
    assert busy[0][2] == pytest.approx(100 * 500 / 500)
