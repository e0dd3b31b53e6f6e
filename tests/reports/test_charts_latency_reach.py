"""The latency chart draws a median's interval at most REACH times beyond the configuration's own
pooled p5-p95: a wider one (three noisy runs give [0.001, 20,000] ms) stops at an arrowhead instead of
setting the axis of every panel, and its data row keeps the whole interval for the tooltip."""

from __future__ import annotations

import polars as pl

from edgestats.reports import charts_latency


def frames() -> tuple[pl.DataFrame, pl.DataFrame]:
    configs = ["narrow", "wide"]
    rows = []
    for config, (low, high) in zip(configs, [(0.9, 1.1), (0.001, 20_000.0)]):
        for metric, value in [("latency_median_ms", 1.0), ("latency_p90_ms", 1.2), ("latency_p99_ms", 1.5)]:
            bounds = (low, high) if metric == "latency_median_ms" else (None, None)
            rows.append(
                {"framework": config, "metric": metric, "estimate": value, "ci_low": bounds[0],
                 "ci_high": bounds[1], "level": 0.95, "n": 3, "n_unit": "runs", "n_runs": 3, "note": None}
            )  # fmt: skip
    quantiles = {"min_ms": 0.5, "q01_ms": 0.6, "q05_ms": 0.7, "q25_ms": 0.9, "median_ms": 1.0}
    quantiles |= {"q75_ms": 1.1, "q95_ms": 1.3, "q99_ms": 1.6, "max_ms": 2.0}
    distribution = pl.DataFrame(
        [
            {"framework": c, "n_runs": 3, "n": 90, "n_unit": "latencies", "note": None, **quantiles}
            for c in configs
        ]
    )
    return pl.DataFrame(rows), distribution


def test_a_wide_interval_stops_at_arrowheads_and_keeps_its_bounds():
    metrics, distribution = frames()
    spec = charts_latency.latency_distribution_chart(metrics, distribution).to_dict()
    [rows] = spec["datasets"].values()
    by = {r["config"]: r for r in rows}
    wide, narrow = by["wide"], by["narrow"]
    assert wide["cut_low"] and wide["cut_high"] and not (narrow["cut_low"] or narrow["cut_high"])
    assert (
        wide["drawn_low"] == 0.7 / charts_latency.REACH and wide["drawn_high"] == 1.3 * charts_latency.REACH
    )
    assert (wide["latency_median_ms_ci_low"], wide["latency_median_ms_ci_high"]) == (0.001, 20_000.0)
    assert (narrow["drawn_low"], narrow["drawn_high"]) == (0.9, 1.1)
    layers = spec["layer"] if "layer" in spec else spec["spec"]["layer"]
    arrows = [layer for layer in layers if layer["mark"].get("shape", "").startswith("triangle")]
    assert [a["encoding"]["x"]["field"] for a in arrows] == ["drawn_low", "drawn_high"]
    assert [a["encoding"]["size"]["condition"]["test"] for a in arrows] == ["datum.cut_low", "datum.cut_high"]
