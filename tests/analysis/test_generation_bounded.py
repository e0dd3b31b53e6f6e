"""generation's intervals stay in their quantity's range on random generation DBs (the property
tests/analysis/test_bounded_intervals.py checks for every analysis on inference and training DBs,
which hold no generation run): 1-3 configurations at 1-2 depths, 1-3 runs each, spreads from none
(every run alike) to wide, energy above idle that may come out below 0. Every estimate lies in its
interval; a time, rate, size or energy per token (the unit suffix says which) has an interval
above 0 unless its note says the values are a difference; the depth fit's terms may have any sign.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from generation_builders import GenConfig, make_generation_db
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from edgestats.analysis import AnalysisOptions, results_json, run_analyses
from edgestats.analysis.estimators.bounded import NEGATIVE_NOTE, quantity_kind


@st.composite
def sweeps(draw) -> tuple[list[GenConfig], int, float, float]:
    configs = []
    depths = draw(st.sampled_from([(0,), (0, 64)]))
    for i in range(draw(st.integers(1, 3))):
        for depth in depths:
            configs.append(
                GenConfig(
                    framework=("pytorch", "llamacpp", "onnxruntime")[i],
                    prompt_tokens=draw(st.sampled_from([4, 16])),
                    new_tokens=draw(st.integers(3, 25)),
                    context_depth=depth,
                    a_ms=draw(st.floats(0.5, 200)),
                    b_ms_per_token=draw(st.floats(0, 0.05)),
                    power_w=draw(st.floats(1.0, 8.0)),  # below the 2 W idle: energy above idle < 0
                )
            )
    run_sd = draw(st.sampled_from([0.0, 0.05, 0.6]))
    token_sd = draw(st.sampled_from([0.0, 0.1, 1.0]))
    return configs, draw(st.integers(1, 3)), run_sd, token_sd


def check(node: dict, where: str) -> int:
    low, high, estimate = node.get("ci_low"), node.get("ci_high"), node.get("estimate")
    if low is None or high is None:
        return 0
    slack = 1e-9 * max(abs(low), abs(high), 1.0)
    assert low <= high + slack, f"{where}: [{low}, {high}] reversed"
    if estimate is not None:
        assert low - slack <= estimate <= high + slack, f"{where}: {estimate} outside [{low}, {high}]"
    name = node.get("metric") or node.get("term")
    if "term" in node:
        return 1  # a coefficient: any sign
    assert quantity_kind(name) == "positive", f"{where}: {name} has no known range"
    if NEGATIVE_NOTE not in (node.get("note") or ""):
        assert low > 0 if not name.endswith("_j") else low >= 0, f"{where}: {name} [{low}, {high}]"
    return 1


@settings(
    max_examples=10,
    deadline=None,
    phases=[Phase.explicit, Phase.reuse, Phase.generate],
    suppress_health_check=[HealthCheck.too_slow],
)
@pytest.mark.slow
@given(sweep=sweeps(), seed=st.integers(0, 50))
def test_no_generation_interval_leaves_its_quantity_s_range(sweep, seed):
    configs, runs_per_config, run_sd, token_sd = sweep
    with tempfile.TemporaryDirectory() as folder:
        db = Path(folder) / "g.duckdb"
        make_generation_db(
            db, configs, runs_per_config=runs_per_config, seed=seed, run_sd=run_sd, token_sd=token_sd
        )
        result = run_analyses(db, AnalysisOptions(only="generation", n_resamples=200, seed=seed))[
            "generation"
        ]
    document = results_json({"generation": result})["generation"]
    nodes = [(m, f"metrics[{i}]") for i, e in enumerate(document) for m in e.get("metrics", [])]
    nodes += [
        (e[k], f"fit[{i}].{k}") for i, e in enumerate(document) for k in ("intercept", "slope") if k in e
    ]
    for key, frame in result.frames.items():
        if {"ci_low", "ci_high"} <= set(frame.columns):
            nodes += [(row, f"{key}[{i}]") for i, row in enumerate(frame.to_dicts())]
    checked = sum(check(node, where) for node, where in nodes)
    assert checked > 0 or runs_per_config == 1 or (run_sd == 0 and token_sd == 0)
