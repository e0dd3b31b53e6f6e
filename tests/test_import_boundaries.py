"""Imports go one way (docs/architecture.md §3): a device needs no analysis stack, analysis needs no
framework, nothing below the CLI imports it, and reports open no DB."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ANALYSIS = {"polars", "statsmodels", "altair", "vl_convert", "scipy"}
FRAMEWORKS = {"torch", "tensorflow", "onnxruntime", "ai_edge_litert", "keras"}


def loaded_after(statement: str) -> set[str]:
    code = (
        f"import sys, json\n{statement}\nprint(json.dumps(sorted({{m.split('.')[0] for m in sys.modules}})))"
    )
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout
    return set(json.loads(out.splitlines()[-1]))


def test_collectors_and_store_do_not_import_the_analysis_stack():
    loaded = loaded_after(
        "import edgestats.collectors, edgestats.store.results, edgestats.collectors.host.facts, edgestats.collectors.host.probes"
    )
    assert not loaded & ANALYSIS, f"device-side code imported {loaded & ANALYSIS}"
    assert not loaded & FRAMEWORKS, "frameworks are imported lazily, by the worker only"


def test_cli_startup_imports_no_framework():
    loaded = loaded_after("import edgestats.cli")
    assert not loaded & FRAMEWORKS, f"`edgestats --help` would import {loaded & FRAMEWORKS}"
    assert not loaded & ANALYSIS


def test_reports_and_analysis_do_not_import_frameworks():
    loaded = loaded_after(
        "import edgestats.reports, edgestats.store.query, edgestats.exports.merge, edgestats.imports.importer"
    )
    assert not loaded & FRAMEWORKS


def test_worker_and_adapters_import_no_framework_and_no_store():
    """The measured process's import phase must be the framework's alone: the worker and the
    adapter modules import nothing heavy until adapter.import_framework() runs."""
    loaded = loaded_after(
        "import edgestats.collectors.worker, edgestats.collectors.adapters.pytorch, edgestats.collectors.adapters.tensorflow, "
        "edgestats.collectors.adapters.tflite, edgestats.collectors.adapters.onnxruntime, "
        "edgestats.collectors.training.worker, edgestats.collectors.training.datasets, edgestats.collectors.training.pagecache"
    )
    heavy = FRAMEWORKS | ANALYSIS | {"duckdb", "pyarrow", "numpy", "PIL"}
    assert not loaded & heavy, f"the worker would pay for {loaded & heavy} outside its import phase"


# --- The same rules read from the sources (docs/architecture.md §3) -------------------------------
# The subprocess tests above see what one import loads; these read every module with `ast`, so an
# import inside a function, or a string given to importlib.import_module, cannot slip past.

REPO = Path(__file__).parents[1]
# Source folder -> the package it installs as (pyproject's package-dir mapping).
PACKAGES = {"edgestats": "edgestats", "collectors": "edgestats.collectors", "reports": "edgestats.reports"}


@dataclass(frozen=True)
class Import:
    path: str  # relative to the repo, as an assertion names it
    line: int
    module: str  # absolute dotted name


def module_name(path: Path) -> str:
    """collectors/power/rapl.py -> edgestats.collectors.power.rapl."""
    top, *rest = path.relative_to(REPO).with_suffix("").parts
    parts = [PACKAGES[top], *rest]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def absolute(node: ast.ImportFrom, name: str, is_package: bool) -> list[str]:
    """The modules one `from ... import ...` names, relative imports resolved against module `name`."""
    if node.level == 0:
        base = node.module or ""
    else:
        package = name.split(".")
        if not is_package:
            package = package[:-1]
        package = package[: len(package) - (node.level - 1)]
        base = ".".join(package + ([node.module] if node.module else []))
    # `from edgestats import store` imports edgestats.store: count both the package and the names.
    return [base] + [f"{base}.{alias.name}" for alias in node.names if alias.name != "*"]


def imports_in(path: Path, name: str | None = None) -> list[Import]:
    """Every import in one file, at any depth; `name` is its module name (default: from its path)."""
    tree = ast.parse(path.read_text(), filename=str(path))
    name = name or module_name(path)
    rel = str(path.relative_to(REPO)) if path.is_relative_to(REPO) else str(path)
    found: list[Import] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [Import(rel, node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            found += [Import(rel, node.lineno, m) for m in absolute(node, name, path.name == "__init__.py")]
        elif (
            isinstance(node, ast.Call)
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
            and ast.unparse(node.func) in ("importlib.import_module", "import_module", "__import__")
        ):
            found.append(Import(rel, node.lineno, node.args[0].value))
    return found


def sources(folder: str) -> list[Path]:
    files = sorted((REPO / folder).rglob("*.py"))
    assert files, f"no Python files under {folder}/"
    return files


def within(module: str, packages: set[str] | tuple[str, ...]) -> bool:
    return any(module == p or module.startswith(p + ".") for p in packages)


def offenders(folder: str, forbidden: set[str], skip: tuple[str, ...] = ()) -> list[str]:
    """ "file:line imports module" for each import statement that reaches into `forbidden`, once per line."""
    found: dict[tuple[str, int], str] = {}
    for path in sources(folder):
        if str(path.relative_to(REPO)).startswith(skip):
            continue
        for imp in imports_in(path):
            if within(imp.module, forbidden):
                found.setdefault((imp.path, imp.line), imp.module)
    return [f"{path}:{line} imports {module}" for (path, line), module in sorted(found.items())]


def test_the_source_reader_sees_nested_relative_and_string_imports(tmp_path):
    probe = tmp_path / "probe.py"
    probe.write_text(
        "def f():\n    from ..adapters import base\n    import importlib\n"
        "    importlib.import_module('edgestats.cli')\n"
    )
    modules = {imp.module for imp in imports_in(probe, name="edgestats.collectors.power.probe")}
    assert {"edgestats.collectors.adapters", "edgestats.collectors.adapters.base", "edgestats.cli"} <= modules


def test_nothing_outside_the_cli_imports_the_cli():
    found = [
        o
        for folder in PACKAGES
        for o in offenders(folder, {"edgestats.cli"}, skip=("edgestats/cli/", "edgestats/__main__.py"))
    ]
    assert not found, "only edgestats/cli/ and edgestats/__main__.py may import the CLI:\n" + "\n".join(found)


def test_reports_do_not_open_the_db():
    db = {
        "duckdb",
        "edgestats.store.results",
        "edgestats.store.database",
        "edgestats.store.query",
        "edgestats.store.migrations",
    }
    found = offenders("reports", db)
    assert not found, "reports draw what the analysis layer loaded; they open no DB:\n" + "\n".join(found)


def test_collectors_import_no_analysis_or_reports():
    found = offenders("collectors", {"edgestats.analysis", "edgestats.reports"} | ANALYSIS)
    assert not found, "the device side needs no analysis stack:\n" + "\n".join(found)


def test_registries_import_only_the_standard_library():
    found = [
        f"{imp.path}:{imp.line} imports {imp.module}"
        for path in sources("edgestats/registry")
        for imp in imports_in(path)
        if imp.module.split(".")[0] not in sys.stdlib_module_names
        and not within(imp.module, {"edgestats.registry"})
        and imp.module != "__future__"
    ]
    assert not found, "the registries are read by --help and the device side; stdlib only:\n" + "\n".join(
        found
    )
