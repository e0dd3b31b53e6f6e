"""`edgestats prepare` builds one framework's models in one process (collectors/pack.py's
build_group, collectors/prepare.py's prepare_many): a model that fails says why on its own
line and the others are still built; a process that dies is not the end of the models it had not
reached. No framework is needed: the conversions here are the test's own.
Cost: about 3 s of test time in make test's parallel lane (measured from a fresh clone on 2 cores)."""

from __future__ import annotations

import json
import stat
import sys
from pathlib import Path

import pytest

from edgestats.collectors import prepare as prepare_module
from edgestats.collectors.core.runconfig import RunConfig
from edgestats.collectors.pack import _result_line, build_group
from edgestats.collectors.prepare import cache_key, lookup
from edgestats.registry.runtimes import runtime


def configs(*models: str) -> list[RunConfig]:
    return [RunConfig(framework="onnxruntime", model=m) for m in models]


def test_one_failing_model_is_its_own_line_and_the_next_is_built(tmp_path, monkeypatch, capsys):
    def fake_prepare(cls, config, folder):
        if config.model == "squeezenet":
            raise RuntimeError("the converter gave up on squeezenet")
        target = Path(folder) / f"{config.model}.onnx"
        target.write_bytes(b"model bytes of " + config.model.encode())
        return target

    monkeypatch.setattr(runtime("onnxruntime").adapter_class(), "prepare", classmethod(fake_prepare))
    wanted = configs("cnn9", "squeezenet", "resnet18")
    prepare_module.prepare_many(wanted, tmp_path)
    captured = capsys.readouterr()
    lines = [json.loads(line) for line in captured.out.splitlines()]
    assert [line["key"] for line in lines] == [cache_key(c) for c in wanted]
    assert lines[1] == {
        "key": cache_key(wanted[1]),
        "error": "RuntimeError: the converter gave up on squeezenet",
    }
    assert "Traceback" in captured.err and "gave up on squeezenet" in captured.err
    for config, line in ((wanted[0], lines[0]), (wanted[2], lines[2])):
        assert line["cache"] == "built" and lookup(config, tmp_path) == (line["artifact"], None)


def test_output_a_converter_printed_is_not_taken_for_a_result():
    assert _result_line("Saved artifact at /tmp/x\n") is None
    assert _result_line('progress 3/4 {"key": "abc", "artifact": null, "cache": "hit"}\n') == {
        "key": "abc",
        "artifact": None,
        "cache": "hit",
    }
    assert _result_line('{"key": "abc", cut short\n') is None


def fake_python(tmp_path: Path, batch_behaviour: str) -> Path:
    """An interpreter that runs a single model's prepare for real but, given a list, does
    `batch_behaviour` (Python code) instead: a process that dies partway through a group. The
    configurations come on stdin ("-"); a single one is handed on in a file, stdin being read."""
    script = tmp_path / "python"
    script.write_text(f"""#!{sys.executable}
import json, os, sys, tempfile
args = sys.argv[1:]
if args[:1] == ["-P"]:
    args = args[1:]
text = sys.stdin.read() if args[2] == "-" else open(args[2]).read()
document = json.loads(text)
if isinstance(document, list):
{batch_behaviour}
args[2] = tempfile.mkstemp(suffix=".json", dir={str(tmp_path)!r})[1]
open(args[2], "w").write(text)
os.execv({sys.executable!r}, [{sys.executable!r}, "-P", *args])
""")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return script


def test_models_a_crashed_group_never_reached_are_built_one_by_one(tmp_path):
    """The group process reports the first model then dies (as a converter's segfault would):
    the first keeps its result and each other model gets a process, and a verdict, of its own."""
    user_file = tmp_path / "mine.onnx"  # a user's file: prepare only links it into the pack, so it is quick
    user_file.write_bytes(b"not converted")
    wanted = [
        RunConfig(framework="onnxruntime", model="cnn9"),
        RunConfig(framework="onnxruntime", model=str(user_file)),
    ]
    first = json.dumps({"key": cache_key(wanted[0]), "artifact": None, "cache": "hit"})
    python = fake_python(tmp_path, f"    print({first!r}, flush=True)\n    os.kill(os.getpid(), 9)")
    results = list(build_group(wanted, tmp_path / "pack", python=str(python)))
    assert [(c.model, status, artifact, error) for c, status, artifact, error in results] == [
        ("cnn9", "hit", None, None),
        (str(user_file), "built", f"{cache_key(wanted[1])}/mine.onnx", None),
    ]


def test_a_group_whose_process_cannot_start_fails_each_model_with_the_reason(tmp_path):
    python = fake_python(tmp_path, "    sys.exit('no interpreter for ' + str(len(document)) + ' models')")
    (tmp_path / "python").write_text(
        (tmp_path / "python")
        .read_text()
        .replace("os.execv(", "sys.exit('this interpreter is broken'); os.execv(")
    )
    results = list(build_group(configs("cnn9", "squeezenet"), tmp_path / "pack", python=str(python)))
    assert [(c.model, status, error) for c, status, _, error in results] == [
        ("cnn9", "failed", "this interpreter is broken"),
        ("squeezenet", "failed", "this interpreter is broken"),
    ]


@pytest.mark.frameworks  # `prepare` checks that OpenVINO is installed before it plans the model
def test_a_file_the_runtime_reads_itself_is_used_in_place_not_called_built(tmp_path):
    """OpenVINO reads a user's .onnx itself: nothing is built and the pack holds no copy. The line,
    the manifest and the summary say so, instead of "built" beside "0 model files ready"."""
    from typer.testing import CliRunner

    from edgestats.cli import app

    mine = tmp_path / "mine.onnx"
    mine.write_bytes(b"an ONNX file the runtime opens on the device")
    result = CliRunner().invoke(
        app, ["prepare", "-f", "openvino", "-m", str(mine), "--cache-dir", str(tmp_path / "pack")]
    )
    assert result.exit_code == 0, result.output
    assert "used in place openvino" in result.output and "built" not in result.output
    assert "0 model files ready" in result.output and "1 used in place" in result.output
    [entry] = json.loads((tmp_path / "pack" / "pack.json").read_text())["models"]
    assert (entry["status"], entry["artifact"]) == ("used in place", None)
