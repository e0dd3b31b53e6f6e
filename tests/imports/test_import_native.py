"""edgestats import --format: each benchmark tool's real output (tests/data/native/README.md says
where each file came from) imports as one run whose figures are the numbers the file prints."""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_asserts import one_line_error
from typer.testing import CliRunner

from edgestats.cli import app
from edgestats.errors import ImportFileError
from edgestats.imports.importer import import_results
from edgestats.store.results import Store

runner = CliRunner()
NATIVE = Path(__file__).parents[1] / "data" / "native"


def imported(tmp_path: Path, name: str, fmt: str, device: str = "board") -> dict:
    """The one run the file imports as: its runs and run_results columns, and its extras by key."""
    db = tmp_path / "r.duckdb"
    report = import_results(db, NATIVE / name, kind=None, fmt=fmt, device=device)
    assert report.runs_added == 1 and report.rows == 1
    with Store.open(db, read_only=True) as store:
        run = store.frame(
            "SELECT r.kind, r.status, r.framework, r.model, r.threads, r.batch_size, r.iterations, "
            "r.accelerator, r.source, d.name AS device, res.* FROM runs r JOIN devices d USING (device_id) "
            "JOIN run_results res USING (run_id)"
        ).to_dicts()
        extra = store.frame("SELECT key, value, value_num FROM run_extra_values").to_dicts()
    assert len(run) == 1
    run = run[0]
    run["extra"] = {e["key"]: e["value_num"] if e["value_num"] is not None else e["value"] for e in extra}
    run["notes"] = report.notes
    return run


def in_file(name: str, *lines: str) -> None:
    """The lines a test reads its expected figures from are in the file, as written."""
    text = (NATIVE / name).read_text()
    for line in lines:
        assert line in text, f"{line!r} is not in {name}"


def test_tflite_benchmark_model_with_percentiles(tmp_path):
    name = "benchmark_model_am62x_ssd_mobilenet_v2.txt"
    in_file(
        name,
        "count=50 first=1249964 curr=1240143 min=1238588 max=1252566 avg=1.24027e+06 std=2565 "
        "p5=1238753 median=1239807 p95=1247415",
        "Inference timings in us: Init: 5579, First inference: 1357602, Warmup (avg): 1.3576e+06, "
        "Inference (avg): 1.24027e+06",
        "(MB): init=6.36328 overall=109.832",
    )
    run = imported(tmp_path, name, "benchmark_model")
    assert (run["kind"], run["status"], run["framework"], run["device"]) == (
        "inference",
        "ok",
        "tflite",
        "board",
    )
    assert run["model"] == "ssd_mobilenet_v2_coco" and run["iterations"] == 50
    assert run["latency_ms"] == pytest.approx(1240.27)  # Inference (avg), us -> ms
    assert run["load_time_s"] == pytest.approx(0.005579)  # Init: 5579 us
    assert run["mem_max_mb"] == pytest.approx(109.832)
    assert run["latency_p50_ms"] == pytest.approx(1239.807)  # median=1239807 us: a run_results column (0007)
    assert run["latency_p90_ms"] is None and run["latency_p99_ms"] is None  # the tool printed neither
    x = run["extra"]
    assert "latency_p50_ms" not in x and x["latency_p5_ms"] == pytest.approx(1238.753)
    assert x["latency_p95_ms"] == pytest.approx(1247.415) and x["latency_std_ms"] == pytest.approx(2.565)
    assert (x["latency_min_ms"], x["latency_max_ms"]) == (pytest.approx(1238.588), pytest.approx(1252.566))
    assert x["first_inference_ms"] == pytest.approx(1357.602) and x["warmup_avg_ms"] == pytest.approx(1357.6)
    assert x["mem_init_mb"] == pytest.approx(6.36328)
    assert run["source"] == f"import:{name}"


def test_tflite_benchmark_model_older_output_with_op_profiling(tmp_path):
    """No 'INFO: ' prefix, no percentiles, and the op profiler's own 'Timings (microseconds): count='
    lines after the summary, which are not the run's statistics."""
    name = "benchmark_model_qemuriscv64_mobilenet_v1.txt"
    in_file(
        name,
        "Num threads: [4]",
        "count=50 first=2990275 curr=2913402 min=2727568 max=3189954 avg=2.95034e+06 std=109798",
        "Inference (avg): 2.95034e+06",
        "init=4.21094 overall=46.0859",
    )
    run = imported(tmp_path, name, "benchmark_model")
    assert (run["model"], run["threads"], run["iterations"]) == ("mobilenet_v1_1.0_224", 4, 50)
    assert run["latency_ms"] == pytest.approx(2950.34) and run["load_time_s"] == pytest.approx(0.017187)
    assert run["mem_max_mb"] == pytest.approx(46.0859)
    assert run["extra"]["latency_min_ms"] == pytest.approx(2727.568)
    assert run["extra"]["latency_std_ms"] == pytest.approx(109.798)
    assert "latency_p50_ms" not in run["extra"]


