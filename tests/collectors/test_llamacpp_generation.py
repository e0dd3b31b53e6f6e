"""llama.cpp generation (collectors/generation/llamacpp_engine.py, framework "llamacpp"): through the
engine API, llama.cpp's first 16 greedy tokens from the fp32 GGUF equal PyTorch's on the same
weights, with its own counters counting the work; `collect --kind generation -f llamacpp` stores
every token's latency, the phases and llama.cpp's counters for 2 prompt lengths x 3 runs; a Q8_0
GGUF (--precision int8, llama.cpp's quantiser) collects too; inference with llamacpp is refused.

llama15m, 1 thread, 4 new tokens per collected run.
Cost: about 15 s (14 s measured: the fp32 GGUF exported twice and a Q8_0 once, about 2 s each,
16 tokens in both runtimes, 7 collected runs).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from edgestats.cli import app
from edgestats.collectors.core.runconfig import RunConfig
from edgestats.collectors.zoo.llama_arch import llama_config, seeded_tokens
from edgestats.store.results import Store

pytestmark = [pytest.mark.frameworks, pytest.mark.xdist_group("generation")]
MODEL, TOKENS = "llama15m", 16
PHASES = [
    "process_start",
    "import",
    "load_model",
    "warmup",
    "kv_cache",
    "prefill",
    "first_token",
    "decode",
    "total",
]


@pytest.fixture(scope="module")
def cache(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("llamacpp_generation")


def engine(cache: Path, precision: str = "fp32", threads: int | None = 1):
    from edgestats.collectors.generation.engines import engine_class

    config = RunConfig(
        kind="generation", framework="llamacpp", model=MODEL, threads=threads, precision=precision
    )
    cls = engine_class("llamacpp")
    built = cls(config, cls.prepare(config, cache))
    built.import_framework()
    built.load_model()
    return built


def reference_tokens(prompt_tokens: int, new_tokens: int) -> list[int]:
    from edgestats.collectors.zoo.llama import build_llama, greedy_generate

    prompt = seeded_tokens(0, 1, prompt_tokens, "prompt")
    return greedy_generate(build_llama(MODEL, seed=0), prompt, new_tokens)[0]


def test_llama_cpp_generates_pytorchs_greedy_tokens_and_counts_its_work(cache):
    """The fp32 GGUF: the 16 tokens of the zoo reference on the same prompt; llama.cpp's counters
    saw one prompt evaluation of 16 tokens and 15 single-token decode steps."""
    llama = engine(cache)
    prompt = seeded_tokens(0, 1, 16, "prompt")
    llama.start(1, 16 + TOKENS)
    ids, generated = llama.pick(llama.forward(prompt)), []
    for _ in range(TOKENS):
        generated.append(ids[0])
        if len(generated) < TOKENS:
            ids = llama.pick(llama.forward([[t] for t in ids]))
    reference = reference_tokens(16, TOKENS)
    assert len(set(reference)) > 1  # not one token repeated: a real comparison
    assert generated == reference
    perf = llama.perf()
    assert (perf["n_p_eval"], perf["n_eval"]) == (16, TOKENS - 1)
    assert perf["t_eval_ms"] > 0 and perf["t_p_eval_ms"] > 0
    # K and V of 10 layers, 256 positions (32 rounded up by llama.cpp), 2 kv heads of 64, F16
    assert llama.kv_cache_bytes() == 2 * 10 * 256 * 2 * 64 * 2
    with pytest.raises(ValueError, match="holds 32 positions; 33 were asked for"):
        llama.forward([[1, 2]])


def test_a_fresh_start_forgets_the_cache_and_threads_are_llama_cpps(cache):
    llama = engine(cache, threads=1)
    prompt = seeded_tokens(0, 2, 6, "prompt")
    outputs = []
    for _ in range(2):  # two generations of two sequences: the second starts from an empty cache
        llama.start(2, 10)
        ids = llama.pick(llama.forward(prompt))
        outputs.append([ids, llama.pick(llama.forward([[t] for t in ids]))])
    assert outputs[0] == outputs[1]
    assert outputs[0][0][0] == reference_tokens(6, 1)[0]
    environment = llama.environment()
    assert (environment["n_threads"], environment["n_threads_batch"]) == (1, 1)
    assert environment["n_ctx"] == 2 * 256 and environment["gguf_type"] == "fp32"
    json.dumps(environment)  # goes into the spool as JSON


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        ({"precision": "int3"}, "valid here: fp32, fp16, int8, q8_0, q4_0"),
        ({"accelerator": "cuda"}, "llamacpp cannot run on cuda"),
        ({"runtime": "torch-eager"}, "no generation runtime 'torch-eager'"),
        ({"precision": "int8"}, None),
        ({"precision": "q4_0"}, None),
    ],
)
def test_configurations_the_engine_cannot_run_say_why(change, expected):
    from edgestats.collectors.generation.engines import engine_class

    config = RunConfig(kind="generation", framework="llamacpp", model=MODEL, **change)
    reason = engine_class("llamacpp").check_config(config)
    assert reason is None if expected is None else expected in reason


def test_inference_with_llamacpp_is_refused_in_one_line():
    from edgestats.registry.runtimes import runtime

    reason = runtime("llamacpp").adapter_class().check_config(RunConfig(framework="llamacpp", model="cnn9"))
    assert "--kind generation" in reason and "\n" not in reason


def collect(db: Path, cache: Path, *args: str):
    command = ["collect", "--kind", "generation", "-f", "llamacpp", "-m", MODEL, "--threads", "1"]
    command += ["--new-tokens", "4", "--sample-hz", "0", "--power", "none", "--db", str(db)]
    result = CliRunner().invoke(app, [*command, "--cache-dir", str(cache), *args])
    assert result.exit_code == 0, result.output
    with Store.open(db, read_only=True) as store:
        runs = store.frame("SELECT * FROM runs ORDER BY prompt_tokens, repeat_index").to_dicts()
        latencies = store.frame("SELECT * FROM latencies ORDER BY run_id, iteration").to_dicts()
        phases = store.frame("SELECT run_id, phase FROM phases ORDER BY run_id, seq").to_dicts()
        summary = store.frame("SELECT * FROM generation_summary").to_dicts()
    return runs, latencies, phases, summary


def test_collect_stores_every_token_the_phases_and_llama_cpps_counters(tmp_path, cache):
    runs, latencies, phases, summary = collect(
        tmp_path / "g.duckdb", cache, "--prompt-tokens", "4", "--prompt-tokens", "8", "--repeat", "3"
    )
    assert [(r["status"], r["prompt_tokens"], r["repeat_index"]) for r in runs] == [
        ("ok", n, k) for n in (4, 8) for k in range(3)
    ]
    for run in runs:
        mine = [t for t in latencies if t["run_id"] == run["run_id"]]
        assert [(t["iteration"], t["warmup"]) for t in mine] == [(i, i == 0) for i in range(4)]
        assert all(t["latency_ns"] > 0 for t in mine)
        assert [p["phase"] for p in phases if p["run_id"] == run["run_id"]] == PHASES
        environment = json.loads(run["environment"])
        assert environment["generation"]["tokens"] == reference_tokens(run["prompt_tokens"], 4)
        perf = environment["runtime_detail"]["llamacpp_perf"]
        assert (perf["n_p_eval"], perf["n_eval"]) == (run["prompt_tokens"], 3)  # the measured generation's
        assert run["kv_cache_bytes"] == llama_config(MODEL).kv_cache_bytes(1, 256, 2)
        assert run["framework"] == "llamacpp" and run["precision"] == "fp32"
    assert sorted(s["n_tokens"] for s in summary) == [4] * 6
    assert all(s["ttft_ms"] > 0 and s["decode_tokens_per_s"] > 0 for s in summary)


def test_a_q8_0_gguf_made_by_llama_cpps_quantiser_collects(tmp_path, cache):
    runs, latencies, phases, summary = collect(
        tmp_path / "q.duckdb", cache, "--precision", "int8", "--prompt-tokens", "4"
    )
    (run,) = runs
    assert (run["status"], run["precision"]) == ("ok", "int8")
    environment = json.loads(run["environment"])
    assert environment["runtime_detail"]["gguf_type"] == "q8_0"
    assert len(environment["generation"]["tokens"]) == 4 and len(latencies) == 4
    assert summary[0]["decode_tokens_per_s"] > 0
