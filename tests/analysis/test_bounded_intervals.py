"""Intervals that stay in the possible range of their quantity: Wilson against statsmodels, the
log- and logit-scale intervals by hand and by simulation, and a property test over every
analysis of the registry on random small DBs."""

from __future__ import annotations

import math
import shutil
import tempfile
import uuid
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from analysis_builders import runs_frame
from builders import write_inference_run, write_training_run
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from scipy import stats
from scipy.special import expit, logit

from edgestats.analysis import AnalysisOptions, results_json, run_analyses
from edgestats.analysis.bounded import (
    NEGATIVE_NOTE,
    bounded_mean,
    clip_at_zero,
    geometric_mean_t,
    positive_mean,
    proportion_mean,
    quantity_kind,
    wilson_interval,
)
from edgestats.analysis.intervals import Estimate
from edgestats.analysis.summary import energy_estimate
from edgestats.registry.analyses import ANALYSES
from edgestats.store.results import Store


@pytest.mark.parametrize("level", [0.9, 0.95, 0.99])
@pytest.mark.parametrize("successes,n", [(0, 10), (1, 10), (7, 10), (10, 10), (488, 500), (9_760, 10_000)])
def test_wilson_matches_statsmodels(successes, n, level):
    from statsmodels.stats.proportion import proportion_confint

    expected = proportion_confint(successes, n, alpha=1 - level, method="wilson")
    assert wilson_interval(successes, n, level) == pytest.approx(expected, abs=1e-12)


def test_one_run_with_a_known_test_set_gets_wilson_and_says_what_it_covers():
    estimate = proportion_mean([97.6], n_test=500)
    low, high = wilson_interval(488, 500)
    assert (estimate.estimate, estimate.ci_low, estimate.ci_high) == pytest.approx(
        (97.6, 100 * low, 100 * high)
    )
    assert estimate.method == "wilson" and "500 samples" in estimate.note
    unknown = proportion_mean([97.6])
    assert unknown.ci_low is None and "Wilson" in unknown.note


def test_logit_interval_by_hand_and_the_issue_s_example_stays_in_range():
    values = np.array([95.2, 100.0])  # a plain t interval: 97.6 ± 12.7 × 2.4 = [67, 128] %
    estimate = proportion_mean(values)
    p, se = values.mean() / 100, stats.sem(values / 100)
    half = stats.t.ppf(0.975, 1) * se / (p * (1 - p))
    assert estimate.estimate == pytest.approx(97.6)
    assert (estimate.ci_low, estimate.ci_high) == pytest.approx(
        (100 * expit(logit(p) - half), 100 * expit(logit(p) + half))
    )
    assert 0 < estimate.ci_low < 97.6 < estimate.ci_high < 100


def test_log_interval_by_hand_and_training_times_stay_positive():
    times = np.array([10.0, 900.0, 120.0])
    estimate = positive_mean(times)
    half = stats.t.ppf(0.975, 2) * stats.sem(times) / times.mean()
    assert (estimate.ci_low, estimate.ci_high) == pytest.approx(
        (times.mean() * math.exp(-half), times.mean() * math.exp(half))
    )
    assert estimate.estimate == pytest.approx(times.mean())
    assert 0 < estimate.ci_low < estimate.estimate < estimate.ci_high  # a plain t: 343 ± 1,205 s, below 0
    geometric = geometric_mean_t(times)
    low, high = stats.t.interval(0.95, 2, loc=np.log(times).mean(), scale=stats.sem(np.log(times)))
    assert (geometric.estimate, geometric.ci_low, geometric.ci_high) == pytest.approx(
        (math.exp(np.log(times).mean()), math.exp(low), math.exp(high))
    )


def test_a_difference_below_zero_keeps_the_plain_t_and_says_why():
    estimate = positive_mean([-0.2, 0.5, 0.9])
    low, high = stats.t.interval(0.95, 2, loc=0.4, scale=stats.sem([-0.2, 0.5, 0.9]))
    assert (estimate.ci_low, estimate.ci_high) == pytest.approx((low, high)) and "below 0" in estimate.note


def test_positive_mean_covers_the_log_normal_mean():
    rng = np.random.default_rng(21)
    sigma = 0.3
    samples = rng.lognormal(0.0, sigma, (2000, 5))
    truth = math.exp(sigma**2 / 2)
    cover = np.mean([(e := positive_mean(x)).ci_low <= truth <= e.ci_high for x in samples])
    assert 0.93 <= cover <= 0.97, cover


def test_logit_interval_covers_the_mean_accuracy_across_runs():
    """Runs' accuracies vary on the logit scale (seed to seed); the truth is their mean."""
    rng = np.random.default_rng(22)
    centre, spread = logit(0.9), 0.3
    truth = 100 * float(expit(centre + rng.normal(0, spread, 1_000_000)).mean())
    samples = 100 * expit(centre + rng.normal(0, spread, (2000, 5)))
    cover = np.mean([(e := proportion_mean(x)).ci_low <= truth <= e.ci_high for x in samples])
    assert 0.93 <= cover <= 0.97, cover


def test_quantity_kinds_follow_the_names_units():
    assert [
        quantity_kind(n)
        for n in (
            "accuracy_pct",
            "training_time_s",
            "rss_peak_bytes",
            "throughput_per_s",
            "energy_j",
            "log10(batch_size)",
        )
    ] == ["proportion", "positive", "positive", "positive", "positive", "real"]
    assert bounded_mean([80.0, 100.0], "accuracy_pct").ci_high < 100
    assert bounded_mean([-1.0, 2.0, 4.0], "slope").method == "t"


def test_one_run_s_energy_interval_is_cut_at_zero_not_below():
    runs = runs_frame(
        [
            {
                "latency_median_ms": 5.0,
                "energy_per_inference_j": 0.002,
                "energy_per_inference_ci_low_j": -0.001,
                "energy_per_inference_ci_high_j": 0.005,
            }
        ]
    )
    estimate = energy_estimate(runs, 0.95)
    assert (estimate.estimate, estimate.ci_low, estimate.ci_high) == (0.002, 0.0, 0.005)
    assert "cut at 0" in estimate.note and "idle baseline" in estimate.note
    below = clip_at_zero(Estimate(-0.001, -0.004, 0.002, 0.95, 1, "runs", "idle-baseline interval"))
    assert below.ci_low == -0.004  # an estimate below 0 (below idle) is a difference: left as it is


# -- every analysis, random small DBs: no interval leaves its quantity's range -------------------

# Names of quantities that are > 0 whenever measured (a latency, a run's memory, a total time):
# their intervals must stay strictly above 0. Others of the positive kind may be 0 (a stall).
STRICTLY_POSITIVE = ("latency", "rss", "throughput", "total_s", "load_over")
RATIOS = ("load_over_steady", "load_over_one_inference", "reduction_factor", "ratio_of_medians")
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
