"""Synthetic training datasets written in the real on-disk formats (`edgestats dataset make`).

Nothing to download: class c is a sinusoidal grating at orientation c*180/K degrees with a random
phase and frequency jitter, plus noise (and, in colour, a class-dependent tint), so a small CNN
beats chance within an epoch. The byte layouts are those `edgestats.collectors.training.datasets` reads
(and documents): MNIST IDX, CIFAR-10 binary, an image folder of JPEGs.
"""

from __future__ import annotations

import json
import os
import struct
from pathlib import Path
from typing import Any

from edgestats.collectors.training.datasets import (
    CIFAR_CLASSES,
    CIFAR_TEST_FILE,
    CIFAR_TRAIN_FILES,
    FORMATS,
    IDX_UBYTE,
    MARKER,
    MNIST_FILES,
    DatasetError,
)

DEFAULT_SIZE = {"mnist": (28, 28), "cifar10": (32, 32), "imagefolder": (600, 800)}  # (H, W)
SCALES = (0.25, 1.0, 4.0)


def parse_size(text: str) -> tuple[int, int]:
    """'800x600' (width x height, as image sizes are written) -> (height, width)."""
    try:
        w, h = (int(v) for v in text.lower().split("x"))
    except ValueError:
        raise DatasetError(f"--size {text!r}: expected WIDTHxHEIGHT, e.g. 800x600") from None
    if w < 8 or h < 8:
        raise DatasetError(f"--size {text!r}: images must be at least 8x8")
    return h, w


def synthetic_image(rng: Any, label: int, num_classes: int, hw: tuple[int, int], channels: int) -> Any:
    """A uint8 (H, W) or (H, W, 3) image of class `label`: a grating whose orientation is the class,
    with a random phase and +-15 % frequency, in noise; in colour also a class tint."""
    import numpy as np

    h, w = hw
    angle = np.pi * label / num_classes + rng.uniform(-0.1, 0.1) * np.pi / num_classes
    cycles = 3.0 * rng.uniform(0.85, 1.15)  # per image side: survives resizing to 28 px
    yy, xx = np.mgrid[0:h, 0:w].astype(np.float32)
    u = (xx / w) * np.cos(angle) + (yy / h) * np.sin(angle)
    wave = np.sin(2 * np.pi * cycles * u + rng.uniform(0, 2 * np.pi)).astype(np.float32)
    if channels == 1:
        img = 0.5 + 0.3 * wave + rng.normal(0, 0.12, (h, w)).astype(np.float32)
    else:
        hue = 2 * np.pi * label / num_classes
        tint = 0.5 + 0.15 * np.cos(hue + np.array([0, 2.094, 4.189], np.float32))
        img = tint + 0.3 * wave[:, :, None] + rng.normal(0, 0.12, (h, w, 3)).astype(np.float32)
    return (np.clip(img, 0, 1) * 255).astype(np.uint8)


