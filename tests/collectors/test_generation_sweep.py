"""Generation sweeps (collect --kind generation): the defaults a run records, the smallest model
without --model, and every value a generation run could not use refused in one line before
anything runs or a DB is created. No worker runs here.
Cost: about 1 s (one test asks the PyTorch engine, which imports torch: marked frameworks).
"""

from __future__ import annotations

import pytest
from cli_asserts import one_line_error
from typer.testing import CliRunner

from edgestats.cli import app
from edgestats.collectors.core.runconfig import RunConfig
from edgestats.collectors.sweep import SweepError, build_sweep, combine, feasibility, load_sweep_file

runner = CliRunner()


def test_generation_defaults_are_explicit_and_the_smallest_model_is_the_default():
    sweep = build_sweep({"kind": "generation", "framework": ["pytorch"], "prompt_tokens": [16, 64]})
    configs = sweep.configs()
    assert [(c.model, c.prompt_tokens, c.new_tokens, c.context_depth) for c in configs] == [
        ("llama15m", 16, 64, 0),
        ("llama15m", 64, 64, 0),
    ]
    assert {(c.kind, c.warmup, c.iterations) for c in configs} == {("generation", 1, 0)}
    assert configs[0].config_hash() != configs[1].config_hash()
    assert "p16 n64" in configs[0].label()


def test_a_generation_sweep_file(tmp_path):
    path = tmp_path / "gen.toml"
    path.write_text(
        '[sweep]\nkind = "generation"\nframework = "pytorch"\nmodel = ["llama15m", "llama40m"]\n'
        "prompt_tokens = [16, 128]\nnew_tokens = 32\ncontext_depth = [0, 512]\nrepeat = 3\n"
    )
    configs = combine(load_sweep_file(path), {}, path).configs()
    assert len(configs) == 2 * 2 * 2 * 3
    assert {(c.new_tokens, c.warmup, c.kind) for c in configs} == {(32, 1, "generation")}
    assert {(c.model, c.prompt_tokens, c.context_depth) for c in configs} == {
        (m, p, d) for m in ("llama15m", "llama40m") for p in (16, 128) for d in (0, 512)
    }
    path.write_text('[sweep]\nkind = "generation"\nframework = "pytorch"\nprompt_tokens = 2049\n')
    with pytest.raises(SweepError, match=r"gen.toml: sweep.prompt_tokens: 2049 must be at most 2,048"):
        combine(load_sweep_file(path), {}, path)


def test_inference_and_training_configurations_hash_as_before_the_generation_fields():
    """The new fields are left out of the hash at their default, so stored sweeps still resume:
    the hashes are those the previous release computed for the same configurations."""
    assert (
        RunConfig(framework="onnxruntime", model="cnn9").config_hash() == "6c62379a39f1f96ad5a8582959bbe317"
    )
    training = RunConfig(framework="pytorch", model="mnist_cnn", kind="training", epochs=2, data="/d")
    assert training.config_hash() == "e1c0edf7e973438eed42c0387b1dfa23"


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--kind", "generation", "--prompt-tokens", "0"], "prompt_tokens: 0 must be at least 1"),
        (["--kind", "generation", "--new-tokens", "3000"], "new_tokens: 3000 must be at most 2,048"),
        (["--kind", "generation", "--context-depth", "-1"], "context_depth: -1 must be at least 0"),
        (
            [
                "--kind",
                "generation",
                "--context-depth",
                "1500",
                "--prompt-tokens",
                "500",
                "--new-tokens",
                "100",
            ],
            "context_depth + prompt_tokens + new_tokens: 2,100 tokens, more than llama15m's context of 2,048",
        ),
        (["-m", "cnn9", "--prompt-tokens", "8"], "prompt_tokens: only for generation; add kind"),
        (["-m", "llama15m"], "llama15m is a generation model"),
        (["--kind", "generation", "-m", "cnn9"], "cnn9 is not one (generation models: llama15m"),
        (["--kind", "generation", "-f", "tflite"], "tflite does not run generation here"),
        (["--kind", "generation", "-n", "10"], "iterations: generation runs exactly --new-tokens tokens"),
        (["--kind", "generation", "--warmup", "auto"], "a count of whole warm-up generations"),
        (["--kind", "generation", "--model", "llama7b"], "generation: llama15m, llama40m, llama110m"),
    ],
)
def test_values_a_generation_run_cannot_use_are_one_line_before_anything_runs(tmp_path, args, expected):
    db = tmp_path / "r.duckdb"
    framework = [] if "-f" in args else ["-f", "pytorch"]
    line = one_line_error(runner.invoke(app, ["collect", "--db", str(db), *framework, *args]))
    assert expected in line, line
    assert not db.exists(), "nothing may run (or be created) for a bad value"


@pytest.mark.frameworks  # feasibility asks the engine, which needs torch installed to be available
def test_a_precision_pytorch_cannot_generate_in_is_skipped_with_why():
    configs = build_sweep(
        {"kind": "generation", "framework": ["pytorch"], "precision": ["fp32", "int8", "fp16"]}
    ).configs()
    runnable, skipped = feasibility(configs)
    assert [c.precision for c in runnable] == ["fp32"]
    reasons = {c.precision: why for c, why in skipped}
    assert "quantised generation is llama.cpp's" in reasons["int8"]
    assert "fp16 is a fast path on cuda only" in reasons["fp16"]
