"""Intervals that stay in the possible range of their quantity: a property test over every
analysis of the registry on random small DBs. The bounded intervals themselves (Wilson, the log-
and logit-scale intervals) are checked one by one in test_bounded.py."""

from __future__ import annotations

import shutil
import tempfile
import uuid
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from builders import write_inference_run, write_training_run
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from edgestats.analysis import AnalysisOptions, results_json, run_analyses
from edgestats.analysis.estimators.bounded import NEGATIVE_NOTE, quantity_kind
from edgestats.registry.analyses import ANALYSES
from edgestats.store.results import Store

# -- every analysis, random small DBs: no interval leaves its quantity's range -------------------

# Names of quantities that are > 0 whenever measured (a latency, a run's memory, a total time):
# their intervals must stay strictly above 0. Others of the positive kind may be 0 (a stall).
STRICTLY_POSITIVE = ("latency", "rss", "throughput", "total_s", "load_over")
RATIOS = ("load_over_steady", "load_over_one_inference", "reduction_factor", "runner_up_over_best", "ratio")
values_ms = st.floats(min_value=0.05, max_value=5_000, allow_nan=False)


@st.composite
def inference_runs(draw) -> list[dict]:
    """Collected runs (1-3 per configuration, latencies random or all equal) and imported rows."""
    runs = []
    for config in range(draw(st.integers(1, 3))):
        framework, model = draw(st.sampled_from(["pytorch", "onnxruntime", "tflite"])), f"m{config % 2}"
        constant = draw(st.booleans())
        for _ in range(draw(st.integers(1, 3))):
            n = draw(st.integers(3, 25))
            latencies = (
                [draw(values_ms)] * n if constant else draw(st.lists(values_ms, min_size=n, max_size=n))
            )
            runs.append(
                {
                    "framework": framework,
                    "model": model,
                    "latencies_ms": latencies,
                    "phases_s": draw(st.lists(st.floats(0.001, 20), min_size=4, max_size=4)),
                }
            )
    for _ in range(draw(st.integers(0, 3))):
        runs.append(
            {
                "framework": "mxnet",
                "model": "m0",
                "imported": {
                    "latency_ms": draw(values_ms),
                    "load_time_s": draw(st.floats(0.01, 50)),
                    "total_time_s": draw(st.floats(60, 100)),
                    "mem_max_mb": draw(st.floats(1, 4000)),
                    "energy_j": draw(st.floats(0.01, 500)),
                },
            }
        )
    return runs


@st.composite
def training_runs(draw) -> list[dict]:
    """Imported training rows: accuracy in [0, 100] (some at the bounds), times, workers."""
    constant = draw(st.booleans())
    accuracy = st.one_of(st.sampled_from([0.0, 100.0, 99.9]), st.floats(0, 100))
    rows = []
    for _ in range(draw(st.integers(0, 6))):
        rows.append(
            {
                "batch_size": draw(st.sampled_from([32, 5000])),
                "iterations": draw(st.sampled_from([100, 1000, 5000])),
                "learning_rate": draw(st.sampled_from([1e-4, 1e-2])),
                "num_workers": draw(st.sampled_from([0, 1, 2])),
                "results": {
                    "training_time_s": 100.0 if constant else draw(st.floats(0.5, 1e5)),
                    "testing_time_s": draw(st.floats(0.01, 10)),
                    "accuracy_pct": 97.0 if constant else draw(accuracy),
                    "fetch_stall_s": draw(st.floats(0, 100)),
                    "e2e_s": draw(st.floats(1, 1000)),
                    "cpu_total_pct": draw(st.floats(0, 100)),
                    "mem_max_mb": draw(st.floats(1, 4000)),
                },
            }
        )
    return rows


def write_collected(store: Store, device: uuid.UUID, run: dict) -> None:
    latencies = run["latencies_ms"]
    ends = np.cumsum([int(s * 1e9) for s in run["phases_s"]])
    starts = np.concatenate([[0], ends[:-1]])
    store.write_run(
        {
            "device_id": device,
            "kind": "inference",
            "status": "ok",
            "framework": run["framework"],
            "model": run["model"],
            "batch_size": 1,
            "threads": 2,
            "iterations": len(latencies),
        },
        phases=pa.table(
            {
                "seq": pa.array(range(5), pa.int32()),
                "phase": ["import", "load_model", "first_inference", "steady", "total"],
                "start_ns": [*starts.tolist(), 0],
                "end_ns": [*ends.tolist(), int(ends[-1])],
            }
        ),
        latencies=pa.table(
            {
                "iteration": pa.array(range(len(latencies)), pa.int32()),
                "warmup": [False] * len(latencies),
                "start_ns": [i * 10_000_000 for i in range(len(latencies))],
                "latency_ns": [max(1, int(round(v * 1e6))) for v in latencies],
            }
        ),
    )


def build_db(template: Path, folder: Path, inference: list[dict], training: list[dict], seed: int) -> Path:
    db = folder / "r.duckdb"
    shutil.copyfile(template, db)
    with Store.open(db) as store:
        device = store.register_device({"name": "pi", "hostname": "pi", "arch": "aarch64", "cores": 4})
        write_inference_run(
            store, device, seed=seed, framework="onnxruntime", model="m1"
        )  # the builders' own
        write_training_run(store, device, seed=seed)
        for run in inference:
            if "imported" in run:
                store.write_run(
                    {
                        "device_id": device,
                        "kind": "inference",
                        "status": "ok",
                        "framework": run["framework"],
                        "model": run["model"],
                        "batch_size": 1,
                        "iterations": 100,
                        "source": "import:x.csv",
                    },
                    results=run["imported"],
                )
            else:
                write_collected(store, device, run)
        for row in training:
            store.write_run(
                {
                    "device_id": device,
                    "kind": "training",
                    "status": "ok",
                    "framework": "caffe",
                    "model": "lenet",
                    "dataset": "MNIST",
                    "storage": "SD",
                    "source": "import:t.csv",
                    **{k: v for k, v in row.items() if k != "results"},
                },
                results=row["results"],
            )
    return db


