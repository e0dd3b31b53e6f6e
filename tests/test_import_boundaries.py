"""Imports go one way (DESIGN.md §3): a device needs no analysis stack, analysis needs no framework."""

from __future__ import annotations

import json
import subprocess
import sys

ANALYSIS = {"polars", "statsmodels", "altair", "vl_convert", "scipy"}
FRAMEWORKS = {"torch", "tensorflow", "onnxruntime", "ai_edge_litert", "keras"}


def loaded_after(statement: str) -> set[str]:
    code = f"import sys, json\n{statement}\nprint(json.dumps(sorted({{m.split('.')[0] for m in sys.modules}})))"
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout
    return set(json.loads(out.splitlines()[-1]))


def test_collectors_and_store_do_not_import_the_analysis_stack():
    loaded = loaded_after("import edgestats.collectors, edgestats.store, edgestats.collectors.host.facts, edgestats.collectors.host.probes")
    assert not loaded & ANALYSIS, f"device-side code imported {loaded & ANALYSIS}"
    assert not loaded & FRAMEWORKS, "frameworks are imported lazily, by the worker only"


def test_cli_startup_imports_no_framework():
    loaded = loaded_after("import edgestats.cli")
    assert not loaded & FRAMEWORKS, f"`edgestats --help` would import {loaded & FRAMEWORKS}"
    assert not loaded & ANALYSIS


def test_reports_and_analysis_do_not_import_frameworks():
    loaded = loaded_after("import edgestats.reports, edgestats.query, edgestats.merge, edgestats.importer")
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
