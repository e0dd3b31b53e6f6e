"""Dataset readers against the real byte layouts, the generator, preprocessing, page cache, storage.

The layouts are checked byte by byte against the format specs, independently of the writer:
IDX (magic 0x00000803 / 0x00000801, big-endian u32 dimensions, then unsigned bytes) and CIFAR-10
binary (1 label byte + 3072 pixel bytes: the R plane, then G, then B, each 32x32 row-major).
"""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np
import pytest
from PIL import Image
from typer.testing import CliRunner

from edgestats.cli import app
from edgestats.collectors.training import datasets as ds
from edgestats.collectors.training import pagecache
from edgestats.collectors.training import preprocess as pp
from edgestats.collectors.training import synthetic as dataset_make

runner = CliRunner()


# -- hand-written files in the real formats ---------------------------------------------------------


def write_idx_by_hand(folder: Path, split: str, images: np.ndarray, labels: np.ndarray) -> None:
    images_name, labels_name = ds.MNIST_FILES[split]
    n, rows, cols = images.shape
    (folder / images_name).write_bytes(
        b"\x00\x00\x08\x03" + struct.pack(">III", n, rows, cols) + images.tobytes()
    )
    (folder / labels_name).write_bytes(
        b"\x00\x00\x08\x01" + struct.pack(">I", n) + labels.astype(np.uint8).tobytes()
    )


def mnist_by_hand(folder: Path, n: int = 6) -> tuple[np.ndarray, np.ndarray]:
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(3)
    images = rng.integers(0, 256, (n, 28, 28), dtype=np.uint8)
    labels = np.arange(n) % 10
    write_idx_by_hand(folder, "train", images, labels)
    write_idx_by_hand(folder, "test", images[:3], labels[:3])
    return images, labels


def cifar_by_hand(folder: Path) -> list[tuple[int, np.ndarray]]:
    """Two records: planes filled so every channel and position is distinguishable."""
    folder.mkdir(parents=True, exist_ok=True)
    records = []
    for label in (7, 2):
        r = np.full((32, 32), 10 + label, np.uint8)
        g = np.full((32, 32), 100 + label, np.uint8)
        b = np.arange(32 * 32, dtype=np.uint32).reshape(32, 32).astype(np.uint8)  # row-major ramp
        records.append((label, np.stack([r, g, b], axis=-1)))
    raw = b"".join(
        bytes([label]) + img[:, :, 0].tobytes() + img[:, :, 1].tobytes() + img[:, :, 2].tobytes()
        for label, img in records
    )
    (folder / "data_batch_1.bin").write_bytes(raw)
    (folder / "test_batch.bin").write_bytes(raw[: ds.CIFAR_RECORD_BYTES])
    return records


def test_mnist_idx_written_by_hand_reads_back(tmp_path):
    images, labels = mnist_by_hand(tmp_path / "m")
    data = ds.open_dataset(tmp_path / "m")
    assert (data.format, data.train.n, data.test.n, data.image_hw, data.channels) == (
        "mnist",
        6,
        3,
        (28, 28),
        1,
    )
    for i in range(6):
        pixels, label = data.train.raw(i)
        assert label == labels[i] and np.array_equal(pixels, images[i])


def test_cifar10_binary_written_by_hand_reads_back(tmp_path):
    records = cifar_by_hand(tmp_path / "c" / "cifar-10-batches-bin")
    data = ds.open_dataset(tmp_path / "c")  # the parent of cifar-10-batches-bin works too
    assert (data.format, data.train.n, data.test.n, data.num_classes) == ("cifar10", 2, 1, 10)
    for i, (label, image) in enumerate(records):
        pixels, got = data.train.raw(i)
        assert got == label and pixels.shape == (32, 32, 3)
        assert np.array_equal(pixels, image)
    assert data.train.raw(0)[0][0, 5, 2] == 5 and data.train.raw(0)[0][1, 0, 2] == 32  # B ramp, row-major


