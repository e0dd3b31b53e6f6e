"""The external meter source: its CSV log parsed, sorted, aligned to a run's clock, and bad files
named with what to fix."""

from __future__ import annotations

import os
import time

import pytest
from power_fakes import UNIX_CSV, write_csv

from edgestats.collectors.power.base import PowerReading, PowerSourceError
from edgestats.collectors.power.energy import integrate_power_w
from edgestats.collectors.power.meter_csv import ClockAnchor, CsvMeterSource, load_meter_csv
from edgestats.errors import EdgestatsError


def test_csv_unix_seconds_sorted_and_integrated_like_the_hand_trapezoid(tmp_path):
    source = CsvMeterSource(write_csv(tmp_path, UNIX_CSV))
    assert source.is_available() == (True, None)
    t0 = 1700000000.0
    assert source.samples_between(t0 + 0.5, t0 + 2.5) == [
        (t0, 2.0),
        (t0 + 1, 4.0),
        (t0 + 2, 4.0),
        (t0 + 3, 1.0),
    ]
    assert source.samples_between(t0 + 1.2, t0 + 1.8) == [(t0 + 1, 4.0), (t0 + 2, 4.0)]
    assert source.energy_j(t0 + 0.5, t0 + 2.5) == pytest.approx(1.75 + 4.0 + 1.625)
    # meter clock 2 s behind the host: shift its samples forward, same energy 2 s later
    assert source.energy_j(t0 + 2.5, t0 + 4.5, clock_offset_s=2.0) == pytest.approx(7.375)
    with pytest.raises(ValueError, match="do not cover"):
        source.energy_j(t0 - 1, t0 + 1)


@pytest.fixture
def new_york_time():
    """A local timezone far from UTC, so reading a naive ISO time as local time would show."""
    saved = os.environ.get("TZ")
    os.environ["TZ"] = "EST5"  # POSIX form: needs no tzdata
    time.tzset()
    yield
    if saved is None:
        del os.environ["TZ"]
    else:
        os.environ["TZ"] = saved
    time.tzset()


def test_csv_iso_timestamps_with_and_without_timezone(tmp_path, new_york_time):
    assert time.localtime(1700000000).tm_hour == 17  # the fixture took effect (22:13 UTC)
    path = write_csv(
        tmp_path,
        "Timestamp, Power_W\n2023-11-14T22:13:20Z,2.0\n2023-11-14T23:13:21+01:00,4.0\n"
        "2023-11-14T22:13:22.5,3.0\n\n",
    )
    assert load_meter_csv(path) == [(1700000000.0, 2.0), (1700000001.0, 4.0), (1700000002.5, 3.0)]


def test_csv_aligned_to_a_run_through_the_clock_anchor(tmp_path):
    source = CsvMeterSource(
        write_csv(tmp_path, UNIX_CSV),
        anchor=ClockAnchor(monotonic_ns=5_000_000_000, unix_ns=1_700_000_000_000_000_000),
    )
    samples_ns = source.samples_monotonic_ns(5_500_000_000, 7_500_000_000)
    assert [t for t, _ in samples_ns] == [5_000_000_000, 6_000_000_000, 7_000_000_000, 8_000_000_000]
    assert integrate_power_w(samples_ns, 5_500_000_000, 7_500_000_000) == pytest.approx(7.375)
    assert source.read(t_ns=5_500_000_000) == PowerReading(5_500_000_000, {}, {"meter": pytest.approx(3.0)})
    with pytest.raises(PowerSourceError, match="no samples around"):
        source.read(t_ns=1)


def test_csv_bad_header_names_found_and_expected_columns(tmp_path):
    path = write_csv(tmp_path, "time,watts\n1700000000,2.0\n")
    with pytest.raises(EdgestatsError) as error:
        load_meter_csv(path)
    message = str(error.value)
    assert "['time', 'watts']" in message and "'timestamp'" in message and "'power_w'" in message
    ok, reason = CsvMeterSource(path).is_available()
    assert not ok and "['time', 'watts']" in reason


def test_csv_bad_values_name_the_line(tmp_path):
    bad_power = write_csv(tmp_path, "timestamp,power_w\n1700000000,2.0\n1700000001,abc\n", "p.csv")
    with pytest.raises(PowerSourceError, match=r"line 3: power_w 'abc' is not a number"):
        load_meter_csv(bad_power)
    bad_time = write_csv(tmp_path, "timestamp,power_w\nyesterday,2.0\n", "t.csv")
    with pytest.raises(PowerSourceError, match=r"line 2: timestamp 'yesterday'"):
        load_meter_csv(bad_time)
    with pytest.raises(PowerSourceError, match="no samples"):
        load_meter_csv(write_csv(tmp_path, "timestamp,power_w\n", "empty.csv"))
    with pytest.raises(PowerSourceError, match="missing.csv: no such file"):
        load_meter_csv(tmp_path / "missing.csv")
