"""docs/reliability.md names a test for every fault: each one named must exist, so the page
cannot go on citing a test that was renamed or deleted."""

from __future__ import annotations

import ast
import re
from pathlib import Path

REPO = Path(__file__).parents[1]


def named_tests() -> list[tuple[str, str]]:
    """(file, function) for every test the page's tables name (`file::test`, or `::test` after one)."""
    named = []
    for line in (REPO / "docs" / "reliability.md").read_text().splitlines():
        if not line.startswith("| ") or line.startswith("| fault |"):
            continue
        file = None
        for ref in re.findall(r"`([^`]+)`", line.rsplit("|", 2)[-2]):
            if ref.startswith("tests/"):
                file, _, function = ref.partition("::")
            elif ref.startswith("::") and file:
                function = ref[2:]
            else:
                continue
            named.append((file, function.split()[0] if function else ""))
    return named


def test_every_test_the_reliability_page_names_exists():
    named = named_tests()
    assert len({f for f, _ in named}) >= 8, named
    missing = []
    for file, function in named:
        path = REPO / file
        if not path.is_file():
            missing.append(file)
            continue
        functions = {n.name for n in ast.walk(ast.parse(path.read_text())) if isinstance(n, ast.FunctionDef)}
        if function and function not in functions:
            missing.append(f"{file}::{function}")
    assert not missing, f"docs/reliability.md names tests that do not exist: {missing}"


def test_the_totals_count_the_rows():
    text = (REPO / "docs" / "reliability.md").read_text()
    rows = [line for line in text.splitlines() if line.startswith("| ") and not line.startswith("| fault |")]
    assert f"**{len(rows)} faults tried**" in text
