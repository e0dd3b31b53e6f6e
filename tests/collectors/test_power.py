"""Energy arithmetic, and choosing a power source: `--power auto`, by name, and doctor's list,
all from the registry (edgestats.registry.power)."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest
from power_fakes import (
    LAPTOP_ZONES,
    PACKAGE_MAX_UJ,
    UNIX_CSV,
    FakeBoardSource,
    fake_pynvml,
    make_ina3221_hwmon_tree,
    make_rapl_tree,
    register_fake_board,
    write_csv,
)

from edgestats.collectors.power.base import PowerSourceError
from edgestats.collectors.power.energy import (
    counter_delta_uj,
    energy_above_idle_j,
    energy_in_window_j,
    integrate_power_w,
    integrate_trapezoid,
)
from edgestats.collectors.power.jetson import JetsonSource
from edgestats.collectors.power.rapl import RaplSource
from edgestats.collectors.power.selection import describe_sources, select_power_source
from edgestats.registry.power import AUTO_ORDER, power_source, power_source_names, spec_help

# -- energy arithmetic -------------------------------------------------------------------------


def test_counter_delta_handles_wrap_around():
    assert counter_delta_uj(100, 350, PACKAGE_MAX_UJ) == 250
    assert counter_delta_uj(PACKAGE_MAX_UJ - 328850, 1_000_000, PACKAGE_MAX_UJ) == 1_328_850


def test_trapezoid_with_partial_intervals_at_both_edges():
    samples = [(0.0, 2.0), (1.0, 4.0), (2.0, 4.0), (3.0, 1.0)]
    # value at 0.5 is 3.0, at 2.5 is 2.5: 0.5*(3+4)/2 + 1*(4+4)/2 + 0.5*(4+2.5)/2
    assert integrate_trapezoid(samples, 0.5, 2.5) == pytest.approx(1.75 + 4.0 + 1.625)
    assert integrate_trapezoid(samples, 0.0, 3.0) == pytest.approx(3.0 + 4.0 + 2.5)


def test_window_shorter_than_one_sampling_interval_gets_its_share():
    samples_ns = [(0, 2.0), (10_000_000_000, 4.0)]  # 0.1 Hz sampler
    # 2 s..4 s: power 2.4 W..2.8 W, mean 2.6 W, for 2 s
    assert integrate_power_w(samples_ns, 2_000_000_000, 4_000_000_000) == pytest.approx(5.2)


def test_window_not_covered_by_samples_is_an_error_not_a_guess():
    with pytest.raises(ValueError, match="do not cover"):
        integrate_power_w([(10, 1.0), (20, 1.0)], 5, 15)
    with pytest.raises(ValueError, match="do not cover"):
        energy_in_window_j([], 0, 1)


def test_cumulative_energy_interpolated_at_window_edges():
    cumulative = [(0, 0.0), (1_000_000_000, 10.0), (2_000_000_000, 30.0)]
    assert energy_in_window_j(cumulative, 500_000_000, 1_500_000_000) == pytest.approx(5.0 + 10.0)


def test_energy_above_idle_is_the_area_between_the_curves():
    assert energy_above_idle_j(10.0, 2.0, 3_000_000_000) == pytest.approx(4.0)
    assert energy_above_idle_j(5.0, 2.0, 3_000_000_000) == pytest.approx(-1.0)  # not clamped


# -- selection ---------------------------------------------------------------------------------


@pytest.fixture
def no_nvml(monkeypatch):
    """pynvml as on a machine without the NVIDIA driver, whatever machine runs the tests."""
    monkeypatch.setitem(
        sys.modules, "pynvml", fake_pynvml([], [], init_error="NVML Shared Library Not Found")
    )


def test_auto_with_nothing_gives_none_and_every_reason(tmp_path, no_nvml):
    source, chosen, reasons = select_power_source("auto", tmp_path)
    assert source is None and chosen == "none"
    assert list(reasons) == list(AUTO_ORDER)
    assert "powercap" in reasons["rapl"] and "Not Found" in reasons["nvml"] and "INA3221" in reasons["jetson"]


def test_auto_on_this_machine_agrees_with_describe_sources():
    rows = {row["name"]: row for row in describe_sources()}
    source, chosen, reasons = select_power_source("auto")
    usable = [name for name in AUTO_ORDER if rows[name]["usable"]]
    assert chosen == (usable[0] if usable else "none")
    assert (source is None) == (not usable)
    assert reasons == {name: rows[name]["reason"] for name in AUTO_ORDER[: len(reasons)]}
    if source is not None:
        source.close()


def test_auto_picks_rapl_from_a_fake_tree(tmp_path, no_nvml):
    make_rapl_tree(tmp_path, LAPTOP_ZONES)
    source, chosen, reasons = select_power_source("auto", tmp_path)
    assert chosen == "rapl" and isinstance(source, RaplSource) and reasons == {}
    assert source.read(0).energy_j["package-0"] == 0.0


def test_auto_picks_jetson_and_records_why_not_the_others(tmp_path, no_nvml):
    make_ina3221_hwmon_tree(tmp_path, [(5072, 1288), (5064, 392), (5064, 624)])
    source, chosen, reasons = select_power_source("auto", tmp_path)
    assert chosen == "jetson" and isinstance(source, JetsonSource)
    assert list(reasons) == list(AUTO_ORDER[: AUTO_ORDER.index("jetson")])


def test_explicit_specs(tmp_path, no_nvml):
    assert select_power_source("none", tmp_path) == (None, "none", {})
    with pytest.raises(PowerSourceError, match="'jetson' is not available"):
        select_power_source("jetson", tmp_path)
    with pytest.raises(PowerSourceError, match=re.escape(spec_help())):
        select_power_source("ina219", tmp_path)
    with pytest.raises(PowerSourceError, match="csv:PATH"):
        select_power_source("csv:", tmp_path)
    meter = write_csv(tmp_path, UNIX_CSV)
    source, chosen, _ = select_power_source(f"csv:{meter}", tmp_path, clock_offset_s=1.5)
    assert chosen == "csv" and source.clock_offset_s == 1.5 and not source.live
    with pytest.raises(PowerSourceError, match="line 2"):
        select_power_source(f"csv:{write_csv(tmp_path, 'timestamp,power_w' + chr(10) + 'x,1', 'bad.csv')}")


def test_describe_sources_for_doctor(tmp_path, no_nvml):
    make_rapl_tree(tmp_path, LAPTOP_ZONES)
    rows = {row["name"]: row for row in describe_sources(tmp_path)}
    assert list(rows) == list(power_source_names())
    assert rows["rapl"]["usable"] and rows["rapl"]["rails"][0] == "package-0"
    assert not rows["nvml"]["usable"] and "Not Found" in rows["nvml"]["reason"]
    assert not rows["jetson"]["usable"] and rows["jetson"]["rails"] == []


def test_power_modules_import_pynvml_only_when_nvml_is_probed():
    modules = [
        "edgestats.collectors.power.base",
        *(power_source(n).source.partition(":")[0] for n in power_source_names()),
    ]
    assert "edgestats.collectors.power.nvml" in modules
    code = f"import sys, {', '.join(modules)}\nprint('pynvml' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout
    assert out.strip() == "False"


# -- a source added through the registry only ----------------------------------------------------


def test_a_registered_source_is_chosen_by_name_and_by_auto(tmp_path, no_nvml, monkeypatch):
    built_in_auto = list(AUTO_ORDER)
    register_fake_board(monkeypatch)
    with pytest.raises(PowerSourceError, match="fakeboard is missing"):
        select_power_source("fakeboard", tmp_path)  # asked for by name, unusable here
    (tmp_path / "fakeboard").write_text("1\n")
    source, chosen, reasons = select_power_source("fakeboard", tmp_path)
    assert chosen == "fakeboard" and isinstance(source, FakeBoardSource) and reasons == {}
    assert source.read(0).metrics() == [("power_w:board", 1.5)]
    source, chosen, reasons = select_power_source("auto", tmp_path)
    assert chosen == "fakeboard" and list(reasons) == built_in_auto  # tried last, in registry order
    with pytest.raises(PowerSourceError, match=re.escape(spec_help())) as raised:
        select_power_source("ina219", tmp_path)
    assert raised.value.args[0].count(" or fakeboard") == 1  # the registered source is offered, last


def test_a_registered_source_is_listed_for_doctor(tmp_path, no_nvml, monkeypatch):
    from edgestats.reports.terminal.doctor import power_lines

    built_in, built_in_auto = power_source_names(), AUTO_ORDER
    register_fake_board(monkeypatch)
    (tmp_path / "fakeboard").write_text("1\n")
    rows = describe_sources(tmp_path)
    assert [row["name"] for row in rows] == [*built_in, "fakeboard"]
    assert rows[-1] == {
        "name": "fakeboard",
        "usable": True,
        "reason": None,
        "rails": ["board"],
        "takes_path": False,
    }
    text = "\n".join(power_lines(rows, []))
    assert f"auto takes the first usable of {', '.join([*built_in_auto, 'fakeboard'])}" in text
    assert re.search(r"fakeboard\s+yes\s+rails: board", text), text
    file_sources = [entry for entry in map(power_source, built_in) if entry.takes_path]
    assert file_sources, "an external meter's log is one of the built-in sources"
    for entry in file_sources:  # named with what it reads and how to give it its file
        shown = rf"{entry.name}\s+yes\s+{re.escape(entry.help)}.*--power {re.escape(entry.spec)}"
        assert re.search(shown, text), text


def test_a_device_source_given_a_path_says_it_takes_none(tmp_path, no_nvml):
    with pytest.raises(PowerSourceError, match="rapl reads this device and takes no path; use --power rapl"):
        select_power_source("rapl:/tmp/x.csv", tmp_path)
