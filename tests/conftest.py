"""Shared fixtures. The builders live in tests/builders.py (tests/ is on sys.path via pytest's
`pythonpath` setting, so test modules can `from builders import ...`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from builders import make_results_db, write_inference_run, write_training_run  # noqa: F401  (re-exported)


@pytest.fixture
def results_db(tmp_path: Path) -> Path:
    return make_results_db(tmp_path / "results.duckdb")