# What the intervals of a figure frame (or a JSON list under that key) are intervals of.
FRAME_QUANTITIES = {
    "ratios": "load_over_steady",
    "reductions": "reduction_factor",
    "phases": "phase_s",
    "terms": "coefficient",
    "fit": "coefficient",
    "proportionality": "coefficient slope",
}


def quantity_of(node: dict, key: str | None, context: dict) -> str:
    """The name of the quantity an interval belongs to: a coefficient, a correlation, its metric
    or phase quantity, the frame or key it sits under, or the analysis entry's response."""
    if "term" in node or key in ("terms", "fit", "proportionality", "slope", "intercept"):
        return "coefficient"
    if node.get("method") in ("pearson", "spearman") or str(node.get("method", "")).startswith("fisher-z"):
        return "correlation"
    for field in ("metric", "quantity"):
        if isinstance(node.get(field), str):
            return node[field]
    if key in ("best", "runner_up", "main_effects", "vs_iterations", None):
        return str(context.get("metric") or context.get("response"))
    return FRAME_QUANTITIES.get(key, key)


def check_interval(
    name: str, estimate: float | None, low: float, high: float, where: str, note: str | None = None
) -> None:
    slack = 1e-9 * max(abs(low), abs(high), 1.0)
    assert low <= high + slack, f"{where}: {name} interval [{low}, {high}] is reversed"
    if estimate is not None:
        assert low - slack <= estimate <= high + slack, (
            f"{where}: {name} = {estimate} outside [{low}, {high}]"
        )
    if name.startswith("coefficient") or NEGATIVE_NOTE in (note or ""):
        return  # a coefficient, or a residual whose values are below 0 (the note says so): any sign
    if name == "correlation":
        assert -1 <= low and high <= 1, f"{where}: correlation [{low}, {high}]"
    elif "accuracy" in name:
        assert 0 <= low and high <= 100, f"{where}: {name} [{low}, {high}] leaves 0-100 %"
    elif quantity_kind(name) == "positive" or name in RATIOS:
        assert low >= 0, f"{where}: {name} interval [{low}, {high}] goes below 0"
        if any(p in name for p in STRICTLY_POSITIVE):
            assert low > 0, f"{where}: {name} interval [{low}, {high}] reaches 0"
    else:
        raise AssertionError(f"{where}: interval of {name!r}: no known range (classify it here)")


def check_tree(node, where: str, key: str | None = None, context: dict | None = None) -> int:
    """Walk a JSON document; check every interval (ci_low/ci_high, or X_ci_low/X_ci_high); count them."""
    context = dict(context or {})
    checked = 0
    if isinstance(node, list):
        return sum(check_tree(item, f"{where}[{i}]", key, context) for i, item in enumerate(node))
    if not isinstance(node, dict):
        return 0
    for inherited in ("response", "metric"):
        if isinstance(node.get(inherited), str):
            context[inherited] = node[inherited]
    if node.get("ci_low") is not None and node.get("ci_high") is not None:
        estimate = node.get("estimate", node.get("value"))
        name = quantity_of(node, key, context)
        check_interval(
            name,
            estimate if isinstance(estimate, (int, float)) else None,
            node["ci_low"],
            node["ci_high"],
            where,
            node.get("note"),
        )
        checked += 1
    for field, value in node.items():
        if field.endswith("_ci_low") and value is not None and node.get(field[:-7] + "_ci_high") is not None:
            base = field[:-7]
            check_interval(base, node.get(base), value, node[base + "_ci_high"], f"{where}.{base}")
            checked += 1
        checked += check_tree(value, f"{where}.{field}", field, context)
    return checked


@pytest.fixture(scope="module")
def empty_db(tmp_path_factory) -> Path:
    """An empty results DB made once (every migration run): each example starts from a copy."""
    path = tmp_path_factory.mktemp("bounded") / "empty.duckdb"
    with Store.open(path):
        pass
    return path


@settings(
    max_examples=8,
    deadline=None,
    phases=[Phase.explicit, Phase.reuse, Phase.generate],
    suppress_health_check=[HealthCheck.too_slow],
)
@pytest.mark.slow
@given(inference=inference_runs(), training=training_runs(), seed=st.integers(0, 50))
def test_no_analysis_gives_an_interval_outside_its_quantity_s_range(empty_db, inference, training, seed):
    with tempfile.TemporaryDirectory() as folder:
        db = build_db(empty_db, Path(folder), inference, training, seed)
        results = run_analyses(db, AnalysisOptions(n_resamples=200, seed=seed))
    assert set(results) == {entry.name for entry in ANALYSES}
    document = results_json(results)
    checked = check_tree(document, "analysis")
    assert checked > 0
    for name, result in results.items():  # the figure frames the report draws, too
        for frame_key, frame in result.frames.items():
            if frame is not None and {"ci_low", "ci_high"} <= set(frame.columns):
                check_tree(frame.to_dicts(), f"{name}.{frame_key}", frame_key)
