"""Imports go one way (docs/architecture.md §3): a device needs no analysis stack, analysis needs no
framework, nothing below the CLI imports it, and reports open no DB."""

from __future__ import annotations

import json
import subprocess
import sys

from import_graph import LIBRARY, PACKAGES, REPO, imports_in, module_files, offenders, sources, within

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
        "import edgestats.collectors, edgestats.store.results, edgestats.collectors.host.facts, "
        "edgestats.collectors.host.probes"
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
        "import edgestats.collectors.worker, edgestats.collectors.adapters.pytorch, "
        "edgestats.collectors.adapters.tensorflow, edgestats.collectors.adapters.tflite, "
        "edgestats.collectors.adapters.onnxruntime, edgestats.collectors.training.worker, "
        "edgestats.collectors.training.datasets, edgestats.collectors.training.pagecache"
    )
    heavy = FRAMEWORKS | ANALYSIS | {"duckdb", "pyarrow", "numpy", "PIL"}
    assert not loaded & heavy, f"the worker would pay for {loaded & heavy} outside its import phase"


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
    found = offenders("reports", {"duckdb", "edgestats.store"})
    assert not found, "reports draw what the analysis layer loaded; they open no DB:\n" + "\n".join(found)


def test_collectors_import_no_analysis_reports_imports_or_exports():
    """The device side collects and stores; what reads results back (analysis, reports) and what
    moves them between files (import, export, merge, lakes) belongs to the laptop side."""
    laptop = {"edgestats.analysis", "edgestats.reports", "edgestats.imports", "edgestats.exports"}
    found = offenders("collectors", laptop | ANALYSIS)
    assert not found, "the device side needs no analysis stack:\n" + "\n".join(found)


def test_analysis_imports_nothing_from_collectors():
    """The analysis reads the DB; what a device measured reaches it only through the store, and
    facts both sides share through edgestats/contracts.py."""
    found = offenders("edgestats/analysis", {"edgestats.collectors"})
    assert not found, "analysis reads the store, not the collectors:\n" + "\n".join(found)


def test_contracts_import_only_the_standard_library():
    found = [
        f"{imp.path}:{imp.line} imports {imp.module}"
        for imp in imports_in(REPO / "edgestats" / "contracts.py")
        if imp.module.split(".")[0] not in sys.stdlib_module_names and imp.module != "__future__"
    ]
    assert not found, "every layer imports contracts.py; it must import no layer:\n" + "\n".join(found)


def test_the_store_imports_no_other_stage():
    """The store is the bottom layer: every stage writes or reads results through it, so it imports
    none of them, only itself and the modules at the library root (contracts, errors, ...)."""
    files = module_files()
    found = [
        f"{imp.path}:{imp.line} imports {imp.module}"
        for path in sources("edgestats/store")
        for imp in imports_in(path)
        if imp.module in files
        and not within(imp.module, {"edgestats.store"})
        and not (imp.module.rpartition(".")[0] == LIBRARY and files[imp.module].name != "__init__.py")
    ]
    assert not found, "the store imports no other stage (a shared fact goes to edgestats/contracts.py):\n" + (
        "\n".join(found)
    )


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


def test_the_collect_command_imports_nothing_of_the_analysis():
    """`collect` parses its flags and calls the library (edgestats/workflows/): the until-precise loop
    that joins the device side and the analysis' stopping rule lives there, not in the CLI."""
    found = [
        f"{imp.path}:{imp.line} imports {imp.module}"
        for path in sources("edgestats/cli")
        if path.name.startswith("collect")
        for imp in imports_in(path)
        if within(imp.module, {"edgestats.analysis"} | ANALYSIS)
    ]
    assert not found, "the collect command reaches the analysis only through the library:\n" + "\n".join(
        found
    )


def test_workflows_sit_above_the_stages_they_join():
    """workflows/ joins stages for a command (collect's loop, analyze's report): the CLI and the API
    call it; no stage below imports it, and the analysis imports no report."""
    below = [
        o
        for folder in ("collectors", "reports", "edgestats/analysis", "edgestats/store")
        for o in offenders(folder, {"edgestats.workflows"})
    ]
    assert not below, "only the CLI and the API call the workflows:\n" + "\n".join(below)
    drawn = offenders("edgestats/analysis", {"edgestats.reports"})
    assert not drawn, "the analysis computes; reports draw what it returns:\n" + "\n".join(drawn)


def test_the_cli_renders_nothing_itself():
    """Each command parses, calls one library function and hands its result to reports/terminal/:
    no CLI module imports what output is laid out with (rich, the number formatter)."""
    layout = {"rich", "edgestats.formatting"}
    found = offenders("edgestats/cli", layout)
    assert not found, "terminal output is laid out in reports/terminal/, not the CLI:\n" + "\n".join(found)
