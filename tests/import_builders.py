"""Helpers of the import tests (tests/imports/test_import*.py): the published sample table, a small
file written from text, and the rows a query returns (importable from tests)."""

from __future__ import annotations

from pathlib import Path

from edgestats.store.results import Store

SAMPLE = Path(__file__).parents[1] / "sample_data" / "dlaas_tf_mnist_cpu.csv"


def write(path: Path, text: str) -> Path:
    path.write_text(text.strip() + "\n")
    return path


def rows(db: Path, sql: str) -> list[dict]:
    with Store.open(db, read_only=True) as store:
        return store.frame(sql).to_dicts()
