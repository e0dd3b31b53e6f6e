"""The Raspberry Pi firmware's throttle flags in the noise sentinel and in doctor: decoding
`vcgencmd get_throttled`, the rule that flags a window, reading through a fake `vcgencmd` on PATH
(tests/power_fakes.py) or the firmware's sysfs file in a fake tree. The run flagged end to end
is in test_rpi_collect.py."""

from __future__ import annotations

from pathlib import Path

import pytest
from power_fakes import fake_vcgencmd_on_path

from edgestats.collectors.telemetry.noise_checks import noise_checks
from edgestats.collectors.telemetry.pi_throttle import (
    SYSFS_FILE,
    decode_throttled,
    parse_throttled,
    read_throttled,
    throttle_reason,
)
from edgestats.collectors.telemetry.sentinel import NoiseThresholds, during, judge, read_state
from edgestats.reports.terminal.doctor import noise_lines

# The firmware's documented bits, written out here on their own (not taken from the module).
DOCUMENTED = {
    0: "under-voltage now",
    1: "arm frequency capped now",
    2: "currently throttled",
    3: "soft temperature limit active",
    16: "under-voltage has occurred",
    17: "arm frequency capping has occurred",
    18: "throttling has occurred",
    19: "soft temperature limit has occurred",
}


def test_each_documented_bit_decodes_to_its_name_and_no_other_bit_does():
    for bit in range(32):
        assert decode_throttled(1 << bit) == ([DOCUMENTED[bit]] if bit in DOCUMENTED else [])
    assert decode_throttled(0x50005) == [
        "under-voltage now",
        "currently throttled",
        "under-voltage has occurred",
        "throttling has occurred",
    ]


@pytest.mark.parametrize(
    "text, flags",
    [("throttled=0x50005", 0x50005), ("throttled=0x0\n", 0), ("50005", 0x50005), ("0", 0)],
)
def test_parse_vcgencmd_and_sysfs_forms(text, flags):
    assert parse_throttled(text) == flags


@pytest.mark.parametrize("text", ["", None, 'error=2 error_msg="Command not registered"', "throttled=zz"])
def test_parse_gives_none_for_what_is_no_value(text):
    assert parse_throttled(text) is None


@pytest.mark.parametrize(
    "before, after, names",
    [
        (0x0, 0x0, None),
        (0x50000, 0x50000, None),  # occurred before the run, nothing new: not this run's doing
        (0x0, 0x4, "currently throttled"),
        (0x2, 0x0, "arm frequency capped now"),  # at the first read: the run started capped
        (0x0, 0x40000, "throttling has occurred"),  # between the reads, over by the second
        (0x10000, 0x50000, "throttling has occurred"),  # only the bit that turned on
        (None, 0x40000, None),  # no first read: whether it turned on cannot be told
        (None, 0x8, "soft temperature limit active"),
        (
            0x0,
            0x50005,
            "under-voltage now, currently throttled, under-voltage has occurred, throttling has occurred",
        ),
    ],
)
def test_the_rule(before, after, names):
    reason = throttle_reason(before, after)
    if names is None:
        assert reason is None
    else:
        assert reason.startswith(f"firmware throttling: {names} (get_throttled ")


def test_read_live_through_vcgencmd_and_a_fake_tree_through_its_sysfs_file(tmp_path, monkeypatch):
    fake_vcgencmd_on_path(monkeypatch, tmp_path / "bin", throttled=("0x0", "0x50005"))
    assert read_throttled() == 0x0 and read_throttled() == 0x50005 and read_state().pi_throttled == 0x50005
    root = tmp_path / "root"
    assert read_throttled(root) is None  # a fake tree describes another machine: its vcgencmd is not asked
    (root / SYSFS_FILE).parent.mkdir(parents=True)
    (root / SYSFS_FILE).write_text("20002\n")
    assert read_throttled(root) == 0x20002


def test_a_vcgencmd_that_cannot_open_the_mailbox_gives_no_flags(tmp_path, monkeypatch):
    fake_vcgencmd_on_path(monkeypatch, tmp_path / "bin", no_vcio=True)
    assert read_throttled() is None
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    assert read_throttled() is None


def test_the_sentinel_judges_two_reads_of_the_live_machine(tmp_path, monkeypatch):
    fake_vcgencmd_on_path(monkeypatch, tmp_path / "bin", throttled=("0x0", "0x20002"))
    before, after = read_state(), read_state()
    reasons = judge(before, after, during(before, after), NoiseThresholds(cpu_pct=100.0, load_per_cpu=1e9))
    firmware = [r for r in reasons if r.startswith("firmware")]
    assert firmware == [
        "firmware throttling: arm frequency capped now, arm frequency capping has occurred "
        "(get_throttled 0x0 before, 0x20002 after)"
    ]


def test_doctor_shows_the_flags_decoded(tmp_path, monkeypatch):
    fake_vcgencmd_on_path(monkeypatch, tmp_path / "bin", throttled=("0x50000",))
    checks = {c["name"]: c for c in noise_checks(Path("/"), window_s=0, sleep=lambda s: None)}
    check = checks["firmware throttling"]
    assert check["ok"] is False and "power supply" in check["fix"]
    assert check["detail"] == "get_throttled 0x50000: under-voltage has occurred, throttling has occurred"
    text = "\n".join(noise_lines(list(checks.values())))
    assert "firmware throttling" in text and "under-voltage has occurred" in text
    fake_vcgencmd_on_path(monkeypatch, tmp_path / "bin2", throttled=("0x0",))
    checks = {c["name"]: c for c in noise_checks(Path("/"), window_s=0, sleep=lambda s: None)}
    assert checks["firmware throttling"]["ok"] is True
    assert checks["firmware throttling"]["detail"] == "get_throttled 0x0: no flag set"


@pytest.mark.slow  # doctor watches the machine for 0.5 s
def test_doctor_on_a_pi5_lists_the_pmic_and_shows_the_flags(tmp_path, monkeypatch):
    from edgestats.collectors.doctor import doctor_report
    from edgestats.reports.terminal.doctor import render_text

    fake_vcgencmd_on_path(monkeypatch, tmp_path / "bin", throttled=("0x50005",))
    report = doctor_report(Path("/"), probes=[])
    pmic = next(s for s in report["power_sources"] if s["name"] == "rpi-pmic")
    assert pmic["usable"] and "VDD_CORE" in pmic["rails"] and len(pmic["rails"]) == 12
    text = " ".join(render_text(report).split())  # whatever the terminal's width wraps
    assert "rpi-pmic yes rails: 3V7_WL_SW, 3V3_SYS, " in text, text
    flags = "under-voltage now, currently throttled, under-voltage has occurred, throttling has occurred"
    assert f"firmware throttling warn get_throttled 0x50005: {flags}" in text, text
