"""What `edgestats dataset make` prints: one line naming the dataset it wrote."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer


def print_dataset(out: Path, record: dict[str, Any]) -> None:
    """The folder, its format, samples, image size and classes (make_dataset's record)."""
    typer.echo(
        f"{out}: {record['format']}, {record['n_train']} training + {record['n_test']} test samples, "
        f"{record['width']}x{record['height']}, {record['num_classes']} classes"
    )
