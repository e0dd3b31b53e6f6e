"""`collect --power csv:` and `baseline` end to end: an external meter's log, an idle baseline
measured from it, and collected inference and training runs whose energy is the busy power less
the idle one, per phase, per inference and per epoch; and what `baseline` and `collect` say when
the power source cannot be used. Separate from test_power_attribution.py (the arithmetic and the
views, no worker): two tests here run framework workers (onnxruntime cnn9 for 200 inferences,
PyTorch mnist_cnn for 2 epochs on 400 samples); the others need none.
Cost: about 5 s of test time in make test's parallel lane (measured from a fresh clone on 2 cores)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from edgestats.cli import app
from edgestats.store.results import Store

runner = CliRunner()


# -- end to end: an external meter's log, a baseline from it, a collected run ------------------------


def write_meter_log(
    path: Path, start_s: float, end_s: float, idle_until_s: float, idle_w: float, busy_w: float
) -> None:
    """A USB meter's CSV at 10 Hz: idle power until `idle_until_s`, then the busy level, with a
    small deterministic ripple (so the baseline has a spread)."""
    lines = ["timestamp,power_w,voltage_v"]
    t, k = start_s, 0
    while t <= end_s:
        level = idle_w if t < idle_until_s else busy_w
        lines.append(f"{t:.3f},{level + (0.05 if k % 2 else -0.05):.3f},5.1")
        t += 0.1
        k += 1
    path.write_text("\n".join(lines) + "\n")


def record_baseline(db: Path, meter: Path, now: float, *extra: str) -> Result:
    """`edgestats baseline` over 30 s of the meter's idle stretch, starting 55 s before now."""
    result = runner.invoke(
        app,
        [
            "baseline",
            "--db",
            str(db),
            "--power",
            f"csv:{meter}",
            "--seconds",
            "30",
            "--start",
            f"{now - 55:.3f}",
            *extra,
        ],
    )
    assert result.exit_code == 0, result.output
    return result


def check_baseline_and_run_source(store: Store) -> None:
    baseline = store.frame("SELECT * FROM baselines").to_dicts()[0]
    assert baseline["mean_power_w"] == pytest.approx(2.0, abs=0.01) and baseline["n"] >= 290
    assert baseline["source"] == "csv:meter.csv" and baseline["rails"] == ["meter"]
    run = store.frame("SELECT power_source, power_rails, energy_unavailable_reason FROM runs").to_dicts()[0]
    assert run == {
        "power_source": "csv:meter.csv",
        "power_rails": ["meter"],
        "energy_unavailable_reason": None,
    }


def check_energy_is_busy_minus_idle_power(store: Store) -> None:
    """Every phase, every inference and the run's summary: 5 W busy - 2 W idle = 3 W."""
    phases = store.frame("SELECT * FROM phase_energy WHERE phase <> 'process_start' ORDER BY seq").to_dicts()
    assert {p["phase"] for p in phases} >= {"import", "load_model", "first_inference", "steady", "total"}
    for p in phases:  # 5 W busy - 2 W idle = 3 W over every window
        assert p["energy_j"] == pytest.approx(3.0 * p["duration_s"], rel=0.05, abs=1e-4), p["phase"]
        assert p["energy_ci_low_j"] <= p["energy_j"] <= p["energy_ci_high_j"]
        assert p["source"] == "csv:meter.csv"
    per_inference = store.frame(
        "SELECT energy_j, latency_ns FROM inference_energy WHERE NOT warmup"
    ).to_dicts()
    assert len(per_inference) == 200
    for row in per_inference:
        assert row["energy_j"] == pytest.approx(3.0 * row["latency_ns"] / 1e9, rel=0.05, abs=1e-6)
    summary = store.frame(
        "SELECT energy_per_inference_j, energy_per_inference_ci_low_j, mean_power_w FROM run_summary"
    ).to_dicts()[0]
    assert (
        summary["energy_per_inference_j"] > 0
        and summary["energy_per_inference_ci_low_j"] < summary["energy_per_inference_j"]
    )
    assert summary["mean_power_w"] == pytest.approx(5.0, abs=0.1)


@pytest.mark.frameworks  # runs framework workers
def test_collect_with_a_meter_and_a_baseline_stores_energy_per_phase_and_inference(model_cache, tmp_path):
    now = time.time()
    meter = tmp_path / "meter.csv"
    write_meter_log(meter, now - 60, now + 600, idle_until_s=now - 20, idle_w=2.0, busy_w=5.0)
    db = tmp_path / "r.duckdb"
    result = record_baseline(db, meter, now)
    assert "idle power 2 W" in result.output
    result = runner.invoke(
        app,
        [
            "collect",
            "--db",
            str(db),
            "-f",
            "onnxruntime",
            "-m",
            "cnn9",
            "-n",
            "200",
            "--power",
            f"csv:{meter}",
            "--cache-dir",
            str(model_cache),
        ],
    )
    assert result.exit_code == 0, result.output
    with Store.open(db, read_only=True) as store:
        check_baseline_and_run_source(store)
        check_energy_is_busy_minus_idle_power(store)


def collect_cnn9(db: Path, meter: Path, model_cache: Path, *extra: str) -> Result:
    args = ["collect", "--db", str(db), "-f", "onnxruntime", "-m", "cnn9", "-n", "20", "--warmup", "1"]
    result = runner.invoke(app, [*args, "--power", f"csv:{meter}", "--cache-dir", str(model_cache), *extra])
    assert result.exit_code == 0, result.output
    return result


