"""Size limits that keep each module about one thing (docs/architecture.md §3): no function over 60
lines and no module over 400 lines, tests included. bench/ holds one-off measurement scripts and is
left out; the zoo's model-definition tables are long lists of layers, not logic, and are exempt
from the module limit only."""

from __future__ import annotations

import ast
import functools
import os
from pathlib import Path

REPO = Path(__file__).parents[1]
MAX_FUNCTION_LINES = 60
MAX_MODULE_LINES = 400
LONG_TABLES = {"collectors/zoo/torch_models.py", "collectors/zoo/keras_models.py"}
# Folders that hold no source of ours: bench/ by rule, the rest are environments and build outputs.
SKIPPED_FOLDERS = {"bench", "build", "dist", "node_modules", "__pycache__"}


def _skipped(folder: str) -> bool:
    return folder in SKIPPED_FOLDERS or folder.startswith(".") or folder.endswith(".egg-info")


@functools.cache
def python_files() -> tuple[Path, ...]:
    files = []
    # os.walk with pruning: rglob would walk all of .venv (tens of thousands of files) first
    for folder, subfolders, names in os.walk(REPO):
        subfolders[:] = sorted(d for d in subfolders if not _skipped(d))
        files += [Path(folder) / n for n in sorted(names) if n.endswith(".py")]
    assert len(files) > 50, f"found only {len(files)} Python files under {REPO}"
    return tuple(files)


def test_no_function_is_over_60_lines():
    long = []
    for path in python_files():
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lines = node.end_lineno - node.lineno + 1
                if lines > MAX_FUNCTION_LINES:
                    long.append(f"{path.relative_to(REPO)}:{node.lineno} {node.name}() is {lines} lines")
    assert not long, f"split these functions (at most {MAX_FUNCTION_LINES} lines each):\n" + "\n".join(long)


def test_no_module_is_over_400_lines():
    long = [
        f"{rel} is {n} lines"
        for path in python_files()
        if (rel := str(path.relative_to(REPO))) not in LONG_TABLES
        and (n := len(path.read_text().splitlines())) > MAX_MODULE_LINES
    ]
    assert not long, f"split these modules by subject (at most {MAX_MODULE_LINES} lines each):\n" + "\n".join(
        long
    )


def test_the_exempt_tables_exist():
    """An exemption for a file that moved or was renamed would silently exempt nothing."""
    missing = [rel for rel in sorted(LONG_TABLES) if not (REPO / rel).is_file()]
    assert not missing, f"LONG_TABLES names files that no longer exist: {missing}"


# --- Stages as packages, tests mirroring them (docs/architecture.md §3) ---------------------------
MAX_ROOT_MODULES = 10
# Test folders that mirror no package: shared input files, golden outputs, and the fault-injection
# tests that cross every stage (docs/reliability.md).
TEST_FOLDERS_OF_NO_PACKAGE = {"data", "golden", "reliability"}


def stage_packages() -> set[str]:
    """The library's packages one level down (edgestats/<stage>/), plus the two top-level folders
    that install inside the edgestats namespace with code of their own."""
    inside = {p.parent.name for p in (REPO / "edgestats").glob("*/__init__.py")}
    return inside | {"collectors", "reports"}


def test_the_library_root_holds_at_most_10_modules():
    root = sorted(p.name for p in (REPO / "edgestats").glob("*.py"))
    assert len(root) <= MAX_ROOT_MODULES, (
        f"edgestats/ holds {len(root)} modules ({', '.join(root)}): group them by stage into a package"
    )


def test_tests_mirror_the_packages():
    """Each stage package with tests of its own has tests/<stage>/, and every folder under tests/
    is a stage package's (or one of the few that mirror none)."""
    folders = {p.name for p in (REPO / "tests").iterdir() if p.is_dir() and not _skipped(p.name)}
    strays = folders - stage_packages() - TEST_FOLDERS_OF_NO_PACKAGE
    assert not strays, f"tests/{sorted(strays)} mirror no package of edgestats"
    # api and registry are tested by one module each (tests/test_api.py, tests/test_registries.py)
    single_module = {"api": "test_api.py", "registry": "test_registries.py"}
    missing = [
        stage
        for stage in sorted(stage_packages())
        if stage not in folders and not (REPO / "tests" / single_module.get(stage, "-")).is_file()
    ]
    assert not missing, f"packages without their tests/ folder: {missing}"


def test_every_framework_test_module_states_its_cost():
    """A module that runs frameworks costs seconds to minutes; its docstring says how much, so a
    reader knows what running it takes (figures from make test on this machine: README)."""
    silent = []
    for path in python_files():
        rel = str(path.relative_to(REPO))
        if not rel.startswith("tests/") or not path.name.startswith("test_") or path == Path(__file__):
            continue  # (this module names the marker without using it)
        source = path.read_text()
        if "mark.frameworks" in source and "Cost: about" not in (ast.get_docstring(ast.parse(source)) or ""):
            silent.append(rel)
    assert not silent, "say 'Cost: about N s' in the module docstring of:\n" + "\n".join(silent)
