"""ExecuTorch generation (collectors/generation/executorch_export.py, executorch_engine.py):
`edgestats prepare` builds llama15m's XNNPACK program, its KV cache as mutable buffers, into a
model pack; through the engine API, ExecuTorch's first 16 greedy tokens equal PyTorch's on the same
weights and its logits agree at every step; and `collect --kind generation -f executorch` runs it
from the pack and stores every token's latency and the phases.

One export for the module (llama15m, 2 sequences of 3 context + 8 prompt + 16 new tokens: the
engine test and the collect share the program's shape), then 2 short runs (1 thread).
Cost: about 100 s on 2 busy cores (the export about 80 s, the collect about 11 s).
"""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from edgestats.cli import app
from edgestats.collectors.adapters.inputs import ModelFileError
from edgestats.collectors.core.runconfig import RunConfig
from edgestats.collectors.prepare import cache_key
from edgestats.collectors.zoo.llama_arch import llama_config, seeded_tokens
from edgestats.store.results import Store

pytestmark = [pytest.mark.frameworks, pytest.mark.xdist_group("generation")]
MODEL, TOKENS, BATCH, DEPTH, PROMPT = "llama15m", 16, 2, 3, 8
CAPACITY = DEPTH + PROMPT + TOKENS
SHAPE = {"batch_size": BATCH, "context_depth": DEPTH, "prompt_tokens": PROMPT, "new_tokens": TOKENS}
# fp32 logits of the program and of the eager model differ by rounding only (XNNPACK's kernels
# sum in another order; measured: about 5e-6)
LOGITS_ATOL = 1e-4


@pytest.fixture(scope="module")
def pack(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("executorch_generation")
    sweep = folder / "sweep.toml"
    keys = "\n".join(f"{k} = [{v}]" for k, v in SHAPE.items())
    head = f'[sweep]\nkind = "generation"\nframework = ["executorch"]\nmodel = ["{MODEL}"]'
    sweep.write_text(f"{head}\n{keys}\n")
    result = CliRunner().invoke(app, ["prepare", str(sweep), "--cache-dir", str(folder / "pack")])
    assert result.exit_code == 0, result.output
    return folder / "pack"


def pack_file(pack: Path) -> Path:
    (entry,) = json.loads((pack / "pack.json").read_text())["models"]
    assert (entry["framework"], entry["model"], entry["status"], entry["intact"]) == (
        "executorch",
        MODEL,
        "built",
        True,
    )
    return pack / entry["artifact"]


def engine(pack: Path, threads: int | None = 1):
    from edgestats.collectors.generation.engines import engine_class

    config = RunConfig(kind="generation", framework="executorch", model=MODEL, threads=threads, **SHAPE)
    built = engine_class("executorch")(config, pack_file(pack))
    built.import_framework()
    built.load_model()
    return built


def test_executorch_generates_pytorchs_greedy_tokens_with_agreeing_logits(pack):
    """Two sequences after 3 tokens of context: the same 16 tokens as the zoo reference, and the
    logits of the prompt and of every decode step within LOGITS_ATOL of the eager model's; a
    second generation on the same program (a fresh start over the first's stale cache) repeats them."""
    import torch

    from edgestats.collectors.zoo.llama import KVCache, build_llama, greedy_generate

    context, prompt = seeded_tokens(0, BATCH, DEPTH, "context"), seeded_tokens(0, BATCH, PROMPT, "prompt")
    model, et = build_llama(MODEL, seed=0), engine(pack)
    reference = greedy_generate(model, prompt, TOKENS, context=context)
    cache = KVCache(model.cfg, BATCH, CAPACITY, torch.float32)
    et.start(BATCH, CAPACITY)
    generated, feed, worst = [[], []], prompt, 0.0
    with torch.no_grad():
        model(torch.tensor(context), cache)
        et.forward(context)
        for _ in range(TOKENS):
            logits = et.forward(feed)
            expected = model(torch.tensor(feed), cache)[:, -1].numpy()
            worst = max(worst, float(np.abs(logits.numpy() - expected).max()))
            ids = et.pick(logits)
            feed = [[t] for t in ids]
            for row, token in zip(generated, ids):
                row.append(token)
    assert generated == reference
    assert worst < LOGITS_ATOL
    # K and V of 10 layers, 2 sequences, 27 positions, 2 kv heads of 64, fp32
    assert et.kv_cache_bytes() == 2 * 10 * 2 * 27 * 2 * 64 * 4
    with pytest.raises(ValueError, match="holds 27 positions; 28 were asked for"):
        et.forward([[1, 2]] * BATCH)
    et.start(BATCH, PROMPT + 4)  # stale keys past the new positions are masked
    again = [et.pick(et.forward(prompt))]
    for _ in range(3):
        again.append(et.pick(et.forward([[t] for t in again[-1]])))
    assert [list(r) for r in zip(*again)] == greedy_generate(model, prompt, 4)


def test_the_program_refuses_a_shape_it_was_not_built_for(pack):
    et = engine(pack)
    with pytest.raises(ModelFileError, match="2 sequences of up to 27 positions; 1 of 9"):
        et.start(1, 9)
    with pytest.raises(ModelFileError, match="2 of 28 were asked for"):
        et.start(BATCH, CAPACITY + 1)
    environment = et.environment()
    assert (environment["threadpool_threads"], environment["capacity"]) == (1, CAPACITY)


def test_each_program_shape_has_its_own_cache_key():
    base = RunConfig(kind="generation", framework="executorch", model=MODEL, **SHAPE)
    keys = {cache_key(dataclasses.replace(base, **{field: value + 1})) for field, value in SHAPE.items()}
    assert len(keys | {cache_key(base)}) == len(SHAPE) + 1
    assert cache_key(dataclasses.replace(base, threads=3)) == cache_key(base)


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        ({"precision": "fp16"}, "exported in fp32"),
        ({"precision": "int8"}, "quantised generation is llama.cpp's"),
        ({"accelerator": "cuda"}, "cpu"),
        ({"runtime": "executorch"}, None),
    ],
)
def test_configurations_the_engine_cannot_run_say_why(change, expected):
    from edgestats.collectors.generation.engines import engine_class

    config = RunConfig(kind="generation", framework="executorch", model=MODEL, **change)
    reason = engine_class("executorch").check_config(config)
    assert reason is None if expected is None else expected in reason