def make_dataset(
    fmt: str,
    out: str | Path,
    n: int,
    *,
    n_test: int | None = None,
    size: tuple[int, int] | None = None,
    scale: float = 1.0,
    num_classes: int = 10,
    seed: int = 0,
    jpeg_quality: int = 90,
) -> dict[str, Any]:
    """Write a learnable synthetic dataset in `fmt` to `out` (created; must be empty or new).

    n training samples (times `scale`), n_test held-out ones (default n // 5, at least 10), images
    of `size` (H, W). Returns what it wrote (also stored as EDGESTATS_DATASET.json)."""
    if fmt not in FORMATS:
        raise DatasetError(f"--format {fmt!r}: use one of {', '.join(FORMATS)}")
    if scale <= 0:
        raise DatasetError(f"--scale {scale}: must be positive (e.g. 0.25, 1, 4)")
    n_train = max(1, round(n * scale))
    n_held = max(10, round((n_test if n_test is not None else n // 5) * scale))
    hw = size or DEFAULT_SIZE[fmt]
    if fmt == "cifar10" and hw != (32, 32):
        raise DatasetError("--size: CIFAR-10 binary records are always 32x32; leave --size out")
    if fmt != "imagefolder" and num_classes != 10:
        raise DatasetError(
            f"--classes: {fmt} labels are the digits 0-9; only imagefolder takes another class count"
        )
    if num_classes < 2:
        raise DatasetError("--classes: at least 2")
    out = Path(out)
    if out.exists() and any(out.iterdir()):
        raise DatasetError(f"--out {str(out)!r} is not empty; give a new or empty directory")
    out.mkdir(parents=True, exist_ok=True)
    import numpy as np

    rng = np.random.default_rng(seed)
    writer = {"mnist": _write_mnist, "cifar10": _write_cifar10, "imagefolder": _write_imagefolder}[fmt]
    for split, count in (("train", n_train), ("test", n_held)):
        labels = np.arange(count) % num_classes  # balanced classes, then shuffled
        rng.shuffle(labels)
        writer(out, split, labels, rng, hw, num_classes, jpeg_quality)
    record = {
        "format": fmt,
        "synthetic": "gratings: orientation = class",
        "n_train": n_train,
        "n_test": n_held,
        "height": hw[0],
        "width": hw[1],
        "num_classes": num_classes,
        "seed": seed,
        "scale": scale,
    }
    (out / MARKER).write_text(json.dumps(record, indent=1) + "\n")
    _sync_dir(out)
    return record


def idx_bytes(array: Any) -> bytes:
    """An unsigned-byte numpy array as an IDX file: magic, big-endian dimensions, data."""
    header = struct.pack(">HBB", 0, IDX_UBYTE, array.ndim) + struct.pack(f">{array.ndim}I", *array.shape)
    return header + array.astype("uint8").tobytes(order="C")


def cifar_record(image_hwc: Any, label: int) -> bytes:
    """One CIFAR-10 binary record: the label byte, then the R, G and B planes (row-major)."""
    return bytes([label]) + image_hwc.transpose(2, 0, 1).astype("uint8").tobytes(order="C")


def _write_mnist(out: Path, split: str, labels: Any, rng: Any, hw: tuple[int, int], k: int, _q: int) -> None:
    import numpy as np

    images = np.stack([synthetic_image(rng, int(c), k, hw, 1) for c in labels])
    images_name, labels_name = MNIST_FILES[split]
    _write_file(out / images_name, idx_bytes(images))
    _write_file(out / labels_name, idx_bytes(labels.astype(np.uint8)))


def _write_cifar10(
    out: Path, split: str, labels: Any, rng: Any, hw: tuple[int, int], k: int, _q: int
) -> None:
    folder = out / "cifar-10-batches-bin"
    folder.mkdir(exist_ok=True)
    records = [cifar_record(synthetic_image(rng, int(c), k, hw, 3), int(c)) for c in labels]
    if split == "test":
        _write_file(folder / CIFAR_TEST_FILE, b"".join(records))
        return
    per_file = -(-len(records) // len(CIFAR_TRAIN_FILES))  # five batches, as the real set
    for j, name in enumerate(CIFAR_TRAIN_FILES):
        chunk = records[j * per_file : (j + 1) * per_file]
        if chunk:
            _write_file(folder / name, b"".join(chunk))
    (folder / "batches.meta.txt").write_text("\n".join(CIFAR_CLASSES) + "\n")


def _write_imagefolder(
    out: Path, split: str, labels: Any, rng: Any, hw: tuple[int, int], k: int, quality: int
) -> None:
    from PIL import Image

    width = len(str(k - 1))
    for j, c in enumerate(labels):
        folder = out / split / f"class_{int(c):0{width}d}"
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"{j:06d}.jpg"
        Image.fromarray(synthetic_image(rng, int(c), k, hw, 3)).save(path, "JPEG", quality=quality)


def _write_file(path: Path, data: bytes) -> None:
    path.write_bytes(data)


def _sync_dir(out: Path) -> None:
    """Flush what was written, so that evicting it from the page cache (posix_fadvise DONTNEED,
    which skips dirty pages) works right after the dataset is made."""
    for path in out.rglob("*"):
        if path.is_file():
            fd = os.open(path, os.O_RDONLY)
            try:
                os.fdatasync(fd)
            finally:
                os.close(fd)
