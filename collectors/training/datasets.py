"""Training datasets in their real on-disk formats, read without downloads.

Three formats, each pointed at by `--data DIR`:

  mnist        IDX files (LeCun's format): train-images-idx3-ubyte, train-labels-idx1-ubyte,
               t10k-images-idx3-ubyte, t10k-labels-idx1-ubyte. Header: magic (big-endian u32:
               0x00000803 for images, 0x00000801 for labels: two zero bytes, type 0x08 = unsigned
               byte, number of dimensions), then one big-endian u32 per dimension, then the bytes.
  cifar10      CIFAR-10 binary (seed 004): data_batch_1.bin .. data_batch_5.bin and test_batch.bin,
               in DIR or DIR/cifar-10-batches-bin; each record is 1 label byte + 3072 pixel bytes,
               the R plane, then G, then B, each 32x32 row-major.
  imagefolder  DIR/train/<class>/<file>.jpg and DIR/test/<class>/<file>.jpg; or DIR/<class>/<file>
               with every fifth file (sorted by name) held out for testing.

The IDX and CIFAR files are memory-mapped, not loaded: a sample's bytes are read from the page
cache (or the disk) when a batch is fetched, as an image folder's files are, so the data
pipeline's fetch time and the page-cache residency mean the same thing for every format.

Preprocessing (preprocess.py) decodes a sample, converts it to the model's channels (grey or
RGB), resizes it to the model's input (bilinear) and normalises it to [-1, 1], so any zoo model
trains on any format.

`edgestats.collectors.training.synthetic` writes a learnable synthetic dataset in each format.

numpy is imported inside the functions (Pillow too, in preprocess.py): the training worker
imports this module before its framework, and its import phase must be the framework's alone.
"""

from __future__ import annotations

import bisect
import json
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from edgestats.contracts import dataset_name
from edgestats.errors import EdgestatsError

FORMATS = ("mnist", "cifar10", "imagefolder")
IDX_UBYTE = 0x08
IDX_IMAGES_MAGIC = 0x00000803  # unsigned byte, 3 dimensions (count, rows, cols)
IDX_LABELS_MAGIC = 0x00000801  # unsigned byte, 1 dimension (count)
MNIST_FILES = {
    "train": ("train-images-idx3-ubyte", "train-labels-idx1-ubyte"),
    "test": ("t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"),
}
CIFAR_SIDE = 32
CIFAR_PIXELS = 3 * CIFAR_SIDE * CIFAR_SIDE  # 3072: R plane, G plane, B plane
CIFAR_RECORD_BYTES = 1 + CIFAR_PIXELS  # 3073
CIFAR_TRAIN_FILES = tuple(f"data_batch_{i}.bin" for i in range(1, 6))
CIFAR_TEST_FILE = "test_batch.bin"
CIFAR_CLASSES = ("airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck")
IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png", ".bmp", ".ppm")
HOLDOUT_EVERY = 5  # an image folder without test/: every fifth file is held out
MARKER = "EDGESTATS_DATASET.json"  # written by make_dataset: how the synthetic set was made


class DatasetError(EdgestatsError):
    """A --data directory that cannot be used: missing, of no known format, truncated or corrupt."""


class DatasetNotFoundError(DatasetError):
    """--data names nothing, or a directory holding no dataset edgestats reads."""


class DatasetFormatError(DatasetError):
    """A dataset file whose bytes do not follow its format (bad magic, truncated, bad label)."""


# -- the sample stores ------------------------------------------------------------------------------


class Split:
    """One split (train or test) of n samples; `raw(i)` -> (sample, label), where a sample is a
    uint8 numpy array (H, W) or (H, W, 3), or the path of an image file.

    Picklable (memory maps are reopened lazily in each process), so DataLoader workers started
    with spawn or forkserver get their own copy, as forked ones do."""

    def __init__(self, n: int, files: list[Path]):
        self.n = n
        self.files = list(files)
        self._maps: dict[Any, Any] = {}

    def raw(self, i: int) -> tuple[Any, int]:
        raise NotImplementedError

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_maps": {}}


@dataclass
class Dataset:
    format: str
    root: Path
    name: str  # runs.dataset: the format, or an image folder's name (contracts.dataset_name)
    num_classes: int
    image_hw: tuple[int, int] | None  # stored resolution (None: per file, an image folder)
    channels: int | None
    train: Split
    test: Split
    synthetic: dict[str, Any] | None = None  # make_dataset's record, if it made this set

    @property
    def files(self) -> list[Path]:
        """Every file the splits read (for page-cache residency and eviction)."""
        return sorted(set(self.train.files) | set(self.test.files))

    def describe(self) -> dict[str, Any]:
        files = self.files
        return {
            "format": self.format,
            "root": str(self.root.resolve()),
            "name": self.name,
            "num_classes": self.num_classes,
            "n_train": self.train.n,
            "n_test": self.test.n,
            "image_hw": self.image_hw,
            "channels": self.channels,
            "n_files": len(files),
            "bytes": sum(f.stat().st_size for f in files),
            "synthetic": self.synthetic,
        }