def test_collect_runs_the_pack_and_stores_every_token_and_phase(tmp_path, pack):
    from edgestats.collectors.zoo.llama import build_llama, greedy_generate

    db = tmp_path / "g.duckdb"
    args = ["--kind", "generation", "-f", "executorch", "-m", MODEL, "--threads", "1", "--repeat", "2"]
    for key, value in SHAPE.items():
        args += [f"--{key.replace('_', '-')}", str(value)]
    command = [sys.executable, "-m", "edgestats", "collect", "--sample-hz", "0", "--power", "none", *args]
    proc = subprocess.run(
        [*command, "--db", str(db), "--cache-dir", str(pack)], capture_output=True, text=True, timeout=600
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    context, prompt = seeded_tokens(0, BATCH, DEPTH, "context"), seeded_tokens(0, BATCH, PROMPT, "prompt")
    reference = greedy_generate(build_llama(MODEL, seed=0), prompt, TOKENS, context=context)[0]
    with Store.open(db, read_only=True) as store:
        runs = store.frame("SELECT * FROM runs ORDER BY repeat_index").to_dicts()
        assert [(r["status"], r["framework"], r["repeat_index"]) for r in runs] == [
            ("ok", "executorch", 0),
            ("ok", "executorch", 1),
        ]
        for run in runs:
            where = f"WHERE run_id = '{run['run_id']}'"
            latencies = store.frame(f"SELECT * FROM latencies {where} ORDER BY iteration").to_dicts()
            assert [(t["iteration"], t["warmup"]) for t in latencies] == [(i, i == 0) for i in range(TOKENS)]
            assert all(t["latency_ns"] > 0 for t in latencies)
            phases = store.frame(f"SELECT phase FROM phases {where} ORDER BY seq")["phase"].to_list()
            assert phases == [
                "process_start", "import", "load_model", "warmup", "kv_cache", "context",
                "prefill", "first_token", "decode", "total",
            ]  # fmt: skip
            assert run["kv_cache_bytes"] == llama_config(MODEL).kv_cache_bytes(BATCH, CAPACITY, 4)
            environment = json.loads(run["environment"])
            assert environment["model_cache"] == "hit"  # the pack's file, not a new export
            assert environment["runtime_detail"]["model_format"] == "pte"
            assert environment["generation"]["tokens"] == reference
        summary = store.frame("SELECT * FROM generation_summary").to_dicts()
    assert [s["n_tokens"] for s in summary] == [TOKENS, TOKENS]
    assert all(s["ttft_ms"] > 0 and s["decode_tokens_per_s"] > 0 for s in summary)