def test_generated_mnist_follows_the_idx_spec(tmp_path):
    record = dataset_make.make_dataset("mnist", tmp_path / "m", 40, n_test=10, size=(20, 24), seed=1)
    assert (record["n_train"], record["n_test"]) == (40, 10)
    raw = (tmp_path / "m" / "train-images-idx3-ubyte").read_bytes()
    assert raw[:4] == bytes([0, 0, 0x08, 0x03])
    assert struct.unpack(">III", raw[4:16]) == (40, 20, 24)  # count, rows (H), cols (W)
    assert len(raw) == 16 + 40 * 20 * 24
    labels = (tmp_path / "m" / "train-labels-idx1-ubyte").read_bytes()
    assert labels[:4] == bytes([0, 0, 0x08, 0x01]) and struct.unpack(">I", labels[4:8]) == (40,)
    assert sorted(np.bincount(np.frombuffer(labels[8:], np.uint8))) == [4] * 10  # balanced
    data = ds.open_dataset(tmp_path / "m")
    first, label = data.train.raw(0)
    assert (
        np.array_equal(first, np.frombuffer(raw[16 : 16 + 480], np.uint8).reshape(20, 24))
        and label == labels[8]
    )


def test_generated_cifar10_follows_the_binary_spec(tmp_path):
    dataset_make.make_dataset("cifar10", tmp_path / "c", 25, n_test=10)
    folder = tmp_path / "c" / "cifar-10-batches-bin"
    sizes = [(folder / n).stat().st_size for n in ds.CIFAR_TRAIN_FILES]
    assert sizes == [5 * 3073] * 5 and (folder / "test_batch.bin").stat().st_size == 10 * 3073
    raw = (folder / "data_batch_1.bin").read_bytes()
    data = ds.open_dataset(tmp_path / "c")
    pixels, label = data.train.raw(0)
    assert raw[0] == label < 10
    assert np.array_equal(np.frombuffer(raw[1:1025], np.uint8).reshape(32, 32), pixels[:, :, 0])  # R plane
    assert np.array_equal(np.frombuffer(raw[2049:3073], np.uint8).reshape(32, 32), pixels[:, :, 2])  # B plane
    assert data.train.raw(7)[1] == (folder / "data_batch_2.bin").read_bytes()[2 * 3073]  # across files
    assert (folder / "batches.meta.txt").read_text().split() == list(ds.CIFAR_CLASSES)


def test_generated_imagefolder_and_the_holdout_layout(tmp_path):
    dataset_make.make_dataset("imagefolder", tmp_path / "i", 12, n_test=10, size=(48, 64), num_classes=3)
    data = ds.open_dataset(tmp_path / "i")
    assert (data.format, data.num_classes, data.train.n, data.test.n) == ("imagefolder", 3, 12, 10)
    path, label = data.train.raw(0)
    assert path.suffix == ".jpg" and path.parent.name == f"class_{label}"
    with Image.open(path) as img:
        assert (img.format, img.size) == ("JPEG", (64, 48))  # --size is WxH
    flat = tmp_path / "flat"
    for c in ("cat", "dog"):
        (flat / c).mkdir(parents=True)
        for k in range(5):
            Image.new("RGB", (8, 8), (k, 0, 0)).save(flat / c / f"{k}.png")
    data = ds.open_dataset(flat)
    assert (data.train.n, data.test.n) == (8, 2)  # every fifth file held out
    assert {data.test.raw(i)[1] for i in range(2)} == {0, 1}


# -- truncated and corrupt files ----------------------------------------------------------------------


def test_truncated_idx_images_is_a_clear_error(tmp_path):
    mnist_by_hand(tmp_path / "m")
    path = tmp_path / "m" / "train-images-idx3-ubyte"
    path.write_bytes(path.read_bytes()[:-100])
    with pytest.raises(
        ds.DatasetFormatError,
        match=r"train-images-idx3-ubyte: truncated: dimensions 6x28x28 need 4720 bytes, the file has 4620",
    ):
        ds.open_dataset(tmp_path / "m")


