"""A real `collect` on a Raspberry Pi 5 stood in for by a fake `vcgencmd` on PATH
(tests/power_fakes.py): `--power rpi-pmic` read by the sampler through the real subprocess path,
its energy integrated over the run like any sampled power, and the firmware's throttle flags read
before and after the run by the noise sentinel. The fake's `get_throttled` answers 0x0 to the
first read and 0x40004 (currently throttled; throttling has occurred) from then on.
Cost: about 3 s of test time (one onnxruntime cnn9 run of 200 inferences, measured on 2 cores)."""

from __future__ import annotations

import json

import pytest
from power_fakes import PI5_PMIC_READ_ADC, fake_vcgencmd_on_path, pi5_power_w
from typer.testing import CliRunner

from edgestats.cli import app
from edgestats.store.results import Store

pytestmark = pytest.mark.frameworks  # runs a framework worker

runner = CliRunner()
PI5_RAILS = [
    line.split()[0].removesuffix("_A")
    for line in PI5_PMIC_READ_ADC.splitlines()
    if line.split()[0].endswith("_A")
]


def test_a_throttled_run_on_a_pi5_is_flagged_and_its_energy_is_the_pmic_s(model_cache, tmp_path, monkeypatch):
    fake_vcgencmd_on_path(monkeypatch, tmp_path / "bin", throttled=("0x0", "0x40004"))
    db = tmp_path / "r.duckdb"
    args = ["collect", "--db", str(db), "-f", "onnxruntime", "-m", "cnn9", "-n", "200"]
    args += ["--power", "rpi-pmic", "--sample-hz", "20", "--cache-dir", str(model_cache)]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    with Store.open(db, read_only=True) as store:
        run = store.frame(
            "SELECT noisy, noise_reason, power_source, power_rails, energy_unavailable_reason, "
            "environment->'$.noise' AS noise FROM runs"
        ).to_dicts()[0]
        summary = store.frame("SELECT mean_power_w, noisy FROM run_summary").to_dicts()[0]
        phases = store.frame(
            "SELECT phase, energy_gross_j, end_ns - start_ns AS ns FROM phase_energies JOIN phases "
            "USING (run_id, seq, phase) WHERE phase IN ('steady', 'total')"
        ).to_dicts()
        volts = store.frame("SELECT value FROM samples WHERE metric = 'voltage_v:EXT5V'")["value"].to_list()
    reason = (
        "firmware throttling: currently throttled, throttling has occurred "
        "(get_throttled 0x0 before, 0x40004 after)"
    )
    assert run["noisy"] is True and summary["noisy"] is True and reason in run["noise_reason"].split("; ")
    noise = json.loads(run["noise"])
    assert (noise["before"]["pi_throttled"], noise["after"]["pi_throttled"]) == (0x0, 0x40004)
    said = " ".join(result.output.split())  # the terminal may wrap the line
    assert "noisy: " in said and reason in said, result.output
    assert run["power_source"] == "rpi-pmic" and run["power_rails"] == PI5_RAILS
    assert run["energy_unavailable_reason"] is None
    # constant readings: the board's power, V x A summed over the 12 rails, all through the run
    assert summary["mean_power_w"] == pytest.approx(pi5_power_w(), rel=1e-6)
    assert {p["phase"] for p in phases} == {"steady", "total"}
    for p in phases:
        assert p["energy_gross_j"] == pytest.approx(pi5_power_w() * p["ns"] / 1e9, rel=1e-6), p["phase"]
    assert len(volts) >= 2 and set(volts) == {5.12496}
