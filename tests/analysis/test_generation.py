"""generation: every figure against an independent computation on a DB of known generation runs
(tests/generation_builders.py, written through the real Store): time to first token, prefill and
energy figures by hand from what each run holds; inter-token quantiles and decode tokens/s equal
summary's for the same runs (one estimate per quantity); imported runs' reported rates; and the
analysis' answer when no run is a generation run."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from generation_builders import IDLE_W, GenConfig, make_generation_db
from scipy import stats

from edgestats.analysis import AnalysisOptions, run_analyses
from edgestats.store.results import Store

LEVEL = 0.95


def log_t(values, level=LEVEL) -> tuple[float, float, float]:
    """The mean with its log-scale delta-method t interval, by hand: m·exp(±t·s/(√n·m))."""
    x = np.asarray(values, float)
    m, n = x.mean(), len(x)
    half = stats.t.ppf(0.5 + level / 2, n - 1) * x.std(ddof=1) / (math.sqrt(n) * m)
    return m, m * math.exp(-half), m * math.exp(half)


def metric(entry: dict, name: str) -> dict:
    return next(m for m in entry["metrics"] if m["metric"] == name)


@pytest.fixture(scope="module")
def generation(tmp_path_factory):
    db = tmp_path_factory.mktemp("gen") / "gen.duckdb"
    configs = [
        GenConfig(prompt_tokens=32),
        GenConfig(framework="llamacpp", runtime="cpu", prompt_tokens=64, a_ms=6),
    ]
    runs = make_generation_db(db, configs, runs_per_config=5, seed=3)
    results = {
        name: run_analyses(db, AnalysisOptions(only=name, n_resamples=500))[name]
        for name in ("generation", "summary")
    }
    return db, runs, results


def entry_of(result, framework: str) -> dict:
    return next(e for e in result.entries if e["group"].get("framework") == framework and "metrics" in e)


def test_ttft_prefill_energy_memory_by_hand(generation):
    _, runs, results = generation
    for framework in ("pytorch", "llamacpp"):
        mine = [r for r in runs if r.config.framework == framework]
        entry = entry_of(results["generation"], framework)
        assert entry["group"]["prompt_tokens"] == mine[0].config.prompt_tokens and entry["n"] == len(mine)
        expected = {
            "ttft_ms": log_t([r.ttft_ms for r in mine]),
            "rss_peak_bytes": log_t([r.rss_bytes for r in mine]),
            "prefill_energy_per_token_j": log_t(
                [(r.prefill_gross_j - IDLE_W * r.prefill_s) / r.config.prompt_tokens for r in mine]
            ),
            "decode_energy_per_token_j": log_t(
                [(r.decode_gross_j - IDLE_W * r.itl_ms.sum() / 1000) / len(r.itl_ms) for r in mine]
            ),
        }
        for name, (m, low, high) in expected.items():
            got = metric(entry, name)
            assert (got["estimate"], got["ci_low"], got["ci_high"]) == pytest.approx(
                (m, low, high), rel=1e-6
            ), name
        # prefill: prompt tokens / the mean prefill time, the mean's interval mapped through
        tokens = mine[0].config.prompt_tokens
        m, low, high = log_t([r.prefill_s for r in mine])
        got = metric(entry, "prefill_tokens_per_s")
        assert (got["estimate"], got["ci_low"], got["ci_high"]) == pytest.approx(
            (tokens / m, tokens / high, tokens / low)
        )
        kv = metric(entry, "kv_cache_bytes")
        assert (
            kv["estimate"] == mine[0].kv_cache_bytes
            and kv["ci_low"] is None
            and "same in every run" in kv["note"]
        )


def test_inter_token_quantiles_and_decode_rate_are_summary_s(generation):
    """One estimate per quantity: p50/p90/p99 are summary's latency_median/p90/p99 of the same runs
    (the inter-token latencies), decode tokens/s its throughput, to the last digit."""
    _, runs, results = generation
    pairs = {
        "itl_p50_ms": "latency_median_ms",
        "itl_p90_ms": "latency_p90_ms",
        "itl_p99_ms": "latency_p99_ms",
        "decode_tokens_per_s": "throughput_per_s",
    }
    for framework in ("pytorch", "llamacpp"):
        entry = entry_of(results["generation"], framework)
        summary = next(e for e in results["summary"].entries if e["group"] == entry["group"])
        for mine, theirs in pairs.items():
            a, b = metric(entry, mine), metric(summary, theirs)
            assert (a["estimate"], a["ci_low"], a["ci_high"]) == (b["estimate"], b["ci_low"], b["ci_high"]), (
                mine
            )
    # and the median by hand: the geometric mean of the runs' median inter-token latencies, log-t
    mine = [r for r in runs if r.config.framework == "pytorch"]
    logs = np.log([np.median(r.itl_ms) for r in mine])
    low, high = stats.t.interval(LEVEL, len(logs) - 1, logs.mean(), stats.sem(logs))
    p50 = metric(entry_of(results["generation"], "pytorch"), "itl_p50_ms")
    assert (p50["estimate"], p50["ci_low"], p50["ci_high"]) == pytest.approx(
        (math.exp(logs.mean()), math.exp(low), math.exp(high))
    )
    decode = metric(entry_of(results["generation"], "pytorch"), "decode_tokens_per_s")
    mean_itl = np.mean([r.itl_ms.mean() for r in mine])
    assert decode["estimate"] == pytest.approx(1000 / mean_itl)
    assert decode["n"] == 5 and decode["n_unit"] == "runs"


def test_the_metrics_frame_has_every_figure_with_its_unit_suffix(generation):
    _, _, results = generation
    frame = results["generation"].frames["metrics"]
    assert set(frame["metric"]) == {
        "ttft_ms",
        "prefill_tokens_per_s",
        "decode_tokens_per_s",
        "itl_p50_ms",
        "itl_p90_ms",
        "itl_p99_ms",
        "prefill_energy_per_token_j",
        "decode_energy_per_token_j",
        "rss_peak_bytes",
        "kv_cache_bytes",
    }
    assert frame.height == 2 * 10
    # one prompt length per configuration, one depth: no depth fit, and the note says why
    assert "depth_fit" not in results["generation"].frames


def test_imported_runs_use_their_reported_rates(tmp_path):
    db = tmp_path / "imported.duckdb"
    rates = [(120.0, 30.0, 15.0), (150.0, 33.0, 14.0), (90.0, 27.0, 19.0)]
    with Store.open(db) as store:
        device = store.register_device({"name": "pi5", "hostname": "pi5", "arch": "aarch64", "cores": 4})
        for pp, tg, ttft in rates:
            store.write_run(
                {
                    "device_id": device,
                    "kind": "generation",
                    "status": "ok",
                    "framework": "llamacpp",
                    "model": "llama15m",
                    "batch_size": 1,
                    "prompt_tokens": 512,
                    "new_tokens": 128,
                    "context_depth": 0,
                    "source": "import:llama-bench.jsonl",
                },
                results={"prefill_tokens_per_s": pp, "decode_tokens_per_s": tg, "ttft_ms": ttft},
            )
    (entry,) = run_analyses(db, AnalysisOptions(only="generation"))["generation"].entries
    for name, column in (("prefill_tokens_per_s", 0), ("decode_tokens_per_s", 1), ("ttft_ms", 2)):
        got = metric(entry, name)
        expected = log_t([r[column] for r in rates])
        assert (got["estimate"], got["ci_low"], got["ci_high"]) == pytest.approx(expected), name
    assert metric(entry, "itl_p50_ms")["estimate"] is None
    assert "per-token" in metric(entry, "itl_p50_ms")["note"]


def test_no_generation_run_says_what_to_collect(tmp_path: Path):
    from builders import make_results_db

    db = make_results_db(tmp_path / "inference.duckdb", n_runs=2)
    result = run_analyses(db, AnalysisOptions(only="generation"))["generation"]
    assert not result.available
    assert "collect --kind generation" in result.entries[0]["reason"]


def test_answers_compare_runtimes_at_the_same_prompt_and_depth(tmp_path):
    """answers on generation runs: runtimes are the candidates, the token counts stay in the group
    (a prompt of 64 is not a candidate against one of 16), and the fastest decodes fastest: the
    lowest median inter-token latency, the very itl_p50_ms generation gives it."""
    from generation_builders import depth_sweep

    db = tmp_path / "answers.duckdb"
    make_generation_db(db, depth_sweep(depths=(0, 512)), runs_per_config=3, seed=4)
    answers = run_analyses(db, AnalysisOptions(only="answers"))["answers"]
    generation = run_analyses(db, AnalysisOptions(only="generation"))["generation"]
    within = [e for e in answers.entries if "fastest" in e]
    assert sorted(e["group"]["context_depth"] for e in within) == [0, 512]
    for entry in within:
        assert {"prompt_tokens", "new_tokens"} <= set(entry["group"])
        assert entry["candidate_keys"] == ["framework", "runtime", "threads"]
        assert entry["fastest"] == "llamacpp / cpu"  # depth_sweep: llama.cpp's steps are shorter
        fastest = entry["candidates"][0]
        mine = next(
            e
            for e in generation.entries
            if e["group"].get("framework") == "llamacpp"
            and e["group"]["context_depth"] == entry["group"]["context_depth"]
        )
        p50 = metric(mine, "itl_p50_ms")
        assert (fastest["estimate"], fastest["ci_low"], fastest["ci_high"]) == (
            p50["estimate"],
            p50["ci_low"],
            p50["ci_high"],
        )


def test_energy_without_an_idle_baseline_says_to_measure_one(tmp_path):
    db = tmp_path / "nobaseline.duckdb"
    make_generation_db(db, [GenConfig()], runs_per_config=2, baseline=False)
    (entry,) = run_analyses(db, AnalysisOptions(only="generation"))["generation"].entries
    for name in ("prefill_energy_per_token_j", "decode_energy_per_token_j"):
        figure = metric(entry, name)
        assert figure["estimate"] is None and "edgestats baseline" in figure["note"], figure