def test_idx_with_a_wrong_magic_or_a_short_header_is_a_clear_error(tmp_path):
    mnist_by_hand(tmp_path / "m")
    labels = tmp_path / "m" / "train-labels-idx1-ubyte"
    good = labels.read_bytes()
    labels.write_bytes(b"\x1f\x8b\x08\x00" + good[4:])  # what a gzipped download starts with
    with pytest.raises(ds.DatasetFormatError, match="magic 0x1f8b0800, expected 0x00000801.*gunzipped"):
        ds.open_dataset(tmp_path / "m")
    labels.write_bytes(good[:6])
    with pytest.raises(ds.DatasetFormatError, match="truncated IDX header"):
        ds.open_dataset(tmp_path / "m")
    labels.write_bytes(b"\x00\x00\x08\x01" + struct.pack(">I", 5) + bytes(5))
    with pytest.raises(ds.DatasetFormatError, match="5 labels for 6 images"):
        ds.open_dataset(tmp_path / "m")


def test_idx_label_out_of_range_is_a_clear_error(tmp_path):
    images, labels = mnist_by_hand(tmp_path / "m")
    labels[2] = 11
    write_idx_by_hand(tmp_path / "m", "train", images, labels)
    data = ds.open_dataset(tmp_path / "m")
    with pytest.raises(ds.DatasetFormatError, match="label 11 of sample 2 is not a digit"):
        data.train.raw(2)


def test_truncated_or_corrupt_cifar_is_a_clear_error(tmp_path):
    cifar_by_hand(tmp_path / "c")
    batch = tmp_path / "c" / "data_batch_1.bin"
    good = batch.read_bytes()
    batch.write_bytes(good[:-1])
    with pytest.raises(ds.DatasetFormatError, match="6145 bytes is not a whole number of CIFAR-10 records"):
        ds.open_dataset(tmp_path / "c")
    batch.write_bytes(bytes([99]) + good[1:])
    data = ds.open_dataset(tmp_path / "c")
    with pytest.raises(ds.DatasetFormatError, match="record 0 has label byte 99"):
        data.train.raw(0)


def test_corrupt_jpeg_is_a_clear_error_naming_the_file(tmp_path):
    dataset_make.make_dataset("imagefolder", tmp_path / "i", 4, n_test=10, size=(32, 32), num_classes=2)
    data = ds.open_dataset(tmp_path / "i")
    path, _ = data.train.raw(1)
    path.write_bytes(path.read_bytes()[:200])  # truncated mid-scan
    pre = pp.Preprocess((32, 32), 3, "NCHW")
    with pytest.raises(ds.DatasetFormatError, match=rf"{path.name}: cannot be decoded as an image"):
        pp.load_batch(data.train, [0, 1], pre)


def test_missing_or_unknown_data_directories(tmp_path):
    with pytest.raises(
        ds.DatasetNotFoundError, match="does not exist; make a dataset with `edgestats dataset make"
    ):
        ds.open_dataset(tmp_path / "nope")
    (tmp_path / "empty").mkdir()
    with pytest.raises(ds.DatasetNotFoundError, match="holds no dataset edgestats reads: expected MNIST IDX"):
        ds.open_dataset(tmp_path / "empty")
    mnist_by_hand(tmp_path / "m")
    (tmp_path / "m" / "t10k-labels-idx1-ubyte").unlink()
    with pytest.raises(ds.DatasetNotFoundError, match="t10k-labels-idx1-ubyte: missing"):
        ds.open_dataset(tmp_path / "m")


# -- preprocessing and the generator --------------------------------------------------------------------


def test_preprocess_converts_any_format_to_any_model_input(tmp_path):
    images, _ = mnist_by_hand(tmp_path / "m")
    grey = images[0]
    rgb_nchw = pp.Preprocess((32, 32), 3, "NCHW")(grey)
    assert rgb_nchw.shape == (3, 32, 32) and rgb_nchw.dtype == np.float32
    assert np.array_equal(rgb_nchw[0], rgb_nchw[2])  # grey -> RGB repeats the channel
    assert -1.0 <= rgb_nchw.min() and rgb_nchw.max() <= 1.0
    same = pp.Preprocess((28, 28), 1, "NHWC")(grey)
    assert same.shape == (28, 28, 1) and np.allclose(same[:, :, 0], grey / 127.5 - 1.0, atol=1e-6)


