"""Sweep files and flags: expansion, and mistakes caught before any run, naming the key (training
sweeps' too); the configuration hash that resuming a stored sweep matches on."""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_asserts import one_line_error
from typer.testing import CliRunner

from edgestats.cli import app
from edgestats.collectors.core.runconfig import RunConfig
from edgestats.collectors.sweep import (
    AXES,
    GENERATION_ONLY,
    INFERENCE_ONLY,
    SETTINGS,
    TRAINING_ONLY,
    SweepError,
    build_sweep,
    combine,
    load_sweep_file,
    shuffled,
)

runner = CliRunner()

GOOD = """
[sweep]
framework = ["pytorch", "tflite"]
model = ["squeezenet", "mobilenet_v2"]
batch_size = [1, 8]
iterations = 100
repeat = 2
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "sweep.toml"
    path.write_text(text)
    return path


def test_lists_are_axes_scalars_are_fixed(tmp_path):
    sweep = combine(load_sweep_file(write(tmp_path, GOOD)), {}, None)
    configs = sweep.configs()
    assert len(configs) == 2 * 2 * 2 * 2
    assert {c.iterations for c in configs} == {100}
    assert {(c.framework, c.model, c.batch_size) for c in configs} == {
        (f, m, b) for f in ("pytorch", "tflite") for m in ("squeezenet", "mobilenet_v2") for b in (1, 8)
    }
    assert sorted({c.repeat_index for c in configs}) == [0, 1]
    assert len({c.config_hash() for c in configs}) == 16, "every run has its own identity"


def test_flags_override_the_file(tmp_path):
    sweep = combine(
        load_sweep_file(write(tmp_path, GOOD)), {"framework": ["onnxruntime"], "batch_size": []}, None
    )
    assert sweep.axes["framework"] == ["onnxruntime"] and sweep.axes["batch_size"] == [1, 8]


def test_shuffle_is_reproducible_from_its_seed():
    configs = [RunConfig("pytorch", "cnn9", batch_size=b) for b in range(1, 30)]
    assert shuffled(configs, 7) == shuffled(configs, 7)
    assert (
        shuffled(configs, 7) != configs
        and sorted(shuffled(configs, 7), key=lambda c: c.batch_size) == configs
    )


@pytest.mark.parametrize(
    "text, match",
    [
        (
            '[sweep]\nframework = "pytorch"\nmodel = "cnn9"\nbatchsize = 4\n',
            r"unknown key 'batchsize'; valid keys: framework, model",
        ),
        (
            '[sweep]\nframework = "caffe"\nmodel = "cnn9"\n',
            r"sweep\.framework: 'caffe' is not valid; use one of pytorch, tensorflow, tflite, onnxruntime",
        ),
        (
            '[sweep]\nframework = "pytorch"\nmodel = "vgg99"\n',
            r"sweep\.model: 'vgg99' is neither a zoo model \(alexnet, cifar_cnn, cnn9",
        ),
        (
            '[sweep]\nframework = "pytorch"\nmodel = "cnn9"\nbatch_size = "8"\n',
            r"sweep\.batch_size: expected an integer .* got str '8'",
        ),
        (
            '[sweep]\nframework = "pytorch"\nmodel = "cnn9"\nbatch_size = [1, 2.5]\n',
            r"batch_size: expected an integer",
        ),
        (
            '[sweep]\nframework = "pytorch"\nmodel = "cnn9"\niterations = 0\n',
            r"iterations: 0 must be at least 1",
        ),
        ('[sweep]\nframework = []\nmodel = "cnn9"\n', r"framework: an empty list gives no runs"),
        ('[sweep]\nmodel = "cnn9"\n', r"needs at least one framework and one model"),
        ('[runs]\nframework = "pytorch"\n', r"expected one \[sweep\] table, found runs"),
        ("[sweep\nframework = 1\n", r"not valid TOML"),
        (
            '[sweep]\nframework = "pytorch"\nmodel = "missing.onnx"\n',
            r"the model file 'missing.onnx' does not exist",
        ),
        (
            '[sweep]\nframework = "pytorch"\nmodel = "cnn9"\nprecision = "int4"\n',
            r"precision: 'int4' is not valid; use one of fp32, fp16, int8",
        ),
    ],
)
def test_bad_sweep_files_fail_before_any_run(tmp_path, text, match):
    path = write(tmp_path, text)
    db = tmp_path / "r.duckdb"
    with pytest.raises(SweepError, match=match):
        combine(load_sweep_file(path), {}, path)
    result = runner.invoke(app, ["collect", str(path), "--db", str(db)])
    assert result.exit_code == 1 and "error:" in result.output
    assert not db.exists(), "nothing may run (or be created) for a bad sweep"


def test_bad_flag_is_named():
    with pytest.raises(SweepError, match="threads: 0 must be at least 1"):
        build_sweep({"framework": ["pytorch"], "model": ["cnn9"], "threads": [0]})


def test_adapter_options_from_file_and_flags(tmp_path):
    from edgestats.collectors.sweep_keys import parse_option_flags

    path = write(tmp_path, '[sweep]\nframework = "tflite"\nmodel = "cnn9"\noptions = { xnnpack = false }\n')
    sweep = combine(load_sweep_file(path), {}, path)
    assert all(c.extra == {"xnnpack": False} for c in sweep.configs())
    assert parse_option_flags(["input_shape=[3,32,32]", "architecture=cnn9"]) == {
        "input_shape": [3, 32, 32],
        "architecture": "cnn9",
    }
    flagged = combine(load_sweep_file(path), {"options": {"xnnpack": True}}, path)
    assert flagged.configs()[0].extra == {"xnnpack": True}
    with pytest.raises(SweepError, match="unknown option.*colour.*xnnpack: use TFLite"):
        build_sweep({"framework": "tflite", "model": "cnn9", "options": {"colour": 1}})
    assert sweep.configs()[0].config_hash() != flagged.configs()[0].config_hash()


def test_every_collect_option_is_a_sweep_key_or_named_as_not_one():
    """collect's options reach the sweep as they are declared (collectors/options.py: a SweepKey
    is a key of the sweep, under the key it feeds); the command's signature is built from the same
    declarations, so an option cannot be on the command and silently missing from the sweep."""
    import inspect

    from edgestats.cli import app
    from edgestats.collectors.options import COLLECT_OPTIONS
    from edgestats.collectors.sweep_keys import SweepKey, sweep_keys, sweep_values

    [command] = [c.callback for c in app.registered_commands if c.name == "collect"]
    params = list(inspect.signature(command).parameters)
    assert params == [opt.name for opt in COLLECT_OPTIONS]
    # --until-precise and --max-repeat steer how many runs a configuration gets: not a sweep key (yet);
    # -v only says more on the terminal; --force writes to a DB marked damaged (the DB's, not the sweep's)
    assert sorted(opt.name for opt in COLLECT_OPTIONS if not isinstance(opt, SweepKey)) == [
        "cache_dir",
        "db",
        "force",
        "max_repeat",
        "sweep_file",
        "until_precise",
        "verbose",
    ]
    keys = [key.feeds for key in sweep_keys(COLLECT_OPTIONS)]
    assert [k for k in keys if k in AXES][:4] == ["framework", "model", "runtime", "batch_size"], (
        "axes keep the options' order"
    )
    assert set(keys) == set(AXES) | set(SETTINGS) | {"options", "tags"}
    given = {opt.name: opt.default for opt in COLLECT_OPTIONS}
    given.update(
        framework=["pytorch"], model=["cnn9"], batch_size=[1, 2], option=["interop_threads=1"], threads=[]
    )
    flags = sweep_values(COLLECT_OPTIONS, given)
    assert flags == {
        "framework": ["pytorch"],
        "model": ["cnn9"],
        "batch_size": [1, 2],
        "options": {"interop_threads": 1},
    }, "what was not given is left to the sweep file"
    assert sweep_values(COLLECT_OPTIONS, {"input_path": "x.png"}) == {"input": "x.png"}
    assert sweep_values(COLLECT_OPTIONS, {"evict_cache": False, "retry_failed": False}) == {
        "evict_cache": False
    }
    assert sweep_values(COLLECT_OPTIONS, {"evict_cache": None, "retry_failed": True}) == {
        "retry_failed": True
    }
    sweep = combine(None, flags, None)
    assert [c.batch_size for c in sweep.configs()] == [1, 2] and sweep.configs()[0].extra == {
        "interop_threads": 1
    }


def test_the_sweep_keys_types_and_axes_are_the_declarations():
    """AXES and SETTINGS are read from collect's declarations: each key's type, and whether it is
    an axis; a training-only or generation-only key is refused for the other kinds by its declaration."""
    assert AXES["batch_size"][0] is int and AXES["learning_rate"][0] is float and AXES["input"][0] is str
    assert AXES["framework"][1] and AXES["model"][1] is None  # the choices stay where they are checked
    assert SETTINGS["repeat"] is int and SETTINGS["timeout"] is float and SETTINGS["retry_failed"] is bool
    assert "warmup" in AXES and "evict_cache" in AXES and "repeat" not in AXES and "options" not in SETTINGS
    assert TRAINING_ONLY == ("data", "epochs", "learning_rate", "optimizer", "num_workers", "evict_cache")
    assert GENERATION_ONLY == ("prompt_tokens", "new_tokens", "context_depth")
    assert set(INFERENCE_ONLY) == {"runtime", "input", "precision"}


def test_a_sweep_file_that_is_not_utf8_is_one_line(tmp_path):
    path = tmp_path / "sweep.toml"
    path.write_bytes(b'[sweep]\nframework = "pytorch"\nmodel = "cnn9"\n# \xff\xfe\n')
    db = tmp_path / "r.duckdb"
    with pytest.raises(SweepError, match=r"line 4 is not UTF-8 text \(byte 0xff\)"):
        load_sweep_file(path)
    assert "not UTF-8" in one_line_error(runner.invoke(app, ["collect", str(path), "--db", str(db)]))
    assert not db.exists()


@pytest.mark.parametrize("value", ["1e9", "1001", "nan", "inf", "-1"])
def test_sample_hz_is_at_most_1000(tmp_path, value):
    path = write(tmp_path, f'[sweep]\nframework = "pytorch"\nmodel = "cnn9"\nsample_hz = {value}\n')
    db = tmp_path / "r.duckdb"
    with pytest.raises(SweepError, match="sample_hz"):
        combine(load_sweep_file(path), {}, path)
    assert "sample_hz" in one_line_error(runner.invoke(app, ["collect", str(path), "--db", str(db)]))
    flag = runner.invoke(
        app, ["collect", "--db", str(db), "-f", "pytorch", "-m", "cnn9", "--sample-hz", value]
    )
    assert "sample_hz" in one_line_error(flag)
    assert not db.exists()
    assert (
        build_sweep({"framework": "pytorch", "model": "cnn9", "sample_hz": 1000}).settings["sample_hz"]
        == 1000.0
    )


@pytest.mark.parametrize(
    "key, value",
    [
        ("batch_size", 3_000_000_000),
        ("threads", 2**31),
        ("iterations", 10**22),
        ("timeout", float("inf")),
        ("cooldown", float("nan")),
        ("cooldown", 86_401),
        ("learning_rate", float("inf")),
        ("seed", -1),
        ("seed", 2**32),
        ("warmup", 1_000_001),
        ("warmup", "auto:1000001"),
        ("shuffle_seed", 2**63),
        ("memory_limit_mb", 2.0**43),
        ("clock_offset", float("-inf")),
        ("runtime", "a\x00b"),
        ("power", "csv:/tmp/x\n.csv"),
    ],
)
def test_values_a_run_cannot_store_or_use_are_refused(key, value):
    kind = {"kind": "training", "data": "."} if key == "learning_rate" else {}
    with pytest.raises(SweepError, match=key):
        build_sweep({"framework": "pytorch", "model": "cnn9", key: value, **kind})


def test_the_largest_values_of_each_range_pass():
    sweep = build_sweep(
        {
            "framework": "pytorch",
            "model": "cnn9",
            "seed": [0, 2**32 - 1],
            "iterations": 1_000_000,
            "warmup": ["auto:1000000", 1_000_000],
            "cooldown": 86_400,
            "repeat": 25_000,  # 2 seeds × 2 warm-ups × 25,000: the most runs of a sweep
        }
    )
    assert sweep.settings["cooldown"] == 86_400.0 and sweep.axes["seed"] == [0, 2**32 - 1]


@pytest.mark.parametrize(
    "values, arithmetic",
    [
        ({"repeat": 100_001}, "1 configuration × 100,001 repeats = 100,001 runs"),
        ({"batch_size": [1, 2], "repeat": 50_001}, "2 batch sizes × 50,001 repeats = 100,002 runs"),
        (
            {"threads": [1, 2], "precision": ["fp32", "fp16"], "repeat": 10**30},
            "2 thread counts × 2 precisions × 1,000,000,000,000,000,000,000,000,000,000 repeats = "
            "4,000,000,000,000,000,000,000,000,000,000 runs",
        ),
    ],
)
def test_the_planned_size_is_computed_not_built(values, arithmetic):
    with pytest.raises(SweepError) as refused:
        build_sweep({"framework": "pytorch", "model": "cnn9", **values})
    assert str(refused.value).startswith(arithmetic + "; a sweep runs at most 100,000 ")


def test_inference_config_hashes_are_what_stored_sweeps_hold():
    """Resuming a stored inference sweep matches on config_hash: adding training fields to
    RunConfig must not change the hash of any inference configuration (values from before)."""
    assert RunConfig("pytorch", "cnn9").config_hash() == "882006000d413c12d41a695bde07756a"
    config = RunConfig(
        "tflite",
        "squeezenet",
        batch_size=8,
        threads=2,
        iterations=30,
        warmup=2,
        repeat_index=1,
        extra={"xnnpack": False},
    )
    assert config.config_hash() == "5820cceb9a16d78b04f40fe100527076"
    assert (
        RunConfig("pytorch", "cnn9", kind="training", data="/d").config_hash()
        != RunConfig("pytorch", "cnn9").config_hash()
    )


@pytest.mark.parametrize(
    "values, message",
    [
        (
            {"framework": ["pytorch"], "model": ["cnn9"], "learning_rate": [0.1]},
            "learning_rate: only for training",
        ),
        (
            {"kind": "training", "framework": ["onnxruntime"], "model": ["cnn9"]},
            "onnxruntime cannot train; use one of pytorch, tensorflow",
        ),
        (
            {"kind": "training", "framework": ["pytorch"], "model": ["cnn9"]},
            "training needs a dataset: --data DIR",
        ),
        (
            {"kind": "training", "framework": ["pytorch"], "model": ["cnn9"], "data": ["/no/such/dir"]},
            "data: --data '/no/such/dir' does not exist",
        ),
        (
            {"kind": "training", "framework": ["pytorch"], "model": ["cnn9"], "optimizer": ["rmsprop"]},
            "'rmsprop' is not valid; use one of sgd, adam",
        ),
        (
            {"kind": "training", "framework": ["pytorch"], "model": ["cnn9"], "num_workers": [-1]},
            "num_workers: -1 must be at least 0",
        ),
        (
            {"kind": "training", "framework": ["pytorch"], "model": ["cnn9"], "evict_cache": ["yes"]},
            "evict_cache: expected true or false",
        ),
        (
            {"kind": "training", "framework": ["pytorch"], "model": ["cnn9"], "runtime": ["torchscript"]},
            "runtime: only for inference",
        ),
        (
            {"kind": "learning", "framework": ["pytorch"], "model": ["cnn9"]},
            "'learning' is not valid; use one of inference, training",
        ),
    ],
)
def test_training_sweep_mistakes_are_named_up_front(values, message):
    with pytest.raises(SweepError, match=message.replace("(", r"\(").replace(")", r"\)")):
        build_sweep(values)
