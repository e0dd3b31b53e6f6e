"""ONNX Runtime generation (collectors/generation/onnx_export.py, onnx_engine.py): `edgestats prepare`
builds llama15m's KV-cache graph into a model pack; through the engine API, ONNX Runtime's first 16
greedy tokens equal PyTorch's on the same weights and its logits agree at every step; and
`collect --kind generation -f onnxruntime`, on a device without torch, runs it from the pack and
stores every token's latency and the phases.

One export for the module (llama15m, 64 MB), then 2 short runs (5 prompt tokens, 4 new, 1 thread).
Cost: about 27 s (the export about 8 s, the collect about 8 s, 16 tokens in both runtimes); about
72 s where onnxscript is installed (torch's dynamo exporter, about 60 s for the export).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from edgestats.cli import app
from edgestats.collectors.core.runconfig import RunConfig
from edgestats.collectors.zoo.llama_arch import llama_config, seeded_tokens
from edgestats.store.results import Store

pytestmark = [pytest.mark.frameworks, pytest.mark.xdist_group("generation")]
MODEL, TOKENS = "llama15m", 16
# fp32 logits of the graph and of the eager model differ by rounding only (measured: about 3e-6)
LOGITS_ATOL = 1e-4
# a device with only edgestats[onnx]: importing these fails in the collect and its workers
BLOCKER = """
import importlib.abc, sys

class _NotInstalled(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in {"torch", "tensorflow", "keras", "llama_cpp", "executorch"}:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None

sys.meta_path.insert(0, _NotInstalled())
"""


@pytest.fixture(scope="module")
def pack(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("onnx_generation")
    sweep = folder / "sweep.toml"
    sweep.write_text(f'[sweep]\nkind = "generation"\nframework = ["onnxruntime"]\nmodel = ["{MODEL}"]\n')
    result = CliRunner().invoke(app, ["prepare", str(sweep), "--cache-dir", str(folder / "pack")])
    assert result.exit_code == 0, result.output
    return folder / "pack"


def pack_file(pack: Path) -> Path:
    (entry,) = json.loads((pack / "pack.json").read_text())["models"]
    assert (entry["framework"], entry["model"], entry["status"], entry["intact"]) == (
        "onnxruntime",
        MODEL,
        "built",
        True,
    )
    return pack / entry["artifact"]


def engine(pack: Path, threads: int | None = 1):
    from edgestats.collectors.generation.engines import engine_class

    config = RunConfig(kind="generation", framework="onnxruntime", model=MODEL, threads=threads)
    built = engine_class("onnxruntime")(config, pack_file(pack))
    built.import_framework()
    built.load_model()
    return built


def test_the_graph_takes_and_returns_every_layers_kv_cache_with_dynamic_lengths(pack):
    import onnxruntime as ort

    cfg = llama_config(MODEL)
    session = ort.InferenceSession(str(pack_file(pack)), providers=["CPUExecutionProvider"])
    inputs = {i.name: i.shape for i in session.get_inputs()}
    outputs = {o.name: o.shape for o in session.get_outputs()}
    assert inputs["tokens"] == ["batch", "new"]
    assert outputs["logits"] == ["batch", cfg.vocab_size]
    for i in range(cfg.n_layers):
        for kind in ("key", "value"):
            assert inputs[f"past_{kind}_{i}"] == ["batch", cfg.n_kv_heads, "past", cfg.head_dim]
            batch, heads, total, head_dim = outputs[f"present_{kind}_{i}"]
            assert [batch, heads, head_dim] == ["batch", cfg.n_kv_heads, cfg.head_dim]
            # "total" from the TorchScript-based exporter, "past + new" (either order) from dynamo's
            assert total == "total" or set(total.split(" + ")) == {"new", "past"}
    assert len(inputs) == len(outputs) == 1 + 2 * cfg.n_layers


def test_onnx_runtime_generates_pytorchs_greedy_tokens_with_agreeing_logits(pack):
    """Two sequences after 3 tokens of context: the same 16 tokens as the zoo reference, and the
    logits of the prompt and of every decode step within LOGITS_ATOL of the eager model's."""
    import torch

    from edgestats.collectors.zoo.llama import KVCache, build_llama, greedy_generate

    context, prompt = seeded_tokens(0, 2, 3, "context"), seeded_tokens(0, 2, 8, "prompt")
    model, onnx = build_llama(MODEL, seed=0), engine(pack)
    reference = greedy_generate(model, prompt, TOKENS, context=context)
    cache = KVCache(model.cfg, 2, 3 + 8 + TOKENS, torch.float32)
    onnx.start(2, 3 + 8 + TOKENS)
    generated, feed, worst = [[], []], prompt, 0.0
    with torch.no_grad():
        model(torch.tensor(context), cache)
        onnx.forward(context)
        for _ in range(TOKENS):
            logits = onnx.forward(feed)
            expected = model(torch.tensor(feed), cache)[:, -1].numpy()
            worst = max(worst, float(np.abs(logits - expected).max()))
            ids = onnx.pick(logits)
            feed = [[t] for t in ids]
            for row, token in zip(generated, ids):
                row.append(token)
    assert generated == reference
    assert worst < LOGITS_ATOL
    # K and V of 10 layers, 2 sequences, 27 positions, 2 kv heads of 64, fp32
    assert onnx.kv_cache_bytes() == 2 * 10 * 2 * 27 * 2 * 64 * 4
    onnx.forward(feed)  # the 27th position: the last token, which generation never feeds
    with pytest.raises(ValueError, match="holds 27 positions; 28 were asked for"):
        onnx.forward(feed)


def test_threads_set_intra_op_threads_as_for_inference(pack):
    assert engine(pack, threads=1).environment()["intra_op_num_threads"] == 1
    assert engine(pack, threads=None).environment()["intra_op_num_threads"].startswith("default")


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        ({"precision": "fp16"}, "casting to fp32"),
        ({"precision": "int8"}, "quantised generation is llama.cpp's"),
        ({"accelerator": "cuda"}, "KV cache would cross to the host"),
        ({"runtime": "onnxruntime"}, None),
    ],
)
def test_configurations_the_engine_cannot_run_say_why(change, expected):
    from edgestats.collectors.generation.engines import engine_class

    config = RunConfig(kind="generation", framework="onnxruntime", model=MODEL, **change)
    reason = engine_class("onnxruntime").check_config(config)
    assert reason is None if expected is None else expected in reason