def detect_format(root: str | Path) -> str:
    """Which format a --data directory holds, from its file names (cheap: no file is read)."""
    root = Path(root)
    if not root.exists():
        raise DatasetNotFoundError(
            f"--data {str(root)!r} does not exist; make a dataset with "
            f"`edgestats dataset make --format mnist --out {root} --n 2000`"
        )
    if not root.is_dir():
        raise DatasetNotFoundError(
            f"--data {str(root)!r} is a file; give the directory that holds the dataset"
        )
    if (root / MNIST_FILES["train"][0]).exists():
        return "mnist"
    if _cifar_dir(root) is not None:
        return "cifar10"
    if _class_dirs(root / "train") or _class_dirs(root):
        return "imagefolder"
    raise DatasetNotFoundError(
        f"--data {str(root)!r} holds no dataset edgestats reads: expected MNIST IDX files "
        f"({MNIST_FILES['train'][0]}, ...), CIFAR-10 binary batches "
        f"({CIFAR_TRAIN_FILES[0]}, {CIFAR_TEST_FILE}), "
        "or an image folder (train/<class>/<image>.jpg); `edgestats dataset make` writes each of them"
    )


def open_dataset(root: str | Path) -> Dataset:
    """Open a dataset directory, checking every file's header and size against its format."""
    root = Path(root)
    fmt = detect_format(root)
    opener = {"mnist": _open_mnist, "cifar10": _open_cifar10, "imagefolder": _open_imagefolder}[fmt]
    dataset = opener(root)
    marker = root / MARKER
    if marker.is_file():
        try:
            dataset.synthetic = json.loads(marker.read_text())
        except ValueError:
            dataset.synthetic = None
    return dataset


# -- MNIST IDX --------------------------------------------------------------------------------------


def read_idx_header(path: Path, expected_magic: int) -> tuple[tuple[int, ...], int]:
    """(dimensions, header bytes) of an IDX file of unsigned bytes; checks magic and file size."""
    try:
        with open(path, "rb") as f:
            head = f.read(4)
            if len(head) < 4:
                raise DatasetFormatError(
                    f"{path}: truncated IDX file ({len(head)} bytes, not even a magic number)"
                )
            zero, dtype, ndim = struct.unpack(">HBB", head)
            magic = struct.unpack(">I", head)[0]
            if zero != 0 or dtype != IDX_UBYTE or magic != expected_magic:
                raise DatasetFormatError(
                    f"{path}: not an IDX file of unsigned bytes: magic 0x{magic:08x}, expected "
                    f"0x{expected_magic:08x} (a gzipped download must be gunzipped first)"
                )
            dims_bytes = f.read(4 * ndim)
    except FileNotFoundError:
        raise DatasetNotFoundError(
            f"{path}: missing; an MNIST directory holds "
            f"{', '.join(n for pair in MNIST_FILES.values() for n in pair)}"
        ) from None
    if len(dims_bytes) < 4 * ndim:
        raise DatasetFormatError(
            f"{path}: truncated IDX header ({len(dims_bytes)} of {4 * ndim} dimension bytes)"
        )
    dims = struct.unpack(f">{ndim}I", dims_bytes)
    header = 4 + 4 * ndim
    expected = header + _prod(dims)
    actual = path.stat().st_size
    if actual != expected:
        what = "truncated" if actual < expected else "has trailing bytes"
        raise DatasetFormatError(
            f"{path}: {what}: dimensions {'x'.join(map(str, dims))} need {expected} bytes, "
            f"the file has {actual}"
        )
    return dims, header


def _open_mnist(root: Path) -> Dataset:
    splits, hw = {}, None
    for split, (images_name, labels_name) in MNIST_FILES.items():
        images, labels = root / images_name, root / labels_name
        (count, rows, cols), image_header = read_idx_header(images, IDX_IMAGES_MAGIC)
        (n_labels,), label_header = read_idx_header(labels, IDX_LABELS_MAGIC)
        if n_labels != count:
            raise DatasetFormatError(f"{labels}: {n_labels} labels for {count} images in {images.name}")
        splits[split] = IdxSplit(images, image_header, labels, label_header, count, rows, cols)
        hw = (rows, cols)
    return Dataset("mnist", root, "mnist", 10, hw, 1, splits["train"], splits["test"])


class IdxSplit(Split):
    def __init__(
        self,
        images: Path,
        image_header: int,
        labels: Path,
        label_header: int,
        count: int,
        rows: int,
        cols: int,
    ):
        super().__init__(count, [images, labels])
        self.images, self.image_header, self.labels, self.label_header = (
            images,
            image_header,
            labels,
            label_header,
        )
        self.rows, self.cols = rows, cols

    def raw(self, i: int) -> tuple[Any, int]:
        if not self._maps:  # mapped on first use, in the process that reads
            import numpy as np

            self._maps["x"] = np.memmap(self.images, np.uint8, "r", self.image_header).reshape(
                -1, self.rows, self.cols
            )
            self._maps["y"] = np.memmap(self.labels, np.uint8, "r", self.label_header)
        label = int(self._maps["y"][i])
        if label >= 10:
            raise DatasetFormatError(f"{self.labels}: label {label} of sample {i} is not a digit 0-9")
        return self._maps["x"][i].copy(), label


