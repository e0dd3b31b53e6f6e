"""Energy attribution: cumulative series, per-phase and per-inference energy, the idle baseline
and the views that subtract it. `collect --power csv:` + `baseline` end to end are in
test_energy_collect.py."""

from __future__ import annotations

import statistics
import uuid

import pyarrow as pa
import pytest
from power_fakes import LAPTOP_ZONES, PACKAGE_MAX_UJ, make_ina3221x_tree, make_rapl_tree, set_energy
from typer.testing import CliRunner

from edgestats.collectors.power.attribution import (
    CumulativeEnergy,
    baseline_stats,
    cumulative_from_power,
    device_energy,
    inference_energies,
    phase_energy_rows,
    sum_series,
)
from edgestats.collectors.power.jetson import JetsonSource
from edgestats.collectors.power.rapl import RaplSource
from edgestats.store.results import Store

runner = CliRunner()
S = 1_000_000_000


def columns(rows: list[tuple[int, str, float]]) -> dict[str, list]:
    return {"t_ns": [r[0] for r in rows], "metric": [r[1] for r in rows], "value": [r[2] for r in rows]}


# -- the arithmetic --------------------------------------------------------------------------------


def test_power_integrated_and_cut_at_window_edges_by_hand():
    # 2 W for the first second, 4 W at t = 2 s: trapezoid areas 2 J then 3 J
    series = cumulative_from_power([(0, 2.0), (S, 2.0), (2 * S, 4.0)])
    assert series.joules == [0.0, 2.0, 5.0]
    assert series.between(0, 2 * S) == pytest.approx(5.0)
    # linear in the cumulative series: half of the second interval's 3 J
    assert series.between(S, S + S // 2) == pytest.approx(1.5)
    assert series.between(-1, S) is None and series.between(S, 2 * S + 1) is None


def test_repeated_timestamps_add_nothing_and_do_not_break_interpolation():
    series = cumulative_from_power([(0, 1.0), (S, 1.0), (S, 1.0), (2 * S, 1.0)])
    assert series.t_ns == [0, S, 2 * S]
    assert series.between(S // 2, 3 * S // 2) == pytest.approx(1.0)


def test_counter_rail_wins_over_power_and_rails_are_summed():
    rows = columns(
        [
            (0, "energy_j:a", 10.0),
            (0, "power_w:a", 999.0),
            (0, "power_w:b", 1.0),
            (S, "energy_j:a", 13.0),
            (S, "power_w:a", 999.0),
            (S, "power_w:b", 3.0),
        ]
    )
    series, why = device_energy(rows, ["a", "b"])
    assert why is None
    assert series.between(0, S) == pytest.approx(3.0 + 2.0)  # counter delta + trapezoid (1+3)/2


def test_missing_rail_gives_a_reason_not_zero():
    series, why = device_energy(columns([(0, "power_w:a", 1.0)]), ["a"])
    assert series is None and "rail 'a'" in why


def test_sum_series_interpolates_the_other_rails_at_the_first_rails_times():
    a = CumulativeEnergy([0, S, 2 * S], [0.0, 1.0, 2.0])
    b = CumulativeEnergy([0, 2 * S], [0.0, 4.0])
    total = sum_series([a, b])
    assert total.joules == pytest.approx([0.0, 3.0, 6.0])


def test_phase_rows_mark_uncovered_and_unfinished_phases_with_reasons():
    series = cumulative_from_power([(S, 5.0), (3 * S, 5.0)])
    phases = [
        {"seq": -1, "phase": "process_start", "start_ns": 0, "end_ns": S + 1},
        {"seq": 0, "phase": "import", "start_ns": S, "end_ns": 2 * S},
        {"seq": 1, "phase": "steady", "start_ns": 2 * S, "end_ns": None},
    ]
    rows = phase_energy_rows(series, phases, None)
    assert rows["energy_gross_j"] == [None, pytest.approx(5.0), None]
    assert "do not cover" in rows["unavailable_reason"][0]
    assert rows["unavailable_reason"][1] is None
    assert "no end" in rows["unavailable_reason"][2]
    no_source = phase_energy_rows(None, phases[:1], "no power source")
    assert no_source["energy_gross_j"] == [None] and no_source["unavailable_reason"] == ["no power source"]


def test_inference_energies_over_each_latency_window():
    series = cumulative_from_power([(0, 10.0), (S, 10.0)])
    got = inference_energies(series, [0, S // 2, None, S - 10], [S // 10, S // 100, 5, 100])
    assert got == [pytest.approx(1.0), pytest.approx(0.1), None, None]  # last one runs past the samples


def test_baseline_stats_mean_is_energy_over_time_std_over_intervals():
    # powers 4, 6, 5 W over 1 s, 1 s, 2 s: energy 4 + 6 + 10 = 20 J over 4 s
    series = CumulativeEnergy([0, S, 2 * S, 4 * S], [0.0, 4.0, 10.0, 20.0])
    stats = baseline_stats(series)
    assert stats.mean_power_w == pytest.approx(5.0)
    assert stats.std_power_w == pytest.approx(statistics.stdev([4.0, 6.0, 5.0]))
    assert stats.n == 3 and stats.seconds == pytest.approx(4.0)
    with pytest.raises(ValueError, match="fewer than two"):
        baseline_stats(CumulativeEnergy([0], [0.0]))


# -- device totals through the real sysfs parsers ----------------------------------------------------


def test_rapl_total_is_packages_plus_dram_and_survives_wrap_around(tmp_path):
    base = make_rapl_tree(tmp_path, LAPTOP_ZONES)
    source = RaplSource(tmp_path)
    assert source.is_available() == (True, None)
    assert source.total_rails() == ["package-0", "dram"]  # not core/uncore (inside the package), not psys
    readings = [source.read(0)]
    set_energy(base, "intel-rapl:0", 1_000_000)  # the package counter wraps
    set_energy(base, "intel-rapl:0:2", 65712900000 + 500_000)  # dram +0.5 J
    readings.append(source.read(S))
    rows = columns([(r.t_ns, f"energy_j:{rail}", j) for r in readings for rail, j in r.energy_j.items()])
    series, why = device_energy(rows, source.total_rails())
    assert why is None
    wrapped_j = (PACKAGE_MAX_UJ - 262143000000 + 1_000_000) / 1e6
    assert series.between(0, S) == pytest.approx(wrapped_j + 0.5)


def test_jetson_total_is_the_input_rail(tmp_path):
    make_ina3221x_tree(tmp_path, [(4000, 800, 5000), (1500, 300, 5000), (1000, 200, 5000)])
    source = JetsonSource(tmp_path)
    assert source.is_available() == (True, None)
    assert source.total_rails() == ["VDD_IN"]
    readings = [source.read(0), source.read(2 * S)]
    rows = columns([(r.t_ns, f"power_w:{rail}", w) for r in readings for rail, w in r.power_w.items()])
    series, _ = device_energy(rows, source.total_rails())
    assert series.between(0, 2 * S) == pytest.approx(8.0)  # 4 W for 2 s, not 6.5 W summed over rails


# -- the views: baseline subtracted, interval, reasons ----------------------------------------------


def _run_with_energy(
    store: Store, device_id: uuid.UUID, source: str | None, gross: list[float | None]
) -> uuid.UUID:
    phases = pa.table(
        {
            "seq": pa.array([0, 1], pa.int32()),
            "phase": ["load_model", "steady"],
            "start_ns": [0, 2 * S],
            "end_ns": [2 * S, 4 * S],
        }
    )
    latencies = pa.table(
        {
            "iteration": pa.array([0, 1], pa.int32()),
            "warmup": [False, False],
            "start_ns": [2 * S, 3 * S],
            "latency_ns": [S // 2, S // 2],
            "energy_gross_j": pa.array(gross[2:], pa.float64()),
        }
    )
    energies = (
        None
        if source is None
        else {
            "seq": [0, 1],
            "phase": ["load_model", "steady"],
            "energy_gross_j": gross[:2],
            "unavailable_reason": [None, None],
        }
    )
    return store.write_run(
        {
            "device_id": device_id,
            "kind": "inference",
            "status": "ok",
            "iterations": 2,
            "power_source": source,
            "power_rails": ["meter"] if source else None,
            "energy_unavailable_reason": None if source else "no power source: --power none",
            "started_at": "2026-01-01T00:00:00Z",
        },
        phases=phases,
        latencies=latencies,
        phase_energies=energies,
    )


def test_views_subtract_the_nearest_baseline_with_its_t_interval(tmp_path):
    with Store.open(tmp_path / "r.duckdb") as store:
        device = store.register_device({"name": "pi"})
        run = _run_with_energy(store, device, "csv:meter.csv", [14.0, 20.0, 4.0, 6.0])
        before = store.frame(
            "SELECT phase, energy_j, energy_unavailable_reason FROM phase_energy ORDER BY seq"
        ).to_dicts()
        assert (
            before[0]["energy_j"] is None and "edgestats baseline" in before[0]["energy_unavailable_reason"]
        )
        # two baselines: the one nearest the run's start is used; a different source kind never is
        store.write_baseline(
            {
                "device_id": device,
                "measured_at": "2025-01-01T00:00:00Z",
                "seconds": 60,
                "source": "csv:old.csv",
                "mean_power_w": 1.0,
                "std_power_w": 0.5,
                "n": 10,
                "rails": ["meter"],
            }
        )
        store.write_baseline(
            {
                "device_id": device,
                "measured_at": "2026-01-01T01:00:00Z",
                "seconds": 60,
                "source": "csv:idle.csv",
                "mean_power_w": 5.0,
                "std_power_w": 0.4,
                "n": 4,
                "rails": ["meter"],
            }
        )
        store.write_baseline(
            {
                "device_id": device,
                "measured_at": "2026-01-01T00:00:00Z",
                "seconds": 60,
                "source": "rapl",
                "mean_power_w": 50.0,
                "std_power_w": 0.1,
                "n": 100,
                "rails": ["meter"],
            }
        )
        rows = store.frame("SELECT * FROM phase_energy WHERE run_id = ? ORDER BY seq", [str(run)]).to_dicts()
        half_w = 3.182 * 0.4 / 2  # t(0.975, 3) * std / sqrt(n)
        assert rows[0]["energy_j"] == pytest.approx(14.0 - 5.0 * 2)
        assert rows[0]["energy_ci_low_j"] == pytest.approx(4.0 - half_w * 2)
        assert rows[0]["energy_ci_high_j"] == pytest.approx(4.0 + half_w * 2)
        assert rows[0]["mean_power_w"] == pytest.approx(7.0) and rows[0]["idle_power_w"] == 5.0
        assert rows[1]["energy_j"] == pytest.approx(10.0) and rows[0]["energy_unavailable_reason"] is None
        summary = store.frame("SELECT * FROM run_summary").to_dicts()[0]
        # per inference: gross 4 and 6 J over 0.5 s each at 5 W idle -> 1.5 and 3.5 J
        assert summary["energy_per_inference_j"] == pytest.approx(2.5)
        assert summary["energy_per_inference_ci_high_j"] - summary["energy_per_inference_j"] == pytest.approx(
            half_w * 0.5
        )


def test_t975_macro_matches_scipy(tmp_path):
    from scipy import stats

    with Store.open(tmp_path / "t.duckdb") as store:
        for df in (1, 2, 5, 10, 29, 30, 31, 45, 100, 1000):
            got = store.con.execute("SELECT t975(?)", [df]).fetchall()[0][0]
            assert got == pytest.approx(stats.t.ppf(0.975, df), abs=0.001), df


def test_run_without_power_source_has_null_energy_and_the_reason(tmp_path):
    with Store.open(tmp_path / "r.duckdb") as store:
        device = store.register_device({"name": "pi"})
        _run_with_energy(store, device, None, [None, None, None, None])
        rows = store.frame("SELECT energy_j, energy_unavailable_reason FROM phase_energy").to_dicts()
        assert all(
            r["energy_j"] is None and r["energy_unavailable_reason"] == "no power source: --power none"
            for r in rows
        )
        summary = store.frame(
            "SELECT energy_per_inference_j, energy_unavailable_reason FROM run_summary"
        ).to_dicts()[0]
        assert summary == {
            "energy_per_inference_j": None,
            "energy_unavailable_reason": "no power source: --power none",
        }