def runtime_only_collect(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(BLOCKER)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")])}
    command = [sys.executable, "-m", "edgestats", "collect", "--sample-hz", "0", "--power", "none", *args]
    return subprocess.run(command, capture_output=True, text=True, env=env, timeout=600)


def test_collect_runs_the_pack_without_torch_and_stores_every_token_and_phase(tmp_path, pack):
    db = tmp_path / "g.duckdb"
    args = ["--kind", "generation", "-f", "onnxruntime", "-m", MODEL, "--threads", "1", "--repeat", "2"]
    args += ["--prompt-tokens", "5", "--new-tokens", "4", "--db", str(db), "--cache-dir", str(pack)]
    proc = runtime_only_collect(tmp_path, *args)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    with Store.open(db, read_only=True) as store:
        runs = store.frame("SELECT * FROM runs ORDER BY repeat_index").to_dicts()
        assert [(r["status"], r["framework"], r["repeat_index"]) for r in runs] == [
            ("ok", "onnxruntime", 0),
            ("ok", "onnxruntime", 1),
        ]
        for run in runs:
            where = f"WHERE run_id = '{run['run_id']}'"
            latencies = store.frame(f"SELECT * FROM latencies {where} ORDER BY iteration").to_dicts()
            assert [(t["iteration"], t["warmup"]) for t in latencies] == [(i, i == 0) for i in range(4)]
            assert all(t["latency_ns"] > 0 for t in latencies)
            phases = store.frame(f"SELECT phase FROM phases {where} ORDER BY seq")["phase"].to_list()
            assert phases == [
                "process_start", "import", "load_model", "warmup", "kv_cache",
                "prefill", "first_token", "decode", "total",
            ]  # fmt: skip
            assert run["kv_cache_bytes"] == 2 * 10 * 1 * (5 + 4) * 2 * 64 * 4
            environment = json.loads(run["environment"])
            assert environment["model_cache"] == "hit"  # the pack's file, not a new export
            assert environment["runtime_detail"]["intra_op_num_threads"] == 1
            assert environment["generation"]["tokens"] == reference_tokens(5, 4)
        summary = store.frame("SELECT * FROM generation_summary").to_dicts()
    assert [s["n_tokens"] for s in summary] == [4, 4]
    assert all(s["ttft_ms"] > 0 and s["decode_tokens_per_s"] > 0 for s in summary)


def reference_tokens(prompt_tokens: int, new_tokens: int) -> list[int]:
    from edgestats.collectors.zoo.llama import build_llama, greedy_generate

    prompt = seeded_tokens(0, 1, prompt_tokens, "prompt")
    return greedy_generate(build_llama(MODEL, seed=0), prompt, new_tokens)[0]
