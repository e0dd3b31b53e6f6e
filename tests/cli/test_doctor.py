"""`edgestats doctor`: the CLI against the real probes, and the probe runner's failure modes.
Cost: about 20 s of test time in make test's parallel lane (measured from a fresh clone on 2 cores)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from edgestats.cli import app
from edgestats.collectors.host.facts import read_device_facts
from edgestats.collectors.host.probes import Probe, module_probe, run_probe, run_probes
from edgestats.registry.power import power_source_names
from edgestats.reports.terminal.doctor import render_text

runner = CliRunner()
MISSING = "edgestats_no_such_module_xyz"


@pytest.fixture(scope="module")
def cli_report() -> dict:
    """One real `doctor --json` run shared by the tests below (importing TF and torch takes seconds)."""
    result = runner.invoke(app, ["doctor", "--json", "--module", MISSING])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


@pytest.mark.frameworks  # doctor imports the frameworks in child processes
@pytest.mark.xdist_group("doctor")  # one worker builds cli_report (seconds of framework imports) for all four
@pytest.mark.parametrize("name", ["pytorch", "tensorflow", "tflite", "onnxruntime"])
def test_frameworks_of_the_dev_environment_are_available(cli_report: dict, name: str) -> None:
    # The dev environment installs edgestats[all]: a framework missing here is a broken setup,
    # so this fails rather than skips.
    probe = cli_report["probes"][name]
    assert probe["available"] is True, probe["reason"]
    assert re.match(r"^\d+\.\d+", probe["version"]), probe["version"]
    assert probe["import_s"] > 0 and probe["reason"] is None
    assert probe["kind"] == "framework"


@pytest.mark.frameworks  # doctor imports the frameworks in child processes
@pytest.mark.xdist_group("doctor")
def test_framework_details(cli_report: dict) -> None:
    probes = cli_report["probes"]
    assert isinstance(probes["pytorch"]["detail"]["cuda_available"], bool)
    assert isinstance(probes["pytorch"]["detail"]["torchscript"], bool)
    assert "CPUExecutionProvider" in probes["onnxruntime"]["detail"]["providers"]
    assert probes["tflite"]["detail"]["backend"] in {"ai_edge_litert", "tflite_runtime", "tensorflow.lite"}


@pytest.mark.frameworks  # doctor imports the frameworks in child processes
@pytest.mark.xdist_group("doctor")
def test_missing_module_reports_why(cli_report: dict) -> None:
    probe = cli_report["probes"][MISSING]
    assert probe["available"] is False and probe["version"] is None
    assert probe["reason"] == f"No module named '{MISSING}'"
    assert probe["kind"] == "module"


@pytest.mark.frameworks  # doctor imports the frameworks in child processes
@pytest.mark.xdist_group("doctor")
def test_report_carries_device_facts(cli_report: dict) -> None:
    device = cli_report["device"]
    assert device["device_id"] == read_device_facts()["device_id"]
    assert device["cores"] >= 1 and device["arch"]
    assert cli_report["python"]["executable"] == sys.executable
    assert 2 <= cli_report["probe_jobs"] <= len(cli_report["probes"])
    assert set(cli_report["probes"]) >= {"nvml", "polars", "statsmodels", "altair", "vl_convert"}
    nvml = cli_report["probes"]["nvml"]
    assert nvml["available"] or nvml["reason"]  # no GPU here: a reason, never a blank


@pytest.mark.frameworks  # doctor imports the frameworks in child processes
@pytest.mark.xdist_group("doctor")
def test_text_output_of_the_real_report(cli_report: dict) -> None:
    text = render_text(cli_report)
    assert re.search(r"^  pytorch\s+yes\s+\d+\.\d+", text, re.MULTILINE)
    assert re.search(rf"^  {MISSING}\s+no\s+No module named", text, re.MULTILINE)
    assert f"device id   {cli_report['device']['device_id']}" in text


@pytest.mark.frameworks  # doctor imports the frameworks in child processes
def test_text_command_with_one_probe() -> None:
    result = runner.invoke(app, ["doctor", "--only", "onnxruntime"])
    assert result.exit_code == 0, result.output
    assert "Frameworks and runtimes" in result.stdout
    assert re.search(r"onnxruntime\s+yes", result.stdout)
    assert "pytorch" not in result.stdout
    assert "1 probe importing at a time" in result.stdout


def test_unknown_probe_is_a_user_error() -> None:
    result = runner.invoke(app, ["doctor", "--only", "caffe"])
    assert result.exit_code == 1
    assert "unknown probe caffe" in result.stderr
    assert "Traceback" not in result.output


def test_help() -> None:
    result = runner.invoke(app, ["doctor", "--help"])
    assert result.exit_code == 0
    assert "which frameworks, runtimes and tools are usable" in result.stdout
    for option in ("--json", "--module", "--only", "--timeout", "--jobs"):
        assert option in result.stdout


def test_missing_framework_says_what_to_install() -> None:
    result = run_probe(Probe("fake", "framework", (MISSING,), extra="torch"))
    assert result["available"] is False
    assert result["reason"] == f"No module named '{MISSING}': pip install 'edgestats[torch]'"


def test_fallback_modules_report_which_one_was_used() -> None:
    result = run_probe(Probe("json-ish", "module", (MISSING, "json")))
    assert result["available"] is True and result["detail"]["module"] == "json"


# -- a broken install must not take doctor down ---------------------------------------------------


def _bad_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str, body: str) -> Probe:
    (tmp_path / f"{name}.py").write_text(body)
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))  # the probe child inherits the environment
    return module_probe(name)


def test_module_that_raises_on_import(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    probe = _bad_module(tmp_path, monkeypatch, "es_raises", "raise RuntimeError('built for another CPU')\n")
    result = run_probe(probe)
    assert result["available"] is False
    assert result["reason"] == "importing es_raises failed: RuntimeError: built for another CPU"


def test_module_that_crashes_the_interpreter(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    probe = _bad_module(
        tmp_path, monkeypatch, "es_crashes", "import os, signal\nos.kill(os.getpid(), signal.SIGSEGV)\n"
    )
    result = run_probe(probe)
    assert result["available"] is False
    assert "killed by SIGSEGV" in result["reason"]


@pytest.mark.slow
def test_module_that_hangs_is_killed_at_the_timeout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The hanging module also starts a grandchild: the timeout must kill the whole group,
    # or communicate() would wait for the grandchild's copy of the pipes. The probe itself is not
    # needed: run_probes below names the module; _bad_module only writes it and sets PYTHONPATH.
    _bad_module(
        tmp_path,
        monkeypatch,
        "es_hangs",
        "import subprocess, sys, time\n"
        "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
        "time.sleep(60)\n",
    )
    start = time.perf_counter()
    results = run_probes([], modules=["es_hangs", "json"], timeout_s=1.5)
    assert time.perf_counter() - start < 30
    assert results["es_hangs"]["available"] is False
    assert "did not finish within 1.5 s" in results["es_hangs"]["reason"]
    assert results["json"]["available"] is True  # the other probes are unaffected


def test_nvml_probe_with_a_driver(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A stand-in pynvml on PYTHONPATH shadows the real one in the probe child (no GPU here).
    (tmp_path / "pynvml.py").write_text(
        "nvmlInit = nvmlShutdown = lambda: None\n"
        "nvmlSystemGetDriverVersion = lambda: b'550.54.15'\n"
        "nvmlDeviceGetCount = lambda: 1\n"
    )
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    result = run_probes(["nvml"])["nvml"]
    assert result["available"] is True, result["reason"]
    assert result["detail"] == {"module": "pynvml", "driver_version": "550.54.15", "device_count": 1}


def test_collectors_do_not_import_the_analysis_stack() -> None:
    code = (
        "import sys, edgestats.collectors.host.facts, edgestats.collectors.host.probes, "
        "edgestats.collectors.doctor\n"
        "print(sorted(m for m in ('polars', 'statsmodels', 'altair', 'vl_convert', 'torch', 'tensorflow') "
        "if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_probe_child_starts_with_nothing_heavy_loaded() -> None:
    # The child imports edgestats.collectors.host.probes before the probed module: if that
    # pulled in numpy, every framework's import time would be understated by numpy's.
    code = (
        "import sys, edgestats.collectors.host.probes\n"
        "print(sorted(m for m in ('numpy', 'pyarrow', 'duckdb', 'psutil') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


@pytest.mark.frameworks  # doctor imports the frameworks in child processes
@pytest.mark.xdist_group("doctor")
def test_report_lists_every_power_source_and_sensor(cli_report: dict) -> None:
    sources = {s["name"]: s for s in cli_report["power_sources"]}
    assert set(sources) == set(power_source_names())
    for source in sources.values():
        assert source["usable"] or source["reason"], source  # usable, or why not
    sensors = {s["name"]: s for s in cli_report["sensors"]}
    assert sensors["process memory, CPU, I/O"]["usable"] is True
    assert all(s["detail"] for s in sensors.values())


def test_power_and_sensor_sections_on_a_fake_laptop_tree(tmp_path: Path) -> None:
    from power_fakes import LAPTOP_ZONES, make_rapl_tree

    from edgestats.collectors.power.selection import describe_sources
    from edgestats.collectors.telemetry.session import describe_sensors
    from edgestats.reports.terminal.doctor import power_lines

    make_rapl_tree(tmp_path, LAPTOP_ZONES)
    zone = tmp_path / "sys/class/thermal/thermal_zone0"
    zone.mkdir(parents=True)
    (zone / "type").write_text("x86_pkg_temp\n")
    (zone / "temp").write_text("45000\n")
    sources = describe_sources(tmp_path)
    sensors = describe_sensors(tmp_path)
    text = "\n".join(power_lines(sources, sensors))
    assert re.search(r"rapl\s+yes\s+rails: package-0, core, uncore, dram, psys", text), text
    assert re.search(r"jetson\s+no\s+no INA3221", text), text
    assert re.search(r"temperatures\s+yes\s+1 thermal sensor: x86_pkg_temp", text), text
    assert re.search(r"system CPU and per-core use\s+no\s+.*proc/stat is missing", text), text


# -- plug-ins reach doctor through the registries only ----------------------------------------------


def test_a_registered_runtime_is_probed_with_its_adapters_detail(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A runtime added to the registry is probed, with its extra and its adapter module's
    probe_detail, and listed by --only's help: host/probes.py names no framework."""
    from edgestats.collectors.doctor import doctor_report, only_help
    from edgestats.registry import runtimes as registry

    (tmp_path / "es_fake_adapter.py").write_text(
        "def probe_detail(module):\n    return {'fake_backend': module.__name__}\n"
    )
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))  # the probe child finds the adapter module there
    fake = registry.RuntimeEntry(
        "fakert",
        "Fake RT",
        "es_fake_adapter:FakeAdapter",
        (MISSING, "json"),
        "fake",
        "a fake runtime",
        "docs/runtimes.md#pytorch",
    )
    missing = registry.RuntimeEntry(
        "fakemissing",
        "Fake missing",
        "es_fake_adapter:FakeAdapter",
        (MISSING,),
        "fake",
        "a fake runtime that is not installed",
        "docs/runtimes.md#pytorch",
    )
    monkeypatch.setattr(registry, "RUNTIMES", (*registry.RUNTIMES, fake, missing))
    assert "fakert" in only_help() and "fakemissing" in only_help()
    report = doctor_report(tmp_path, probes=["fakert", "fakemissing"])
    probe = report["probes"]["fakert"]
    assert probe["available"] and probe["kind"] == "framework", probe
    assert probe["detail"] == {"module": "json", "fake_backend": "json"}
    assert (
        report["probes"]["fakemissing"]["reason"]
        == f"No module named '{MISSING}': pip install 'edgestats[fake]'"
    )
    text = render_text(report)
    assert re.search(r"^Frameworks and runtimes.*\n  fakert\s+yes", text, re.MULTILINE), text


