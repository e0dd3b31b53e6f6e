"""The model cache (collectors/prepare.py): artifact.json names the prepared file relative
to its folder and carries its SHA-256; a missing, cut short or corrupt file, or an artifact.json of
an older edgestats, is rebuilt and the rebuild says why. A copied cache folder works from its new
place.

The lookup and rebuild logic runs in the fast lane with a stand-in adapter that writes a file;
the end-to-end test prepares a real ONNX model (cnn9, the zoo's smallest) and runs it with
onnxruntime through `edgestats collect`.
Cost: about 3 s of test time in make test's parallel lane (measured from a fresh clone on 2 cores).
"""

from __future__ import annotations

import json
import os
import shutil
import types
from dataclasses import asdict
from pathlib import Path

import pytest
from typer.testing import CliRunner

from edgestats.cli import app
from edgestats.collectors import prepare as prep
from edgestats.collectors.core.runconfig import RunConfig
from edgestats.store.results import Store

runner = CliRunner()
CONFIG = RunConfig(framework="onnxruntime", model="cnn9")


@pytest.fixture
def stand_in(monkeypatch):
    """An adapter whose prepare() writes a model file (and its sidecar) the way the real ones do,
    skipping the file when the adapters' own check says it is there; counts its builds."""
    builds = []

    class Adapter:
        @classmethod
        def prepare(cls, config, cache_dir):
            target = Path(cache_dir) / f"{config.model}.onnx"
            if not (target.exists() and Path(f"{target}.meta.json").exists()):
                target.write_bytes(b"model bytes " * 1000)
                Path(f"{target}.meta.json").write_text("{}")
                builds.append(target)
            return target

    monkeypatch.setattr(prep, "runtime", lambda name: types.SimpleNamespace(adapter_class=lambda: Adapter))
    return builds


def test_a_hit_needs_an_intact_file(tmp_path, stand_in):
    artifact, cache = prep.prepare_cached(CONFIG, tmp_path)
    assert cache == "built" and stand_in == [artifact]
    entry = json.loads((artifact.parent / prep.MARKER).read_text())
    assert entry == {"format": 2, "artifact": "cnn9.onnx", "sha256": prep.content_sha256(artifact)}
    assert prep.cached_artifact(CONFIG, tmp_path) == (True, str(artifact))
    assert prep.prepare_cached(CONFIG, tmp_path) == (artifact, "hit") and len(stand_in) == 1