def test_generator_scale_size_and_refusals(tmp_path):
    assert dataset_make.make_dataset("mnist", tmp_path / "a", 100, scale=0.25)["n_train"] == 25
    assert dataset_make.make_dataset("mnist", tmp_path / "b", 100, scale=4)["n_test"] == 80
    with pytest.raises(ds.DatasetError, match="not empty"):
        dataset_make.make_dataset("mnist", tmp_path / "a", 10)
    with pytest.raises(ds.DatasetError, match="always 32x32"):
        dataset_make.make_dataset("cifar10", tmp_path / "c", 10, size=(64, 64))
    with pytest.raises(ds.DatasetError, match="WIDTHxHEIGHT"):
        dataset_make.parse_size("800by600")
    assert dataset_make.parse_size("800x600") == (600, 800)


def test_generated_classes_are_learnable(tmp_path):
    """The synthetic task carries its label: a nearest-centroid classifier on the pixels' 2-D
    spectrum (phase-free orientation energy) beats chance (10 %) by far."""
    dataset_make.make_dataset("mnist", tmp_path / "m", 400, n_test=100)
    data = ds.open_dataset(tmp_path / "m")

    def features(split):
        xs = np.stack([split.raw(i)[0] for i in range(split.n)]).astype(np.float32)
        ys = np.array([split.raw(i)[1] for i in range(split.n)])
        spectrum = np.abs(np.fft.fft2(xs - xs.mean(axis=(1, 2), keepdims=True)))
        return spectrum.reshape(len(xs), -1), ys

    x, y = features(data.train)
    centroids = np.stack([x[y == c].mean(axis=0) for c in range(10)])
    xt, yt = features(data.test)
    predicted = np.argmin(((xt[:, None, :] - centroids[None]) ** 2).sum(-1), axis=1)
    assert (predicted == yt).mean() > 0.5


def test_dataset_make_command(tmp_path):
    out = tmp_path / "jpegs"
    result = runner.invoke(
        app,
        [
            "dataset",
            "make",
            "--format",
            "imagefolder",
            "--out",
            str(out),
            "--n",
            "6",
            "--n-test",
            "10",
            "--size",
            "80x60",
            "--classes",
            "2",
        ],
    )
    assert result.exit_code == 0, result.output
    assert "imagefolder" in result.output and "6 training" in result.output
    assert ds.open_dataset(out).train.n == 6
    bad = runner.invoke(
        app,
        [
            "dataset",
            "make",
            "--format",
            "cifar10",
            "--out",
            str(tmp_path / "c"),
            "--n",
            "5",
            "--size",
            "64x64",
        ],
    )
    assert bad.exit_code == 1 and "always 32x32" in bad.output


# -- page cache and storage ------------------------------------------------------------------------------


def test_eviction_and_residency_of_a_dataset(tmp_path):
    dataset_make.make_dataset("imagefolder", tmp_path / "i", 20, n_test=10, size=(120, 160), num_classes=2)
    files = ds.open_dataset(tmp_path / "i").files
    pagecache.evict(files)
    assert pagecache.residency(files) < 0.05
    for f in files[:15]:
        f.read_bytes()
    assert 0.3 < pagecache.residency(files) < 0.7
    for f in files:
        f.read_bytes()
    assert pagecache.residency(files) > 0.95
    assert pagecache.residency([]) is None


def test_mountinfo_parsing_picks_the_deepest_mount():
    text = (
        "22 1 254:0 / / rw,relatime - ext4 /dev/vda rw\n"
        "30 22 0:27 / /data rw - xfs /dev/sdb1 rw\n"
        "31 30 0:28 / /data/with\\040space rw - tmpfs tmpfs rw\n"
    )
    mounts = pagecache.parse_mountinfo(text)
    assert [m["mount_point"] for m in mounts] == ["/", "/data", "/data/with space"]
    assert pagecache.mount_of("/data/x/y", mounts)["source"] == "/dev/sdb1"
    assert pagecache.mount_of("/data/with space/z", mounts)["fstype"] == "tmpfs"
    assert pagecache.mount_of("/database", mounts)["fstype"] == "ext4"  # a prefix of the name is not a parent


def test_storage_of_a_real_directory(tmp_path):
    info = pagecache.storage_of(tmp_path)
    assert info["storage"] == f"{info['fstype']}:{info['source']}" and info["mount_point"]