def test_a_registered_power_source_is_in_the_report(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from power_fakes import register_fake_board

    from edgestats.collectors.doctor import doctor_report

    register_fake_board(monkeypatch)
    (tmp_path / "fakeboard").write_text("1\n")
    report = doctor_report(tmp_path, probes=[])
    sources = {s["name"]: s for s in report["power_sources"]}
    assert sources["fakeboard"]["usable"] and sources["fakeboard"]["rails"] == ["board"]
    assert re.search(r"fakeboard\s+yes\s+rails: board", render_text(report))


def test_noise_section_of_a_fake_board(tmp_path: Path) -> None:
    """What would make runs noisy, from a fake board's /proc and /sys through the real readers:
    a powersave governor, turbo on and a hot sensor warn, each with its fix; the real machine's
    busy processes never leak into a fake root."""

    def write(relative: str, text: str) -> None:
        (tmp_path / relative).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / relative).write_text(text + "\n")

    write("proc/stat", "cpu  100 0 0 900 0 0 0 0\ncpu0 50 0 0 450 0 0 0 0")
    write("proc/loadavg", "0.05 0.10 0.20 1/90 4242")
    write("proc/meminfo", "MemTotal: 4000000 kB\nSwapTotal: 0 kB\nSwapFree: 0 kB")
    write("sys/devices/system/cpu/cpu0/cpufreq/scaling_governor", "powersave")
    write("sys/devices/system/cpu/cpufreq/boost", "1")
    write("sys/class/thermal/thermal_zone0/type", "cpu-thermal")
    write("sys/class/thermal/thermal_zone0/temp", "83500")
    from edgestats.collectors.doctor import doctor_report

    report = doctor_report(tmp_path, probes=[])
    checks = {c["name"]: c for c in report["noise"]}
    assert (checks["governor"]["ok"], checks["turbo"]["ok"], checks["temperature"]["ok"]) == (
        False,
        False,
        False,
    )
    # a fake /proc/stat does not move while doctor watches: background CPU cannot be told
    assert (
        checks["background CPU"]["ok"] is None
        and "unchanged while watching" in checks["background CPU"]["detail"]
    )
    assert checks["swap"]["ok"] is True and checks["load average"]["ok"] is True
    text = render_text(report)
    assert "Noise (what would disturb measurements here" in text
    assert re.search(r"governor +warn  powersave\n +fix: .*cpupower frequency-set -g performance", text)
    assert re.search(r"temperature +warn  hottest sensor 84 C", text)


def test_progress_hears_each_probe_as_it_finishes() -> None:
    """doctor printed nothing for 4-8 s while it imported TensorFlow: its spinner now counts the
    probes done and names those still importing, fed by run_probes' callbacks."""
    from edgestats.reports.terminal.doctor import ProbeStatus

    class Status:  # rich's Status, as ProbeStatus drives it
        def __init__(self) -> None:
            self.texts: list[str] = []

        def update(self, text: str) -> None:
            self.texts.append(text)

    status = Status()
    progress = ProbeStatus(status)
    results = run_probes(["polars"], modules=["json", "csv"], on_start=progress.start, on_done=progress.done)
    assert set(results) == {"polars", "json", "csv"}
    assert status.texts[0].startswith("doctor: imports 0/3 done (waiting for polars, json, csv)")
    assert status.texts[-1] == "doctor: imports 3/3 done; reading sensors and load"
    assert len(status.texts) == 4
