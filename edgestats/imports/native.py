"""`edgestats import --format F`: the output of a runtime's own benchmark tool, as one run.

Each parser reads one tool's real output and returns one row in the importer's canonical
columns (latency_ms, load_time_s, mem_max_mb, iterations, threads, batch_size, model,
framework, accelerator), every figure converted to the column's unit but otherwise as the tool
reports it; what edgestats has no column for (percentiles, first inference, throughput, ...)
keeps a name with its unit and goes to runs.extra, queryable in the view run_extra.
latency_ms is the tool's mean (each of these tools reports one); its median, where it reports
one, is latency_p50_ms. docs/cli/import.md, "Benchmark tools' output".

The row is then staged like a CSV row (all text, in table `staged`), so the importer's checks,
unit handling, --map and --device work on it unchanged.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import duckdb

from edgestats.errors import ImportFileError
from edgestats.imports.llama_bench import parse_llama_bench
from edgestats.store.results import quote_ident
from edgestats.store.userpaths import read_bounded
from edgestats.textfiles import decode_utf8

MAX_OUTPUT_BYTES = 64 * 2**20  # a tool's console output or summary is kilobytes; read no more than this
NUMBER = r"([-+]?\d+(?:\.\d*)?(?:[eE][-+]?\d+)?)"
TIME_MS = {"ns": 1e-6, "us": 1e-3, "ms": 1.0, "s": 1e3}


def _find(pattern: str, text: str, flags: int = re.MULTILINE) -> re.Match | None:
    return re.search(pattern, text, flags)


def _num(pattern: str, text: str, scale: float = 1.0) -> float | None:
    """The first number that `pattern` (one group) finds, times `scale`; None when absent."""
    match = _find(pattern, text)
    return float(match.group(1)) * scale if match else None


def _int(pattern: str, text: str) -> int | None:
    match = _find(pattern, text)
    return int(match.group(1)) if match and match.group(1).isdigit() else None


def _not_format(path: Path, fmt: str, expected: str, text: str) -> ImportFileError:
    """The error for a file that is not the stated tool's output, naming the format it looks like."""
    other = next(
        (name for name, (_, sign) in FORMATS.items() if name != fmt and re.search(sign, text, re.MULTILINE)),
        None,
    )
    looks = f"; it looks like {other} output: use --format {other}" if other else ""
    return ImportFileError(
        f"{path}: not {TOOLS[fmt]} output (--format {fmt}): expected {expected}{looks}; nothing was imported"
    )


def _whole(path: Path, fmt: str, text: str, last: str, shown: str) -> None:
    """ImportFileError when the tool's output lacks the line it always prints last (`last`): half a
    file would otherwise import as a run with half its figures."""
    if not _find(last, text):
        raise ImportFileError(
            f"{path}: {TOOLS[fmt]} output cut short: it ends before {shown}, the line the tool prints "
            "last; import the whole output; nothing was imported"
        )


def parse_benchmark_model(text: str, path: Path) -> dict:
    """TFLite / LiteRT `benchmark_model` console output (with or without logcat's 'INFO: ')."""
    summary = _find(
        rf"Inference timings in us: Init: {NUMBER}, First inference: {NUMBER}, "
        rf"Warmup \(avg\): {NUMBER}, Inference \(avg\): {NUMBER}",
        text,
    )
    if summary is None:
        raise _not_format(
            path,
            "benchmark_model",
            "a line 'Inference timings in us: Init: ..., First inference: ..., "
            "Warmup (avg): ..., Inference (avg): ...'",
            text,
        )
    init, first, warmup, mean = (float(g) for g in summary.groups())
    row: dict = {
        "framework": "tflite",
        "latency_ms": mean / 1e3,
        "load_time_s": init / 1e6,
        "first_inference_ms": first / 1e3,
        "warmup_avg_ms": warmup / 1e3,
    }
    graph = _find(r"Graph: \[([^\]]+)\]", text)
    row["model"] = Path(graph.group(1)).stem if graph else None
    row["threads"] = _int(r"(?:Num threads|#threads used for CPU inference): \[(-?\d+)\]", text)
    # the steady-state runs' statistics: the last 'count=' line before the summary (the first is
    # the warm-up's; 'Timings (microseconds): count=' lines are the op profiler's)
    runs = [
        line
        for line in text[: summary.start()].splitlines()
        if re.search(r"(?:^|\s)count=\d+ first=", line) and "Timings (microseconds)" not in line
    ]
    if runs:
        stats = dict(re.findall(rf"(\w+)={NUMBER}", runs[-1]))
        row["iterations"] = int(float(stats["count"]))
        names = {
            "min": "latency_min_ms",
            "max": "latency_max_ms",
            "std": "latency_std_ms",
            "p5": "latency_p5_ms",
            "median": "latency_p50_ms",
            "p95": "latency_p95_ms",
        }
        row.update({col: float(stats[key]) / 1e3 for key, col in names.items() if key in stats})
    memory = _find(rf"\(MB\): init={NUMBER} overall={NUMBER}", text)
    if memory:
        row["mem_init_mb"], row["mem_max_mb"] = float(memory.group(1)), float(memory.group(2))
    peak = _num(rf"Overall peak memory footprint \(MB\) via periodic monitoring: {NUMBER}", text)
    if peak is not None:
        row["mem_max_mb"] = peak
    return row