@pytest.mark.frameworks  # runs framework workers
def test_a_named_device_s_baseline_carries_its_name_and_serves_its_runs(model_cache, tmp_path, monkeypatch):
    """On an H200, a baseline measured before `collect --device-name` was stored under the host
    name, another device: the runs found no baseline. `baseline --device-name` names it, and the
    name is remembered for the collects after it; an unnamed baseline's hint says to name it."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    now = time.time()
    meter = tmp_path / "meter.csv"
    write_meter_log(meter, now - 60, now + 600, idle_until_s=now - 20, idle_w=2.0, busy_w=5.0)
    named, unnamed = tmp_path / "named.duckdb", tmp_path / "unnamed.duckdb"
    assert "device lab-pi-3" in record_baseline(named, meter, now, "--device-name", "lab-pi-3").output
    collect_cnn9(named, meter, model_cache)  # no flag: the name the baseline remembered
    with Store.open(named, read_only=True) as store:
        devices = store.con.execute("SELECT name FROM devices").fetchall()
        reasons = store.con.execute("SELECT DISTINCT energy_unavailable_reason FROM phase_energy").fetchall()
        energy = store.con.execute("SELECT energy_per_inference_j FROM run_summary").fetchone()[0]
    assert devices == [("lab-pi-3",)] and reasons == [(None,)] and energy > 0

    (tmp_path / "config" / "edgestats" / "device.json").unlink()
    assert "device lab-pi-3" not in record_baseline(unnamed, meter, now).output  # the host name
    collect_cnn9(unnamed, meter, model_cache, "--device-name", "lab-pi-3")
    with Store.open(unnamed, read_only=True) as store:
        reason = store.con.execute("SELECT energy_unavailable_reason FROM run_summary").fetchone()[0]
    assert reason.endswith(f"--power csv:{meter.name} --device-name 'lab-pi-3'` on the device"), reason


def test_baseline_errors_say_what_to_do(tmp_path):
    db = tmp_path / "r.duckdb"
    result = runner.invoke(app, ["baseline", "--db", str(db), "--power", "none", "--seconds", "1"])
    assert (
        result.exit_code == 1 and "no power source" in result.output and "--power csv:PATH" in result.output
    )
    meter = tmp_path / "meter.csv"
    write_meter_log(meter, 1000.0, 1010.0, idle_until_s=2000.0, idle_w=2.0, busy_w=5.0)
    result = runner.invoke(
        app, ["baseline", "--db", str(db), "--power", f"csv:{meter}", "--seconds", "30", "--start", "1005"]
    )
    assert result.exit_code == 1 and "does not cover the idle window" in result.output
    result = runner.invoke(app, ["baseline", "--db", str(db), "--power", f"csv:{tmp_path / 'missing.csv'}"])
    assert result.exit_code == 1 and "missing.csv" in result.output
    assert not db.exists() or Store.open(db, read_only=True).counts()["baselines"] == 0


def test_collect_with_an_unusable_named_power_source_stops_before_any_run(tmp_path):
    db = tmp_path / "r.duckdb"
    result = runner.invoke(
        app, ["collect", "--db", str(db), "-f", "onnxruntime", "-m", "cnn9", "-n", "5", "--power", "rapl"]
    )
    assert result.exit_code == 1 and "power source 'rapl' is not available" in result.output
    assert not db.exists()


@pytest.mark.frameworks  # runs framework workers
def test_training_epochs_get_energy_from_a_meter_and_the_baseline(tmp_path):
    from edgestats.collectors.training.synthetic import make_dataset

    now = time.time()
    meter = tmp_path / "meter.csv"
    write_meter_log(meter, now - 60, now + 600, idle_until_s=now - 20, idle_w=2.0, busy_w=6.0)
    data = tmp_path / "mnist"
    make_dataset("mnist", data, 400, n_test=100)
    db = tmp_path / "r.duckdb"
    record_baseline(db, meter, now)
    result = runner.invoke(
        app,
        [
            "collect",
            "--db",
            str(db),
            "--kind",
            "training",
            "-f",
            "pytorch",
            "-m",
            "mnist_cnn",
            "--data",
            str(data),
            "--epochs",
            "2",
            "--batch-size",
            "32",
            "--learning-rate",
            "0.01",
            "--power",
            f"csv:{meter}",
        ],
    )
    assert result.exit_code == 0, result.output
    with Store.open(db, read_only=True) as store:
        epochs = store.frame("SELECT * FROM epoch_energy ORDER BY epoch").to_dicts()
        assert len(epochs) == 2
        for e in epochs:  # 6 W busy - 2 W idle = 4 W over each window
            assert e["train_energy_j"] == pytest.approx(4.0 * e["train_s"], rel=0.05)
            assert e["test_energy_j"] == pytest.approx(4.0 * e["test_s"], rel=0.05)
            assert e["train_energy_ci_half_j"] > 0
        run = store.frame(
            "SELECT training_energy_j, energy_j, energy_unavailable_reason FROM training_summary"
        ).to_dicts()[0]
        assert run["training_energy_j"] == pytest.approx(sum(e["train_energy_j"] for e in epochs))
        assert run["energy_unavailable_reason"] is None
