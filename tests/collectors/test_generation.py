"""`collect --kind generation` end to end (PyTorch eager, llama15m): every generated token's latency
and every phase stored; generation_summary's figures equal an independent computation from the
raw rows (latencies, phases, phase_energies, baselines); energy per token of the prefill and of
the decode from a meter's CSV log (the fake of tests/power_fakes.py's kind: a 2 W idle, 5 W busy
log) and an idle baseline; and the tokens the worker generated are the zoo reference's.

One collect for the module: 2 prompt lengths x 3 runs (fresh processes), 2 concurrent sequences,
3 tokens of context, 5 new tokens, 1 thread.
Cost: about 25 s of test time in make test's parallel lane (2 cores).
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from edgestats.cli import app
from edgestats.store.results import Store

pytestmark = [pytest.mark.frameworks, pytest.mark.xdist_group("generation")]
runner = CliRunner()
PROMPTS, NEW, DEPTH, BATCH, REPEAT = (4, 9), 5, 3, 2, 3


def write_meter_log(path: Path, start_s: float, end_s: float, idle_until_s: float) -> None:
    """A USB meter's CSV at 10 Hz: 2 W idle until `idle_until_s`, then 5 W, with a +-0.05 W ripple
    (as tests/collectors/test_energy_collect.py's)."""
    lines = ["timestamp,power_w,voltage_v"]
    for k in range(int((end_s - start_s) * 10) + 1):
        t = start_s + k / 10
        lines.append(f"{t:.3f},{(2.0 if t < idle_until_s else 5.0) + (0.05 if k % 2 else -0.05):.3f},5.1")
    path.write_text("\n".join(lines) + "\n")


@pytest.fixture(scope="module")
def db(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("generation")
    now = time.time()
    meter = folder / "meter.csv"
    write_meter_log(meter, now - 60, now + 600, idle_until_s=now - 20)
    path = folder / "g.duckdb"
    baseline = ["baseline", "--db", str(path), "--power", f"csv:{meter}", "--seconds", "30"]
    result = runner.invoke(app, [*baseline, "--start", f"{now - 55:.3f}"])
    assert result.exit_code == 0, result.output
    args = ["collect", "--db", str(path), "--kind", "generation", "-f", "pytorch", "--threads", "1"]
    args += [f"--prompt-tokens={n}" for n in PROMPTS]
    args += ["--new-tokens", str(NEW), "--context-depth", str(DEPTH), "--batch-size", str(BATCH)]
    args += ["--repeat", str(REPEAT)]
    result = runner.invoke(app, [*args, "--power", f"csv:{meter}"])
    assert result.exit_code == 0, result.output
    return path


def rows(db: Path, query: str) -> list[dict]:
    with Store.open(db, read_only=True) as store:
        return store.frame(query).to_dicts()


def test_every_token_and_every_phase_is_stored(db):
    runs = rows(db, "SELECT * FROM runs ORDER BY prompt_tokens, repeat_index")
    assert [(r["kind"], r["status"], r["model"], r["prompt_tokens"], r["repeat_index"]) for r in runs] == [
        ("generation", "ok", "llama15m", n, k) for n in PROMPTS for k in range(REPEAT)
    ]
    for run in runs:
        assert (run["new_tokens"], run["context_depth"], run["batch_size"], run["warmup"]) == (
            NEW,
            DEPTH,
            BATCH,
            1,
        )
        # K and V, 10 layers, 2 sequences, 3 + prompt + 5 positions, 2 kv heads x 64, fp32
        assert run["kv_cache_bytes"] == 2 * 10 * BATCH * (DEPTH + run["prompt_tokens"] + NEW) * 2 * 64 * 4
        run_id = run["run_id"]
        tokens = rows(db, f"SELECT * FROM latencies WHERE run_id = '{run_id}' ORDER BY iteration")
        assert [(t["iteration"], t["warmup"]) for t in tokens] == [(i, i == 0) for i in range(NEW)]
        assert all(t["latency_ns"] > 0 and t["energy_gross_j"] is not None for t in tokens)
        phases = {p["phase"]: p for p in rows(db, f"SELECT * FROM phases WHERE run_id = '{run_id}'")}
        assert list(phases) == [
            "process_start", "import", "load_model", "warmup", "kv_cache", "context",
            "prefill", "first_token", "decode", "total",
        ]  # fmt: skip
        prefill, first, decode = phases["prefill"], phases["first_token"], phases["decode"]
        assert (
            first["start_ns"]
            <= prefill["start_ns"]
            < prefill["end_ns"]
            <= first["end_ns"]
            <= decode["start_ns"]
        )
        assert tokens[0]["latency_ns"] <= first["end_ns"] - first["start_ns"]  # the TTFT is inside it
        decode_steps_ns = sum(t["latency_ns"] for t in tokens[1:])
        assert decode_steps_ns <= decode["end_ns"] - decode["start_ns"]


def test_generation_summary_equals_an_independent_computation_from_the_raw_rows(db):
    summaries = rows(db, "SELECT * FROM generation_summary ORDER BY prompt_tokens")
    baseline_w = rows(db, "SELECT mean_power_w FROM baselines")[0]["mean_power_w"]
    for s in summaries:
        run_id = s["run_id"]
        lat = [
            t["latency_ns"]
            for t in rows(db, f"SELECT * FROM latencies WHERE run_id = '{run_id}' ORDER BY iteration")
        ]
        phases = {p["phase"]: p for p in rows(db, f"SELECT * FROM phases WHERE run_id = '{run_id}'")}
        gross = {
            e["phase"]: e["energy_gross_j"]
            for e in rows(db, f"SELECT * FROM phase_energies WHERE run_id = '{run_id}'")
        }
        itl_ms = np.array(lat[1:]) / 1e6
        prefill_s = (phases["prefill"]["end_ns"] - phases["prefill"]["start_ns"]) / 1e9
        decode_window_s = (phases["decode"]["end_ns"] - phases["decode"]["start_ns"]) / 1e9
        prefill_j = gross["prefill"] - baseline_w * prefill_s
        decode_j = gross["decode"] - baseline_w * decode_window_s
        expected = {
            "n_tokens": NEW,
            "ttft_ms": lat[0] / 1e6,
            "prefill_s": prefill_s,
            "prefill_tokens_per_s": s["prompt_tokens"] * BATCH / prefill_s,
            "decode_s": sum(lat[1:]) / 1e9,
            "decode_tokens_per_s": (NEW - 1) * BATCH / (sum(lat[1:]) / 1e9),
            "itl_p50_ms": np.percentile(itl_ms, 50),
            "itl_p90_ms": np.percentile(itl_ms, 90),
            "itl_p99_ms": np.percentile(itl_ms, 99),
            "itl_mean_ms": itl_ms.mean(),
            "prefill_energy_j": prefill_j,
            "decode_energy_j": decode_j,
            "prefill_energy_per_token_j": prefill_j / (s["prompt_tokens"] * BATCH),
            "decode_energy_per_token_j": decode_j / ((NEW - 1) * BATCH),
        }
        for key, value in expected.items():
            assert s[key] == pytest.approx(value, rel=1e-9), key
        peak = rows(
            db, f"SELECT max(value) AS v FROM samples WHERE run_id = '{run_id}' AND metric = 'rss_bytes'"
        )
        assert s["rss_peak_bytes"] == peak[0]["v"] > 100e6  # torch and a 64 MB model at least
        assert s["energy_unavailable_reason"] is None
    # run_summary's latency columns of a generation run are its inter-token latencies
    for r in rows(db, "SELECT r.*, g.itl_p50_ms FROM run_summary r JOIN generation_summary g USING (run_id)"):
        assert (r["kind"], r["n_latencies"], r["latency_median_ms"]) == (
            "generation",
            NEW - 1,
            r["itl_p50_ms"],
        )


def test_energy_per_token_by_phase_is_the_busy_power_above_idle(db):
    """The meter reads 5 W while the runs work and the baseline 2 W idle: each phase's energy is
    3 W over its window, shared by its tokens (prompt tokens of both sequences for the prefill,
    the decode steps' tokens of both sequences for the decode)."""
    for s in rows(db, "SELECT * FROM generation_summary"):
        query = "SELECT (end_ns - start_ns) / 1e9 AS s FROM phases WHERE run_id = '{}' AND phase = 'decode'"
        window = rows(db, query.format(s["run_id"]))[0]["s"]
        assert s["prefill_energy_per_token_j"] == pytest.approx(
            3.0 * s["prefill_s"] / (s["prompt_tokens"] * BATCH), rel=0.1
        )
        assert s["decode_energy_per_token_j"] == pytest.approx(3.0 * window / ((NEW - 1) * BATCH), rel=0.1)
        assert s["power_source"].startswith("csv:")


def test_the_worker_generates_the_zoo_references_greedy_tokens(db):
    from edgestats.collectors.zoo.llama import build_llama, greedy_generate
    from edgestats.collectors.zoo.llama_arch import seeded_tokens

    model = build_llama("llama15m", seed=0)
    for run in rows(db, "SELECT prompt_tokens, environment FROM runs"):
        stored = json.loads(run["environment"])["generation"]
        prompt = seeded_tokens(0, BATCH, run["prompt_tokens"], "prompt")
        context = seeded_tokens(0, BATCH, DEPTH, "context")
        assert stored["prompt"] == prompt[0]
        assert stored["tokens"] == greedy_generate(model, prompt, NEW, context=context)[0]