def _app_latencies(text: str) -> dict:
    """benchmark_app's console 'Latency:' block: Median / NN percentile, Average, Min, Max."""
    row = {}
    for name, value, unit in re.findall(
        rf"^\[ INFO \]\s+(Median|Average|Min|Max|\d+ percentile):\s+{NUMBER} (us|ms)\s*$", text, re.MULTILINE
    ):
        ms = float(value) * TIME_MS[unit]
        column = {
            "Median": "latency_p50_ms",
            "Average": "latency_ms",
            "Min": "latency_min_ms",
            "Max": "latency_max_ms",
        }.get(name) or f"latency_p{name.split()[0]}_ms"
        row[column] = ms
    return row


def _app_console(text: str, path: Path) -> dict:
    """OpenVINO `benchmark_app` console output (steps 1-11)."""
    if "Dumping statistics report" not in text or "Throughput:" not in text:
        raise _not_format(
            path,
            "benchmark_app",
            "its console output with '[Step 11/11] Dumping statistics report', "
            "'Latency:' and 'Throughput:' lines, or its -report_folder file (benchmark_report.csv or .json)",
            text,
        )
    row: dict = {"framework": "openvino", **_app_latencies(text)}
    phases = {
        name: _num(rf"{name.capitalize()} model took {NUMBER} ms", text)
        for name in ("read", "reshape", "compile")
    }
    row.update({f"{name}_model_ms": ms for name, ms in phases.items() if ms is not None})
    if any(ms is not None for ms in phases.values()):
        row["load_time_s"] = sum(ms for ms in phases.values() if ms is not None) / 1e3
    row["first_inference_ms"] = _num(rf"First inference took {NUMBER} ms", text)
    row["iterations"] = _int(r"Count:\s+(\d+) iterations", text)
    row["duration_ms"] = _num(rf"Duration:\s+{NUMBER} ms", text)
    row["throughput_fps"] = _num(rf"Throughput:\s+{NUMBER} FPS", text)
    row["threads"] = _int(r"INFERENCE_NUM_THREADS: (\d+)", text)
    row["batch_size"] = _int(r"Model batch size: (\d+)", text)
    row["streams"] = _int(r"NUM_STREAMS: (\d+)", text)
    hint = _find(r"PERFORMANCE_HINT: (\w+)", text)
    row["performance_hint"] = hint.group(1) if hint else None
    devices = _find(r"Execution Devices:\s*\['([^']+)'", text)
    row["accelerator"] = devices.group(1).lower() if devices else None
    row["mem_max_mb"] = _num(rf"End of compilation memory usage: Peak {NUMBER} KB", text, 1 / 1024)
    row["compile_ram_used_mb"] = _num(rf"Compile model ram used {NUMBER} KB", text, 1 / 1024)
    return row


def _app_report_sections(text: str, path: Path) -> dict[str, dict[str, str]]:
    """benchmark_app's statistics report (-report_folder), JSON (-json_stats) or ';'-separated CSV,
    as {section: {key: value}}."""
    if text.lstrip().startswith("{"):
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ImportFileError(
                f"{path}: benchmark_app report is not valid JSON ({exc}); nothing was imported"
            ) from None
        return {
            key: {k: str(v) for k, v in value.items()}
            for key, value in data.items()
            if isinstance(value, dict)
        }
    sections: dict[str, dict[str, str]] = {}
    current = None
    for line in text.splitlines():
        if not line.strip():
            current = None
        elif ";" not in line and current is None:
            current = sections.setdefault(line.strip().lower().replace(" ", "_"), {})
        elif current is not None and ";" in line:
            key, _, value = line.partition(";")
            current[key.strip()] = value.strip()
    return sections


