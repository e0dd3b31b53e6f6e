"""rpi-pmic, the Raspberry Pi 5's PMIC through `vcgencmd pmic_read_adc`: a fake `vcgencmd` (a shell
script first on PATH, tests/power_fakes.py) prints a real Pi 5's output, and the source runs it
through the real subprocess and parsing code, then selection, doctor's list, the energy series
and the idle baseline as for any source. The board power expected is computed by
power_fakes.pi5_power_w, which pairs the lines by name on its own."""

from __future__ import annotations

import re
import sys

import pytest
from power_fakes import (
    PI5_PMIC_READ_ADC,
    VCGENCMD_UNKNOWN_COMMAND,
    fake_pynvml,
    fake_vcgencmd_on_path,
    make_fake_vcgencmd,
    pi5_power_w,
)

from edgestats.collectors.power.attribution import device_energy
from edgestats.collectors.power.base import PowerSourceError
from edgestats.collectors.power.baseline import measure_live
from edgestats.collectors.power.rpi_pmic import RpiPmicSource, parse_pmic_adc
from edgestats.collectors.power.selection import describe_sources, select_power_source
from edgestats.registry.power import AUTO_ORDER
from edgestats.reports.terminal.doctor import power_lines

S = 1_000_000_000
PI5_RAILS = [
    line.split()[0].removesuffix("_A")
    for line in PI5_PMIC_READ_ADC.splitlines()
    if line.split()[0].endswith("_A")
]


@pytest.fixture
def no_nvml(monkeypatch):
    monkeypatch.setitem(
        sys.modules, "pynvml", fake_pynvml([], [], init_error="NVML Shared Library Not Found")
    )


@pytest.fixture
def pi5(tmp_path, monkeypatch):
    """A Pi 5's vcgencmd, first on PATH; its folder is returned (rewrite it to change the output)."""
    fake_vcgencmd_on_path(monkeypatch, tmp_path / "bin")
    return tmp_path / "bin"


def test_board_power_is_the_sum_of_v_times_a_over_the_paired_rails(pi5):
    source = RpiPmicSource()
    assert source.is_available() == (True, None)
    assert source.rails() == source.total_rails() == PI5_RAILS and len(PI5_RAILS) == 12
    reading = source.read(7)
    assert reading.t_ns == 7 and reading.energy_j == {}
    assert sum(reading.power_w.values()) == pytest.approx(pi5_power_w(), rel=1e-12)
    assert pi5_power_w() == pytest.approx(1.7241, abs=1e-4)  # the sum of the 12 products, by hand
    assert reading.power_w["VDD_CORE"] == pytest.approx(0.71350000 * 0.88000000)
    metrics = dict(reading.metrics())
    assert metrics["voltage_v:EXT5V"] == 5.12496  # the input: a voltage, not a rail
    assert "power_w:EXT5V" not in metrics and "power_w:BATT" not in metrics


def test_each_read_runs_vcgencmd_again(pi5):
    source = RpiPmicSource()
    assert source.is_available() == (True, None)
    before = source.read(0).power_w["VDD_CORE"]
    busier = PI5_PMIC_READ_ADC.replace("current(7)=0.71350000A", "current(7)=2.50000000A")
    make_fake_vcgencmd(pi5, pmic=busier)
    after = source.read(S).power_w["VDD_CORE"]
    assert before == pytest.approx(0.6278800) and after == pytest.approx(2.5 * 0.88)


def test_parsing_pairs_by_name_and_ignores_what_is_no_reading():
    amps, volts = parse_pmic_adc(PI5_PMIC_READ_ADC + "error=1 error_msg=x\n  ODD_A volt(3)=1.0V\n")
    assert len(amps) == 12 and set(volts) == {*PI5_RAILS, "EXT5V", "BATT"}
    assert "ODD" not in amps and "ODD" not in volts  # an _A name with a voltage unit is no reading
    assert parse_pmic_adc(VCGENCMD_UNKNOWN_COMMAND) == ({}, {})


def test_energy_over_a_run_is_the_trapezoid_integral_of_board_power(pi5):
    """Readings stored as the sampler stores them, then the device-total series of attribution."""
    source = RpiPmicSource()
    assert source.is_available() == (True, None)
    first = source.read(0)
    busier = PI5_PMIC_READ_ADC.replace("current(7)=0.71350000A", "current(7)=2.50000000A")
    make_fake_vcgencmd(pi5, pmic=busier)
    second = source.read(2 * S)
    rows = {"t_ns": [], "metric": [], "value": []}
    for reading in (first, second):
        for metric, value in reading.metrics():
            rows["t_ns"].append(reading.t_ns)
            rows["metric"].append(metric)
            rows["value"].append(value)
    series, why = device_energy(rows, source.total_rails())
    assert why is None
    expected_j = (pi5_power_w() + pi5_power_w(busier)) / 2 * 2.0
    assert series.between(0, 2 * S) == pytest.approx(expected_j, rel=1e-9)


@pytest.mark.slow  # reads the fake vcgencmd for 1 s
def test_idle_baseline_reads_it_live(pi5):
    source = RpiPmicSource()
    assert source.is_available() == (True, None)
    baseline = measure_live(source, seconds=1.0, hz=10)
    assert baseline.rails == PI5_RAILS
    assert baseline.stats.mean_power_w == pytest.approx(pi5_power_w(), rel=1e-9)
    assert baseline.stats.n >= 5


@pytest.mark.parametrize(
    "options, says",
    [
        (None, "vcgencmd is not on PATH"),
        ({"pmic": VCGENCMD_UNKNOWN_COMMAND + "\n", "pmic_status": 2}, "no PMIC"),
        ({"no_vcio": True}, "video group"),
    ],
)
def test_says_why_not(tmp_path, monkeypatch, options, says):
    if options is None:
        monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    else:
        fake_vcgencmd_on_path(monkeypatch, tmp_path / "bin", **options)
    available, why = RpiPmicSource().is_available()
    assert not available and says in why
    if options and "pmic" in options:  # names what the firmware said, and which boards have one
        assert "Command not registered" in why and "Raspberry Pi 5" in why
    with pytest.raises(PowerSourceError, match=re.escape(says)):
        select_power_source("rpi-pmic", tmp_path)


def test_chosen_by_name_and_by_auto_and_listed_for_doctor(tmp_path, pi5, no_nvml):
    for spec in ("rpi-pmic", "auto"):
        source, chosen, reasons = select_power_source(spec, tmp_path / "root")
        assert chosen == "rpi-pmic" and isinstance(source, RpiPmicSource)
    assert list(reasons) == list(AUTO_ORDER[: AUTO_ORDER.index("rpi-pmic")])  # tried after the others
    row = next(row for row in describe_sources(tmp_path / "root") if row["name"] == "rpi-pmic")
    assert row["usable"] and row["rails"] == PI5_RAILS
    text = " ".join(" ".join(power_lines(describe_sources(tmp_path / "root"), [])).split())
    assert f"rpi-pmic yes rails: {', '.join(PI5_RAILS)}" in text, text


def test_a_rail_gone_mid_run_is_an_error_not_a_zero(pi5):
    source = RpiPmicSource()
    assert source.is_available() == (True, None)
    make_fake_vcgencmd(pi5, pmic=PI5_PMIC_READ_ADC.replace("VDD_CORE_V", "VDD_CORX_V"))
    with pytest.raises(PowerSourceError, match="no reading of rail VDD_CORE"):
        source.read(0)