@pytest.mark.parametrize(
    "damage, why",
    [
        (lambda f: os.truncate(f, f.stat().st_size // 2), "does not match its SHA-256"),
        (
            lambda f: f.write_bytes(f.read_bytes().replace(b"model", b"MODEL", 1)),
            "does not match its SHA-256",
        ),
        (lambda f: f.unlink(), "is missing"),
        (lambda f: (f.parent / prep.MARKER).write_text('{"artifact": '), "is unreadable"),
    ],
)
def test_a_damaged_entry_is_rebuilt_and_says_why(damage, why, tmp_path, stand_in, capsys):
    artifact, _ = prep.prepare_cached(CONFIG, tmp_path)
    damage(artifact)
    assert prep.cached_artifact(CONFIG, tmp_path) == (False, None)
    rebuilt, cache = prep.prepare_cached(CONFIG, tmp_path)
    assert cache.startswith("rebuilt: ") and why in cache and len(stand_in) == 2
    assert f"edgestats: rebuilding the cached model in {artifact.parent}: " in capsys.readouterr().err
    assert prep.cached_artifact(CONFIG, tmp_path) == (True, str(rebuilt))


def test_an_older_absolute_entry_is_read_and_rebuilt(tmp_path, stand_in):
    """artifact.json of an older edgestats: {"artifact": ABSOLUTE PATH}, no hash."""
    artifact, _ = prep.prepare_cached(CONFIG, tmp_path)
    marker = artifact.parent / prep.MARKER
    marker.write_text(json.dumps({"artifact": str(artifact)}))
    assert prep.lookup(CONFIG, tmp_path) == (
        None,
        "artifact.json holds no content hash (written by an older edgestats)",
    )
    marker.write_text(json.dumps({"artifact": str(tmp_path / "elsewhere" / "gone.onnx")}))
    assert prep.cached_artifact(CONFIG, tmp_path) == (False, None)
    marker.write_text(
        json.dumps({"artifact": None})
    )  # a runtime that loads no prepared file: nothing to check
    assert prep.cached_artifact(CONFIG, tmp_path) == (True, None)
    marker.write_text(json.dumps({"artifact": str(artifact)}))
    _, cache = prep.prepare_cached(CONFIG, tmp_path)
    assert cache.startswith("rebuilt: ") and len(stand_in) == 2
    assert json.loads(marker.read_text())["artifact"] == "cnn9.onnx"


def test_a_copied_cache_works_from_its_new_place(tmp_path, stand_in):
    a, b = tmp_path / "a", tmp_path / "b"
    prep.prepare_cached(CONFIG, a)
    shutil.copytree(a, b)
    shutil.rmtree(a)
    hit, artifact = prep.cached_artifact(CONFIG, b)
    assert hit and Path(artifact).parent.parent == b and Path(artifact).is_file()
    assert prep.prepare_cached(CONFIG, b)[1] == "hit" and len(stand_in) == 1


def key_folder(cache: Path) -> Path:
    [folder] = [p for p in cache.iterdir() if (p / prep.MARKER).is_file()]
    return folder


def collect(db: Path, cache: Path) -> str:
    """One onnxruntime run of cnn9 through the CLI, ok; what it says of the model cache."""
    result = runner.invoke(
        app,
        [
            "collect",
            "--db",
            str(db),
            "--framework",
            "onnxruntime",
            "--model",
            "cnn9",
            "-n",
            "5",
            "--warmup",
            "1",
            "--cache-dir",
            str(cache),
        ],
    )
    assert result.exit_code == 0, result.output
    with Store.open(db, read_only=True) as store:
        [(status, error, cache_note)] = store.con.execute(
            "SELECT status, error_text, environment->>'$.model_cache' FROM runs"
        ).fetchall()
    assert status == "ok", error
    return cache_note


@pytest.mark.frameworks
def test_a_truncated_model_file_is_rebuilt_and_a_copied_cache_is_used(tmp_path, model_cache):
    a, b = tmp_path / "a", tmp_path / "b"
    for runtime in (None, "onnxruntime"):  # reuse the session's prepared cnn9 when a test already made it
        key = prep.cache_key(RunConfig(**{**asdict(CONFIG), "runtime": runtime}))
        if (model_cache / key / prep.MARKER).is_file():
            shutil.copytree(model_cache / key, a / key)
    collect(tmp_path / "first.duckdb", a)  # prepares into A, unless copied from the session's cache
    shutil.copytree(a, b)
    shutil.rmtree(a)
    folder = key_folder(b)
    artifact = folder / json.loads((folder / prep.MARKER).read_text())["artifact"]
    stamp = (artifact.stat().st_mtime_ns, (folder / prep.MARKER).stat().st_mtime_ns)
    assert collect(tmp_path / "from_b.duckdb", b) == "hit"  # the copied cache: nothing rebuilt
    assert (artifact.stat().st_mtime_ns, (folder / prep.MARKER).stat().st_mtime_ns) == stamp
    size = artifact.stat().st_size
    os.truncate(artifact, size // 2)
    note = collect(
        tmp_path / "after_truncation.duckdb", b
    )  # the run's prepare rebuilds it, and the run is ok
    assert note.startswith("rebuilt: "), note
    assert artifact.stat().st_size == size
    assert json.loads((folder / prep.MARKER).read_text())["sha256"] == prep.content_sha256(artifact)