def _app_report(text: str, path: Path) -> dict:
    sections = _app_report_sections(text, path)
    results, setup = sections.get("execution_results", {}), sections.get("configuration_setup", {})
    options = sections.get("cmd_options") or sections.get("command_line_parameters") or {}

    def number(key: str, section: dict = results) -> float | None:
        value = section.get(key)
        return float(value) if value not in (None, "") and re.fullmatch(NUMBER, value) else None

    row: dict = {
        "framework": "openvino",
        "latency_ms": number("avg latency"),
        "latency_min_ms": number("min latency"),
        "latency_max_ms": number("max latency"),
        "throughput_fps": number("throughput"),
        "first_inference_ms": number("first inference time (ms)"),
        "duration_ms": number("total execution time (ms)"),
    }
    for key in results:
        percentile = re.fullmatch(r"latency \((?:(\d+) percentile|median)\) \(ms\)|latency \(ms\)", key)
        if percentile:
            row[f"latency_p{percentile.group(1) or 50}_ms"] = number(key)
    phases = {name: number(f"{name} model time (ms)") for name in ("read", "reshape", "compile")}
    row.update({f"{name}_model_ms": ms for name, ms in phases.items() if ms is not None})
    if any(ms is not None for ms in phases.values()):
        row["load_time_s"] = sum(ms for ms in phases.values() if ms is not None) / 1e3
    iterations = number("total number of iterations")
    row["iterations"] = int(iterations) if iterations is not None else None
    batch, streams = number("batch size", setup), number("number of CPU streams", setup)
    row["batch_size"], row["streams"] = (int(batch) if batch else None), (int(streams) if streams else None)
    row["accelerator"] = (setup.get("target device") or "").lower() or None
    threads = options.get("-nthreads")
    row["threads"] = int(threads) if threads and threads.isdigit() else None
    row["model"] = Path(options["-m"]).stem if options.get("-m") else None
    if row["latency_ms"] is None:
        raise _not_format(path, "benchmark_app", "an 'Execution results' section with 'avg latency'", text)
    return row


def parse_benchmark_app(text: str, path: Path) -> dict:
    """OpenVINO `benchmark_app`: its console output, or its report (benchmark_report.csv / .json)."""
    if text.lstrip().startswith("{") or re.search(r"^Execution results\s*$", text, re.MULTILINE):
        return _app_report(text, path)
    return _app_console(text, path)


def parse_perf_test(text: str, path: Path) -> dict:
    """ONNX Runtime `onnxruntime_perf_test` console output."""
    mean = _num(rf"^Average inference time cost(?: total)?: {NUMBER} ms", text)
    if mean is None:
        raise _not_format(
            path,
            "perf_test",
            "a line 'Average inference time cost: ... ms' (or 'Average inference time cost total: ... ms')",
            text,
        )
    row: dict = {
        "framework": "onnxruntime",
        "latency_ms": mean,
        "load_time_s": _num(rf"^Session creation time cost: {NUMBER} s", text),
        "first_inference_ms": _num(rf"^First inference time cost: {NUMBER} ms", text),
        "iterations": _int(r"^Total inference requests: (\d+)", text),
        "throughput_ips": _num(rf"^Number of inferences per second: {NUMBER}", text),
        "avg_cpu_usage_pct": _num(rf"^(?:Avg|Total) CPU usage: {NUMBER} %", text),
        "mem_max_mb": _num(rf"^Peak working set size: {NUMBER} bytes", text, 2.0**-20),
        "threads": _int(r"^Setting intra_op_num_threads to (\d+)", text),
    }
    for name, seconds in re.findall(rf"^(Min|Max|P\d+) Latency: {NUMBER} s", text, re.MULTILINE):
        row[f"latency_{name.lower().replace('p999', 'p99_9')}_ms"] = float(seconds) * 1e3
    _whole(path, "perf_test", text, rf"^P999 Latency: {NUMBER} s\s*$", "'P999 Latency: … s'")
    provider = _find(r"^using (\w+ExecutionProvider)", text)
    row["execution_provider"] = provider.group(1) if provider else None
    return row


