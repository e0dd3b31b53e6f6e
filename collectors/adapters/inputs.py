"""The input batch every adapter feeds its model: a decoded image or a seeded synthetic batch.

Both come out as a numpy float32 array in the framework's layout; each adapter then wraps it in
its own tensor type. numpy and Pillow are imported inside the functions, so importing this module
costs nothing (the worker's import phase must be the framework's).

Image preprocessing is the ImageNet convention, kept simple so every framework gets the same
numbers: decode with Pillow, convert to RGB, resize straight to the model's input size (bilinear;
no aspect-preserving crop), scale to [0, 1], normalise with the ImageNet mean/std, and repeat the
one image batch_size times. pCAMP (seed 000, Table 3) times "load image" as its own phase, twice,
so nothing here is cached: every call decodes the file again.

The errors the adapters raise for things a user can fix live here too (all EdgestatsError).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from edgestats.errors import EdgestatsError

IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)
LAYOUTS = ("NCHW", "NHWC")


class InputImageError(EdgestatsError):
    """The --input image is missing, unreadable or not an image Pillow can decode."""


class ModelFileError(EdgestatsError):
    """A user's model file (or its input shape) cannot be used by the adapter asked for."""


class AcceleratorError(EdgestatsError):
    """The accelerator asked for (e.g. cuda) is not usable with this framework install."""


class FrameworkMissingError(EdgestatsError):
    """A framework needed for this step (a conversion in prepare, an interpreter) is not installed."""


def load_image(path: str | Path, hw: tuple[int, int], layout: str, batch_size: int = 1) -> Any:
    """Decode `path` into a float32 batch of shape (batch, 3, H, W) or (batch, H, W, 3)."""
    import numpy as np
    from PIL import Image, UnidentifiedImageError

    if layout not in LAYOUTS:
        raise ValueError(f"layout must be one of {', '.join(LAYOUTS)}, not {layout!r}")
    path = Path(path)
    try:
        with Image.open(path) as img:
            rgb = img.convert("RGB").resize((int(hw[1]), int(hw[0])), Image.Resampling.BILINEAR)
    except FileNotFoundError:
        raise InputImageError(f"input image {str(path)!r} does not exist") from None
    except (UnidentifiedImageError, OSError, ValueError) as exc:
        raise InputImageError(
            f"input image {str(path)!r} cannot be decoded as an image ({exc}); "
            "pass a JPEG/PNG file Pillow can open"
        ) from None
    pixels = np.asarray(rgb, dtype=np.float32) / 255.0  # H, W, 3
    pixels = (pixels - np.asarray(IMAGENET_MEAN, np.float32)) / np.asarray(IMAGENET_STD, np.float32)
    if layout == "NCHW":
        pixels = pixels.transpose(2, 0, 1)
    batch = np.repeat(pixels[np.newaxis], max(1, int(batch_size)), axis=0)
    return np.ascontiguousarray(batch, dtype=np.float32)


def synthetic_batch(shape: tuple[int, ...], seed: int = 0) -> Any:
    """A seeded standard-normal float32 batch (the scale of a normalised image) of `shape`."""
    import numpy as np

    return np.random.default_rng(seed).standard_normal(tuple(int(d) for d in shape), dtype=np.float32)


def batch_for(config: Any, sample_shape: tuple[int, ...], layout: str) -> Any:
    """The run's input: the --input image resized to the model's input, else synthetic.

    `sample_shape` is one sample in `layout` ((C, H, W) or (H, W, C)); the batch dimension is
    config.batch_size.
    """
    if layout not in LAYOUTS:
        raise ValueError(f"layout must be one of {', '.join(LAYOUTS)}, not {layout!r}")
    hw = tuple(sample_shape[1:3]) if layout == "NCHW" else tuple(sample_shape[0:2])
    if config.input:
        channels = sample_shape[0] if layout == "NCHW" else sample_shape[-1]
        if channels != 3:
            raise InputImageError(
                f"the model takes {channels}-channel input; --input decodes RGB images (3 channels)"
            )
        return load_image(config.input, hw, layout, config.batch_size)
    return synthetic_batch((config.batch_size, *sample_shape), config.seed)