def test_openvino_benchmark_app_console(tmp_path):
    name = "benchmark_app_cnn9_latency_hint.txt"
    in_file(
        name,
        "Count:            200 iterations",
        "Median:        0.38 ms",
        "Average:       1.43 ms",
        "Min:           0.24 ms",
        "Max:           10.48 ms",
        "Throughput:   683.33 FPS",
        "First inference took 6.80 ms",
        "End of compilation memory usage: Peak 570028 KB",
        "INFERENCE_NUM_THREADS: 2",
        "Read model took 23.42 ms",
        "Reshape model took 0.71 ms",
        "Compile model took 143.69 ms",
    )
    run = imported(tmp_path, name, "benchmark_app")
    assert (run["framework"], run["iterations"], run["threads"], run["batch_size"], run["accelerator"]) == (
        "openvino",
        200,
        2,
        1,
        "cpu",
    )
    assert run["latency_ms"] == pytest.approx(1.43)
    assert run["latency_p50_ms"] == pytest.approx(0.38) and "latency_p50_ms" not in run["extra"]
    assert (run["extra"]["latency_min_ms"], run["extra"]["latency_max_ms"]) == (
        pytest.approx(0.24),
        pytest.approx(10.48),
    )
    assert run["extra"]["throughput_fps"] == pytest.approx(683.33)
    assert run["extra"]["first_inference_ms"] == pytest.approx(6.80)
    assert run["mem_max_mb"] == pytest.approx(570028 / 1024)
    assert run["load_time_s"] == pytest.approx((23.42 + 0.71 + 143.69) / 1000)  # read + reshape + compile
    assert run["extra"]["performance_hint"] == "LATENCY"


def test_openvino_benchmark_app_console_in_microseconds_with_a_percentile(tmp_path):
    name = "benchmark_app_cnn9_p90.txt"
    in_file(name, "90 percentile:     515.06 us", "Average:       593.92 us", "Max:           27128.33 us")
    run = imported(tmp_path, name, "benchmark_app")
    assert run["latency_ms"] == pytest.approx(0.59392) and run["threads"] == 1
    assert run["latency_p90_ms"] == pytest.approx(0.51506)
    assert run["extra"]["latency_max_ms"] == pytest.approx(27.12833)


@pytest.mark.parametrize(
    "name, percentile, value",
    [
        ("benchmark_app_cnn9_report.json", "latency_p90_ms", 0.52),  # "latency (90 percentile) (ms)": "0.52"
        ("benchmark_app_cnn9_report.csv", "latency_p50_ms", 0.37),  # "latency (ms);0.37" (the median)
    ],
)
def test_openvino_benchmark_app_report_files(tmp_path, name, percentile, value):
    run = imported(tmp_path, name, "benchmark_app")
    text = (NATIVE / name).read_text()
    mean = 0.59 if name.endswith(".json") else 0.45
    assert (f'"avg latency": "{mean}"' in text) or (f"avg latency;{mean}" in text)
    assert run["latency_ms"] == pytest.approx(mean) and run[percentile] == pytest.approx(value)
    assert (run["model"], run["threads"], run["iterations"], run["batch_size"]) == (
        "cnn9-seed0.fp32.openvino",
        1,
        200,
        1,
    )
    assert run["extra"]["throughput_fps"] == pytest.approx(1174.14 if name.endswith(".json") else 1838.30)


def test_onnxruntime_perf_test(tmp_path):
    name = "perf_test_resnet50v2_sme2.txt"
    in_file(
        name,
        "Session creation time cost: 0.217932 s",
        "First inference time cost: 196 ms",
        "Total inference requests: 5",
        "Average inference time cost total: 98.961997 ms",
        "Peak working set size: 271122432 bytes",
        "P50 Latency: 0.0995086 s",
        "P90 Latency: 0.101519 s",
        "P999 Latency: 0.101519 s",
        "Min Latency: 0.0958204 s",
        "Setting intra_op_num_threads to 1",
    )
    run = imported(tmp_path, name, "perf_test")
    assert (run["framework"], run["iterations"], run["threads"]) == ("onnxruntime", 5, 1)
    assert run["latency_ms"] == pytest.approx(98.961997) and run["load_time_s"] == pytest.approx(0.217932)
    assert run["mem_max_mb"] == pytest.approx(271122432 / 2**20)
    assert run["latency_p50_ms"] == pytest.approx(99.5086) and run["latency_p90_ms"] == pytest.approx(101.519)
    x = run["extra"]
    assert "latency_p99_ms" not in x and x["latency_p99_9_ms"] == pytest.approx(101.519)
    assert x["latency_min_ms"] == pytest.approx(95.8204) and x["first_inference_ms"] == pytest.approx(196)
    assert x["throughput_ips"] == pytest.approx(10.104)


