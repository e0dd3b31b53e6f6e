"""Analysis frames for the paper-table tests (tests/reports/test_tables_*.py): the summary's
metrics of four configurations and an answers result, with notes, methods and missing figures."""

from __future__ import annotations

import itertools

import polars as pl

from edgestats.analysis.core.result import AnalysisResult
from edgestats.reports.units import MIB

P99_NOTE = "too few latencies for p99: no interval"
NO_POWER = "no power source was recorded for this run"
METHODS = {
    "latency_median_ms": "run-level t on the log scale",
    "latency_p99_ms": "equal-weight mixture of the runs",
    "latency_mean_ms": "t on the log scale",
    "throughput_per_s": "batch_size / mean latency",
    "rss_peak_bytes": "t on the log scale",
    "energy_per_inference_j": "t on the log scale",
}


def metrics_frame() -> pl.DataFrame:
    """The summary's long metrics frame: 2 devices × 2 frameworks, one model, batch 1 everywhere."""
    rows = []
    for i, (device, framework) in enumerate(itertools.product(["pi_5", "vm"], ["onnxruntime", "tflite"])):
        base = 1.0 + i
        figures = {
            "latency_median_ms": (base, base * 0.9, base * 1.1, None),
            "latency_p99_ms": (base * 2, None, None, P99_NOTE),
            "latency_mean_ms": (base * 1.05, base, base * 1.1, None),
            "throughput_per_s": (1000 / base, 900 / base, 1100 / base, None),
            "rss_peak_bytes": (100 * MIB * (i + 1), 90 * MIB * (i + 1), 110 * MIB * (i + 1), None),
            "energy_per_inference_j": (None, None, None, NO_POWER),
        }
        for metric, (estimate, low, high, note) in figures.items():
            rows.append(
                {
                    "device": device,
                    "framework": framework,
                    "model": "cnn9",
                    "batch_size": 1,
                    "metric": metric,
                    "n_runs": 3,
                    "estimate": estimate,
                    "ci_low": low,
                    "ci_high": high,
                    "level": 0.95,
                    "n": 3,
                    "n_unit": "runs",
                    "method": METHODS[metric],
                    "note": note,
                }
            )
    return pl.DataFrame(rows)


def answers_result() -> AnalysisResult:
    rows = [
        ("pi5", "cnn9", "onnxruntime", True, 1.0, None, None, "fastest", "fastest"),
        ("pi5", "cnn9", "tflite", False, 1.8, 1.5, 2.1, "slower", "1.80× slower [1.50, 2.10]"),
        ("pi5", "cnn9", "pytorch", False, 1.02, 0.9, 1.2, "inconclusive", "inconclusive: 7 more runs"),
    ]
    frame = pl.DataFrame(
        [
            {
                "device": d,
                "model": m,
                "batch_size": 1,
                "framework": c,
                "candidate": c,
                "group": f"{d} / {m}",
                "fastest": fastest,
                "metric": "latency_median_ms",
                "estimate": 0.27 * ratio,
                "ci_low": 0.25 * ratio,
                "ci_high": 0.29 * ratio,
                "note": None,
                "ratio": ratio,
                "ratio_ci_low": 1.0 if fastest else low,
                "ratio_ci_high": 1.0 if fastest else high,
                "p_holm": None if fastest else 0.003,
                "verdict": verdict,
                "verdict_text": text,
                "n_runs": 3,
                "level": 0.95,
            }
            for d, m, c, fastest, ratio, low, high, verdict, text in rows
        ]
    )
    entry = {"group": {"device": "pi5", "model": "cnn9", "batch_size": 1}, "candidate_keys": ["framework"]}
    return AnalysisResult("answers", 0.95, [entry], {"answers": frame})