# -- CIFAR-10 binary --------------------------------------------------------------------------------


def _cifar_dir(root: Path) -> Path | None:
    for candidate in (root, root / "cifar-10-batches-bin"):
        if (candidate / CIFAR_TEST_FILE).exists() or (candidate / CIFAR_TRAIN_FILES[0]).exists():
            return candidate
    return None


def _cifar_records(path: Path) -> int:
    if not path.is_file():
        raise DatasetNotFoundError(
            f"{path}: missing; a CIFAR-10 binary directory holds "
            f"{', '.join(CIFAR_TRAIN_FILES)} and {CIFAR_TEST_FILE}"
        )
    size = path.stat().st_size
    if size == 0 or size % CIFAR_RECORD_BYTES:
        raise DatasetFormatError(
            f"{path}: {size} bytes is not a whole number of CIFAR-10 records "
            f"({CIFAR_RECORD_BYTES} bytes each: 1 label + 3072 pixels); truncated or not CIFAR-10 binary"
        )
    return size // CIFAR_RECORD_BYTES


def _open_cifar10(root: Path) -> Dataset:
    folder = _cifar_dir(root)
    assert folder is not None
    train_files = [folder / n for n in CIFAR_TRAIN_FILES if (folder / n).exists()]
    if not train_files:
        raise DatasetNotFoundError(f"{folder}: no training batches ({', '.join(CIFAR_TRAIN_FILES)})")
    train = CifarSplit(train_files)
    test = CifarSplit([folder / CIFAR_TEST_FILE])
    return Dataset("cifar10", root, "cifar10", 10, (CIFAR_SIDE, CIFAR_SIDE), 3, train, test)


class CifarSplit(Split):
    def __init__(self, files: list[Path]):
        counts = [_cifar_records(f) for f in files]
        super().__init__(sum(counts), files)
        self.starts = [sum(counts[:k]) for k in range(len(counts))]

    def raw(self, i: int) -> tuple[Any, int]:
        k = bisect.bisect_right(self.starts, i) - 1
        path = self.files[k]
        if path not in self._maps:
            import numpy as np

            self._maps[path] = np.memmap(path, np.uint8, "r").reshape(-1, CIFAR_RECORD_BYTES)
        record = self._maps[path][i - self.starts[k]]
        label = int(record[0])
        if label >= len(CIFAR_CLASSES):
            raise DatasetFormatError(
                f"{path}: record {i - self.starts[k]} has label byte {label}; CIFAR-10 labels are "
                "0-9 (corrupt file, or CIFAR-100, whose records are 2 + 3072 bytes)"
            )
        # R, G, B planes of 32x32 -> one (32, 32, 3) image
        return record[1:].reshape(3, CIFAR_SIDE, CIFAR_SIDE).transpose(1, 2, 0).copy(), label


# -- image folder -----------------------------------------------------------------------------------


def _class_dirs(root: Path) -> list[Path]:
    if not root.is_dir():
        return []
    return sorted(d for d in root.iterdir() if d.is_dir() and _images(d))


def _images(folder: Path) -> list[Path]:
    return sorted(p for p in folder.iterdir() if p.suffix.lower() in IMAGE_SUFFIXES and p.is_file())


def _open_imagefolder(root: Path) -> Dataset:
    if _class_dirs(root / "train"):
        classes = [d.name for d in _class_dirs(root / "train")]
        train = _listing(root / "train", classes)
        test = _listing(root / "test", classes) if (root / "test").is_dir() else []
        if not test:
            raise DatasetNotFoundError(
                f"{root}: has train/ but no test/ images; add test/<class>/ folders, "
                "or put the class folders directly in the directory to hold out every fifth file"
            )
    else:
        classes = [d.name for d in _class_dirs(root)]
        everything = _listing(root, classes)
        test = [s for k, s in enumerate(everything) if k % HOLDOUT_EVERY == HOLDOUT_EVERY - 1]
        train = [s for k, s in enumerate(everything) if k % HOLDOUT_EVERY != HOLDOUT_EVERY - 1]
    if len(classes) < 2:
        raise DatasetNotFoundError(
            f"{root}: an image folder needs at least two class folders, found {classes}"
        )
    return Dataset(
        "imagefolder",
        root,
        dataset_name(root.name) or "imagefolder",
        len(classes),
        None,
        None,
        FileSplit(train),
        FileSplit(test),
    )


def _listing(folder: Path, classes: list[str]) -> list[tuple[Path, int]]:
    return [
        (p, label)
        for label, name in enumerate(classes)
        if (folder / name).is_dir()
        for p in _images(folder / name)
    ]


class FileSplit(Split):
    def __init__(self, samples: list[tuple[Path, int]]):
        super().__init__(len(samples), [p for p, _ in samples])
        self.samples = samples

    def raw(self, i: int) -> tuple[Any, int]:
        return self.samples[i]


def _prod(values: tuple[int, ...]) -> int:
    total = 1
    for v in values:
        total *= v
    return total