def test_mlperf_loadgen_summary(tmp_path):
    name = "mlperf_orin_resnet50_singlestream_summary.txt"
    in_file(
        name,
        "Mean latency (ns)               : 636375",
        "50.00 percentile latency (ns)   : 636227",
        "90.00 percentile latency (ns)   : 640258",
        "99.00 percentile latency (ns)   : 643843",
        "99.90 percentile latency (ns)   : 649539",
        "Processed at least 64 queries (935541).",
        "QPS w/o loadgen overhead        : 1571.40",
    )
    run = imported(tmp_path, name, "mlperf", device="Jetson AGX Orin")
    assert run["latency_ms"] == pytest.approx(0.636375) and run["iterations"] == 935541
    assert run["latency_p50_ms"] == pytest.approx(0.636227) and run["latency_p90_ms"] == pytest.approx(
        0.640258
    )
    assert run["latency_p99_ms"] == pytest.approx(0.643843)
    x = run["extra"]
    assert x["latency_p99_9_ms"] == pytest.approx(0.649539)
    assert x["throughput_qps"] == pytest.approx(1571.40)
    assert (x["scenario"], x["mlperf_mode"], x["mlperf_result"], x["sut_name"]) == (
        "SingleStream",
        "PerformanceOnly",
        "VALID",
        "LWIS_Server",
    )


def test_run_summary_shows_the_tools_mean(tmp_path):
    imported(tmp_path, "perf_test_resnet50v2_sme2.txt", "perf_test")
    with Store.open(tmp_path / "r.duckdb", read_only=True) as store:
        got = store.frame("SELECT latency_mean_ms, rss_peak_bytes FROM run_summary").to_dicts()
    assert got == [{"latency_mean_ms": pytest.approx(98.961997), "rss_peak_bytes": pytest.approx(271122432)}]


def test_a_file_in_another_format_is_refused_naming_both(tmp_path):
    db = tmp_path / "r.duckdb"
    with pytest.raises(ImportFileError) as caught:
        import_results(db, NATIVE / "perf_test_resnet50v2_sme2.txt", kind=None, fmt="mlperf", device="x")
    message = str(caught.value)
    assert "not MLPerf Inference LoadGen summary output (--format mlperf)" in message
    assert "MLPerf Results Summary" in message and "use --format perf_test" in message
    assert not db.exists()


@pytest.mark.parametrize("fmt", ["benchmark_model", "benchmark_app", "perf_test", "mlperf"])
def test_a_table_is_not_a_tools_output(tmp_path, fmt):
    table = tmp_path / "t.csv"
    table.write_text("device,latency_ms\npi,3.5\n")
    with pytest.raises(ImportFileError, match=rf"not .* output \(--format {fmt}\): expected "):
        import_results(tmp_path / "r.duckdb", table, kind=None, fmt=fmt)


def test_cli_needs_no_kind_and_a_second_import_adds_nothing(tmp_path):
    db, name = tmp_path / "r.duckdb", NATIVE / "mlperf_orin_resnet50_singlestream_summary.txt"
    first = runner.invoke(app, ["import", str(db), str(name), "--format", "mlperf", "--device", "orin"])
    assert first.exit_code == 0, first.output
    assert "1 row -> 1 run added" in first.output and "latency_p90_ms" in first.output
    again = runner.invoke(app, ["import", str(db), str(name), "--format", "mlperf", "--device", "orin"])
    assert again.exit_code == 0 and "0 runs added, 1 already in" in again.output


def test_cli_errors(tmp_path):
    db, name = tmp_path / "r.duckdb", str(NATIVE / "perf_test_resnet50v2_sme2.txt")
    wrong = one_line_error(
        runner.invoke(app, ["import", str(db), name, "--format", "tflite", "--device", "x"])
    )
    assert "use one of benchmark_model, benchmark_app, perf_test, mlperf" in wrong
    training = one_line_error(
        runner.invoke(app, ["import", str(db), name, "--format", "perf_test", "--kind", "training"])
    )
    assert "one inference run" in training
    no_kind = one_line_error(runner.invoke(app, ["import", str(db), name, "--device", "x"]))
    assert "--kind is missing" in no_kind
    no_device = one_line_error(runner.invoke(app, ["import", str(db), name, "--format", "perf_test"]))
    assert "--device NAME" in no_device
    assert not db.exists()
