"""From a dataset's samples to the arrays a training step takes, a batch at a time. Each sample is
decoded, converted to the model's channels (grey or RGB), resized to the model's input (bilinear)
and normalised to [-1, 1]; a batch of them is stacked, timed where it is built.

Separate from datasets.py, which reads the on-disk formats into samples: this is the data
pipeline's per-batch work, the same for every format, which the training loops (torch_loop.py,
tf_loop.py) run in their loader workers.

numpy and Pillow are imported inside the functions: the training worker imports this module
before its framework, and its import phase must be the framework's alone.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from edgestats.collectors.training.datasets import DatasetFormatError, DatasetNotFoundError, Split


class Preprocess:
    """Decode one sample, convert to the model's channels, resize to its input, normalise to
    [-1, 1]; float32 in the framework's layout ("NCHW" gives (C, H, W), "NHWC" gives (H, W, C))."""

    def __init__(self, hw: tuple[int, int], channels: int, layout: str):
        if layout not in ("NCHW", "NHWC"):
            raise ValueError(f"layout must be NCHW or NHWC, not {layout!r}")
        self.hw, self.channels, self.layout = (int(hw[0]), int(hw[1])), int(channels), layout

    def __call__(self, sample: Any) -> Any:
        import numpy as np
        from PIL import Image

        mode = "L" if self.channels == 1 else "RGB"
        if isinstance(sample, (str, Path)):
            image = _decode(Path(sample), mode)
        else:
            image = Image.fromarray(sample).convert(mode)
        if image.size != (self.hw[1], self.hw[0]):
            image = image.resize((self.hw[1], self.hw[0]), Image.Resampling.BILINEAR)
        pixels = np.asarray(image, dtype=np.float32) * (2.0 / 255.0) - 1.0
        if self.channels == 1:
            pixels = pixels[:, :, None]
        return pixels.transpose(2, 0, 1) if self.layout == "NCHW" else pixels


def _decode(path: Path, mode: str) -> Any:
    from PIL import Image, UnidentifiedImageError

    try:
        with Image.open(path) as img:
            img.load()  # decode now, inside the try: a truncated JPEG fails here, not later
            return img.convert(mode)
    except FileNotFoundError:
        raise DatasetNotFoundError(
            f"{path}: image missing (the dataset changed since it was opened)"
        ) from None
    except (UnidentifiedImageError, OSError, ValueError) as exc:
        raise DatasetFormatError(
            f"{path}: cannot be decoded as an image ({exc}); remove or replace the file"
        ) from None


def load_batch(split: Split, indices: Any, preprocess: Preprocess) -> tuple[Any, Any]:
    """(x, y) numpy arrays for these sample indices: float32 samples stacked, int64 labels."""
    import numpy as np

    xs, ys = [], []
    for i in indices:
        sample, label = split.raw(int(i))
        xs.append(preprocess(sample))
        ys.append(label)
    return np.stack(xs), np.asarray(ys, dtype=np.int64)


def timed_batch(split: Split, indices: Any, preprocess: Preprocess) -> tuple[Any, Any, int]:
    """load_batch plus its fetch + preprocess time in ns, measured in whichever process runs it
    (a DataLoader worker or a tf.data thread), so it can travel with the batch."""
    t0 = time.perf_counter_ns()
    x, y = load_batch(split, indices, preprocess)
    return x, y, time.perf_counter_ns() - t0
