"""User model files (ONNX, TFLite, TorchScript, state dicts, Keras, SavedModel, OpenVINO IR) and
input images, driven in-process through the worker's phases like the zoo models in test_adapters.

A bad file must fail in load_model, not in prepare, so the run is stored as an error with its
phase; the tests that load a framework carry the `frameworks` marker (no skips).
Cost: about 10 s of test time in make test's parallel lane (measured from a fresh clone on 2 cores).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest
from adapter_builders import CNN9_PARAMS, adapter_class, config, run_phases

from edgestats.collectors.adapters.inputs import InputImageError, ModelFileError, load_image
from edgestats.errors import EdgestatsError

# Shares the adapters' xdist worker: the framework imports are paid once per worker.
pytestmark = pytest.mark.xdist_group("adapters")


@pytest.fixture(scope="module")
def cache(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("artifacts")


# -- inputs ----------------------------------------------------------------------------------------


def write_jpeg(path: Path, size=(48, 40), color=(200, 30, 90)) -> Path:
    from PIL import Image

    Image.new("RGB", size, color).save(path, "JPEG", quality=95)
    return path


def test_load_image_decodes_resizes_and_normalises(tmp_path):
    jpeg = write_jpeg(tmp_path / "cat.jpg")
    nchw = load_image(jpeg, (32, 32), "NCHW", batch_size=3)
    nhwc = load_image(jpeg, (24, 20), "NHWC")
    assert nchw.shape == (3, 3, 32, 32) and nchw.dtype == np.float32
    assert nhwc.shape == (1, 24, 20, 3) and nhwc.dtype == np.float32
    red = (200 / 255 - 0.485) / 0.229  # a flat colour stays flat; JPEG moves it a little
    assert abs(float(nchw[0, 0].mean()) - red) < 0.05
    np.testing.assert_array_equal(nchw[0], nchw[2])


@pytest.mark.frameworks
@pytest.mark.parametrize("framework", ["onnxruntime", "tflite"])
def test_input_image_is_fed_to_the_model(framework, tmp_path, cache):
    jpeg = write_jpeg(tmp_path / "dog.jpg", size=(300, 200))
    adapter, _, _, out1, _ = run_phases(config(framework, input=str(jpeg), batch_size=3), cache)
    batch = np.asarray(adapter.load_input())
    assert batch.shape == ((3, 3, 32, 32) if framework == "onnxruntime" else (3, 32, 32, 3))
    assert out1.shape == (3, 10)


@pytest.mark.frameworks
def test_unreadable_image_is_a_clear_error(tmp_path, cache):
    junk = tmp_path / "junk.jpg"
    junk.write_bytes(b"this is not a jpeg")
    with pytest.raises(InputImageError, match="junk.jpg.*cannot be decoded"):
        load_image(junk, (32, 32), "NCHW")
    with pytest.raises(InputImageError, match="does not exist"):
        load_image(tmp_path / "missing.png", (32, 32), "NHWC")
    assert issubclass(InputImageError, EdgestatsError)
    cfg = config("onnxruntime", input=str(junk))
    with pytest.raises(InputImageError):
        run_phases(cfg, cache)


# -- user model files -----------------------------------------------------------------------------


@pytest.mark.frameworks
def test_user_onnx_file_has_its_initializers_counted(tmp_path, cache):
    exported = adapter_class("onnxruntime").prepare(config("onnxruntime", batch_size=1), cache)
    mine = shutil.copy(exported, tmp_path / "mine.onnx")
    cfg = config("onnxruntime", model=str(mine))
    adapter, _, info, out, _ = run_phases(cfg, tmp_path / "cache")
    assert info.params == CNN9_PARAMS and info.flops is None and out.shape == (2, 10)
    assert info.input_shape == (3, 32, 32)


@pytest.mark.frameworks
def test_user_tflite_file_takes_its_input_shape_from_the_model(tmp_path, cache):
    converted = adapter_class("tflite").prepare(config("tflite"), cache)
    mine = shutil.copy(converted, tmp_path / "mine.tflite")
    adapter, _, info, out, _ = run_phases(config("tflite", model=str(mine), batch_size=4), tmp_path)
    assert info.params is None and info.input_shape == (32, 32, 3) and out.shape == (4, 10)


@pytest.mark.frameworks
def test_user_torch_files(tmp_path, cache):
    import torch

    scripted = adapter_class("pytorch").prepare(config("pytorch", "torchscript"), cache)
    mine = shutil.copy(scripted, tmp_path / "mine.pt")
    cls = adapter_class("pytorch")
    with pytest.raises(ModelFileError, match="input_shape"):  # TorchScript carries no input shape
        run_phases(config("pytorch", model=str(mine)), tmp_path)
    _, _, info, out, _ = run_phases(
        config("pytorch", model=str(mine), extra={"input_shape": [3, 32, 32]}), tmp_path
    )
    assert info.params == CNN9_PARAMS and out.shape == (2, 10)
    weights = tmp_path / "weights.pth"
    from edgestats.collectors.zoo.torch_models import build_torch

    torch.save(build_torch("cnn9", seed=3).state_dict(), weights)
    with pytest.raises(ModelFileError, match="architecture"):
        run_phases(config("pytorch", model=str(weights)), tmp_path)
    _, _, info, out, _ = run_phases(
        config("pytorch", model=str(weights), extra={"architecture": "cnn9"}), tmp_path
    )
    assert info.params == CNN9_PARAMS and out.shape == (2, 10)
    notes = tmp_path / "notes.txt"
    notes.write_text("not a model")
    assert "notes.txt" in cls.check_config(config("pytorch", model=str(notes)))


@pytest.mark.frameworks
@pytest.mark.parametrize(
    "framework,suffix",
    [
        ("onnxruntime", ".onnx"),
        ("tflite", ".tflite"),
        ("openvino", ".xml"),
        ("ncnn", ".param"),
        ("mnn", ".mnn"),
        ("executorch", ".pte"),
    ],
)
def test_broken_model_file_fails_in_load_model_not_prepare(framework, suffix, tmp_path):
    """prepare() must not die on a bad user file: the worker's load_model reports it, so the run
    is stored as an error with its import phase."""
    bad = tmp_path / f"broken{suffix}"
    bad.write_bytes(b"this is not a model")
    cfg = config(framework, model=str(bad))
    cls = adapter_class(framework)
    adapter = cls(cfg, cls.prepare(cfg, tmp_path / "cache"))
    adapter.import_framework()
    with pytest.raises(ModelFileError, match="broken"):
        adapter.load_model()


@pytest.mark.frameworks
def test_user_openvino_ir_and_onnx_files_run(tmp_path, cache):
    """A user's IR pair (copied out of the cache, as a user would bring one) and a user's .onnx
    file both run as they are: nothing is converted or copied into the cache for them."""
    xml = adapter_class("openvino").prepare(config("openvino"), cache)
    for part in (xml, xml.with_suffix(".bin")):
        shutil.copy(part, tmp_path / part.name.replace("cnn9-seed0.fp32.openvino", "mine"))
    onnx_file = adapter_class("onnxruntime").prepare(config("onnxruntime"), cache)
    for model in (tmp_path / "mine.xml", shutil.copy(onnx_file, tmp_path / "mine.onnx")):
        cfg = config("openvino", model=str(model))
        assert adapter_class("openvino").prepare(cfg, tmp_path / "cache") is None
        _, _, info, out, _ = run_phases(cfg, tmp_path / "cache")
        assert info.file == str(model) and info.input_shape == (3, 32, 32) and out.shape == (2, 10)


@pytest.mark.frameworks
def test_torch_runtime_follows_a_user_file_unless_asked(tmp_path, cache):
    scripted = adapter_class("pytorch").prepare(config("pytorch", "torchscript"), cache)
    mine = shutil.copy(scripted, tmp_path / "mine.pt")
    cls = adapter_class("pytorch")
    assert cls(config("pytorch", model=str(mine))).runtime == "torchscript"
    adapter = cls(config("pytorch", "torch-eager", model=str(mine), extra={"input_shape": [3, 32, 32]}))
    adapter.import_framework()
    with pytest.raises(ModelFileError, match="--runtime torchscript"):
        adapter.load_model()


@pytest.mark.frameworks
def test_user_keras_file_and_savedmodel(tmp_path, cache):
    saved = adapter_class("tensorflow").prepare(config("tensorflow"), cache)
    mine = shutil.copy(saved, tmp_path / "mine.keras")
    _, _, info, out, _ = run_phases(config("tensorflow", model=str(mine), batch_size=3), tmp_path / "c1")
    assert info.params == CNN9_PARAMS and out.shape == (3, 10)
    import tensorflow as tf

    from edgestats.collectors.zoo.keras_models import build_keras

    folder = tmp_path / "savedmodel"
    tf.saved_model.save(build_keras("cnn9", seed=1), str(folder))
    _, _, info, out, _ = run_phases(config("tensorflow", model=str(folder), batch_size=2), tmp_path / "c2")
    assert out.shape == (2, 10)
