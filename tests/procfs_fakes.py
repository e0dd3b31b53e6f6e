"""Fake /proc and /sys trees for the telemetry tests (importable from tests): a writer of files
under a root, and two /proc/stat snapshots a sampling interval apart."""

from __future__ import annotations

from pathlib import Path


def write_tree(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


STAT_1 = (
    "cpu  100 10 50 800 40 0 0 0 0 0\ncpu0 60 10 20 400 10 0 0 0 0 0\ncpu1 40 0 30 400 30 0 0 0 0 0\n"
    "intr 1 2 3\n"
)
STAT_2 = (
    "cpu  160 10 90 880 60 5 5 0 7 0\ncpu0 100 10 40 440 10 0 0 0 7 0\ncpu1 60 0 50 440 50 5 5 0 0 0\n"
    "intr 9 9 9\n"
)
