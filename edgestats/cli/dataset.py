"""`edgestats dataset make`: write a learnable synthetic dataset in a real on-disk format.

The command parses, calls collectors/training/synthetic.py's make_dataset, and hands what it wrote
to reports/terminal/dataset.py to print.
"""

from __future__ import annotations

from pathlib import Path

import typer

from edgestats.cli.common import FlagsGroup, handle_errors
from edgestats.collectors.training.datasets import FORMATS
from edgestats.collectors.training.synthetic import make_dataset, parse_size
from edgestats.reports.terminal.dataset import print_dataset

dataset_app = typer.Typer(
    help="Datasets for `collect --kind training` (written here; nothing is downloaded).",
    no_args_is_help=True,
    cls=FlagsGroup,
)


@dataset_app.command("make")
@handle_errors
def make_command(
    fmt: str = typer.Option(..., "--format", help=f"On-disk format: {', '.join(FORMATS)}."),
    out: Path = typer.Option(..., "--out", help="Directory to write (new or empty)."),
    n: int = typer.Option(2000, "--n", min=1, help="Training samples (before --scale)."),
    n_test: int = typer.Option(
        None, "--n-test", min=1, help="Held-out test samples (default: n / 5, at least 10)."
    ),
    size: str = typer.Option(
        None,
        "--size",
        help="Image size WIDTHxHEIGHT, e.g. 800x600 (default: 28x28 mnist, "
        "32x32 cifar10 (fixed), 800x600 imagefolder).",
    ),
    scale: float = typer.Option(1.0, "--scale", help="Multiply --n and --n-test, e.g. 0.25, 1, 4."),
    classes: int = typer.Option(
        10, "--classes", min=2, help="Classes (imagefolder only; MNIST and CIFAR-10 have 10)."
    ),
    seed: int = typer.Option(0, "--seed", help="Seed of the generator: the same seed writes the same bytes."),
    quality: int = typer.Option(90, "--jpeg-quality", min=1, max=100, help="JPEG quality of an imagefolder."),
) -> None:
    """Write a synthetic dataset that a CNN can learn: class c is a grating at orientation
    c*180/classes degrees (random phase and frequency, in noise; a class tint in colour).

    Formats: `mnist` (IDX files, as LeCun distributes them, ungzipped), `cifar10` (the binary
    version: cifar-10-batches-bin/data_batch_1..5.bin and test_batch.bin), `imagefolder`
    (train/<class>/<n>.jpg and test/<class>/<n>.jpg). Point `collect --kind training --data DIR`
    at the result.
    """
    record = make_dataset(
        fmt,
        out,
        n,
        n_test=n_test,
        size=parse_size(size) if size else None,
        scale=scale,
        num_classes=classes,
        seed=seed,
        jpeg_quality=quality,
    )
    print_dataset(out, record)


def register(app: typer.Typer) -> None:
    app.add_typer(dataset_app, name="dataset")