def parse_mlperf(text: str, path: Path) -> dict:
    """MLPerf Inference LoadGen's mlperf_log_summary.txt (any scenario, performance mode)."""
    if not _find(r"^MLPerf Results Summary\s*$", text):
        raise _not_format(
            path, "mlperf", "LoadGen's mlperf_log_summary.txt, beginning 'MLPerf Results Summary'", text
        )

    _whole(path, "mlperf", text, r"^(?:No errors|\d+ ERRORS?) encountered", "'No errors encountered …'")

    def field(name: str) -> str | None:
        match = _find(rf"^{re.escape(name)}\s*: (.+?)\s*$", text)
        return match.group(1) if match else None

    row: dict = {
        "latency_ms": _num(rf"^Mean latency \(ns\)\s*: {NUMBER}", text, 1e-6),
        "latency_min_ms": _num(rf"^Min latency \(ns\)\s*: {NUMBER}", text, 1e-6),
        "latency_max_ms": _num(rf"^Max latency \(ns\)\s*: {NUMBER}", text, 1e-6),
    }
    for percentile, ns in re.findall(
        rf"^(\d+\.\d+) percentile latency \(ns\)\s*: {NUMBER}", text, re.MULTILINE
    ):
        name = percentile.rstrip("0").rstrip(".").replace(".", "_")
        row[f"latency_p{name}_ms"] = float(ns) * 1e-6
    row["iterations"] = _int(r"Processed at least \d+ queries \((\d+)\)", text)
    row["throughput_qps"] = _num(rf"^QPS w/o loadgen overhead\s*: {NUMBER}", text)
    row["samples_per_second"] = _num(rf"^Samples per second\s*: {NUMBER}", text)
    row["samples_per_query"] = _int(r"^samples_per_query : (\d+)", text)
    row.update(
        {
            "sut_name": field("SUT name"),
            "scenario": field("Scenario"),
            "mlperf_mode": field("Mode"),
            "mlperf_result": field("Result is"),
        }
    )
    if row["latency_ms"] is None and row["samples_per_second"] is None:
        raise ImportFileError(
            f"{path}: an MLPerf summary with neither 'Mean latency (ns)' nor 'Samples per second' "
            f"(mode {row['mlperf_mode']}): import the performance run's summary; nothing was imported"
        )
    return row


# format -> (parser, a line that only this tool's output has: used to say what a wrong file is)
FORMATS = {
    "benchmark_model": (parse_benchmark_model, r"Inference timings in us:"),
    "benchmark_app": (
        parse_benchmark_app,
        r"Dumping statistics report|^Execution results\s*$|\"execution_results\"",
    ),
    "perf_test": (parse_perf_test, r"^Average inference time cost"),
    "mlperf": (parse_mlperf, r"^MLPerf Results Summary"),
    "llama-bench": (
        parse_llama_bench,
        r"^\| model .*\| t/s|^build_commit,|\"build_commit\"|^INSERT INTO llama_bench",
    ),
}
TOOLS = {
    "benchmark_model": "TFLite benchmark_model",
    "benchmark_app": "OpenVINO benchmark_app",
    "perf_test": "ONNX Runtime onnxruntime_perf_test",
    "mlperf": "MLPerf Inference LoadGen summary",
    "llama-bench": "llama.cpp llama-bench",
}
# The kind of run each tool's output is; inference where not named.
FORMAT_KINDS = {"llama-bench": "generation"}
# What a run of the tool's output without a measured column is, for the import's note.
FORMAT_EMPTY_RUNS = {
    "llama-bench": "pp+tg tests: their rate, of prefill and decode together, is the extra tokens_per_s"
}


def _cell(value) -> str | None:
    if value is None:
        return None
    # 12 significant digits: more than any of these tools prints, and no binary noise from the
    # unit conversion (0.101519 s is 101.519 ms, not 101.51899999999999)
    return f"{value:.12g}" if isinstance(value, float) else str(value)


def read_native(con: duckdb.DuckDBPyConnection, path: Path, fmt: str) -> list[str]:
    """Parse `path` as `fmt` output into table `staged` (all text, `_row` from 1: one row, or one
    per run for a tool that reports several, like llama-bench), like read.read_as_text does for
    a CSV; returns its columns. Columns the file gives no value for are left out."""
    if fmt not in FORMATS:
        raise ImportFileError(
            f"--format {fmt!r}: use one of {', '.join(FORMATS)} (or no --format for CSV/TSV/Parquet)"
        )
    text = decode_utf8(
        read_bounded(path, MAX_OUTPUT_BYTES, ImportFileError, f"{fmt} output"),
        path,
        ImportFileError,
        "import the tool's output as it wrote it; nothing was imported",
        encoding="utf-8-sig",
    )
    parsed = FORMATS[fmt][0](text, path)
    rows = [
        {key: _cell(value) for key, value in row.items()}
        for row in (parsed if isinstance(parsed, list) else [parsed])
    ]
    columns = [
        c
        for c in dict.fromkeys(key for row in rows for key in row)
        if any(row.get(c) is not None for row in rows)
    ]
    definition = ", ".join(f"{quote_ident(c)} VARCHAR" for c in columns)
    con.execute(f"CREATE TEMP TABLE staged (_row BIGINT, {definition})")
    con.executemany(
        f"INSERT INTO staged VALUES (?, {', '.join('?' for _ in columns)})",
        [[number, *(row.get(c) for c in columns)] for number, row in enumerate(rows, 1)],
    )
    return columns
