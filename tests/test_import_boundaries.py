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


# --- No cycles --------------------------------------------------------------------------------------
# An import cycle is a two-way dependency, whichever side defers its import into a function: the
# graph below counts every import at any depth (a lazy import is still a dependency).


def module_files() -> dict[str, Path]:
    """Every module of the installed package, by dotted name."""
    return {module_name(path): path for folder in PACKAGES for path in sources(folder)}


def import_graph(files: dict[str, Path]) -> dict[str, set[str]]:
    """module -> the modules of `files` it imports (`imports_in` gives `from pkg import x` as both
    pkg and pkg.x, so a submodule imported by name counts); no module depends on itself."""
    return {
        name: {imp.module for imp in imports_in(path, name) if imp.module in files} - {name}
        for name, path in files.items()
    }


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_the_cycle_finder_sees_a_cycle_through_a_lazy_import(tmp_path):
    files = {}
    for name, body in {
        "pkg.a": "from pkg.b import f\n",
        "pkg.b": "def f():\n    from pkg.c import g\n",
        "pkg.c": "import pkg.a\n",
        "pkg.d": "from pkg import a\n",
    }.items():
        files[name] = tmp_path / f"{name}.py"
        files[name].write_text(body)
    assert cycles(import_graph(files)) == [["pkg.a", "pkg.b", "pkg.c"]]


def test_no_import_cycles():
    graph = import_graph(module_files())
    assert len(graph) > 100, f"read only {len(graph)} modules"
    found = cycles(graph)
    assert not found, "modules that import each other (directly or around a loop):\n" + "\n".join(
        " <-> ".join(component) for component in found
    )


# --- No cycles between packages ----------------------------------------------------------------------
# Two packages whose modules import each other are one stage split badly, even when no two modules
# form a loop (as store.sandbox -> exports.lake did, with exports.append -> store.results). The
# module graph collapsed to packages: a module's unit is the package directly holding it (its __init__ is that
# package's), so a subpackage is a unit apart from its parent; a module directly at the library root
# is a unit of its own, since the root holds only what every stage shares.
LIBRARY = "edgestats"
# Package cycles found and reported (issue 34), not fixed yet: each listed here exactly as it stands,
# so the test fails when one grows, and when one is fixed (then drop it here). None may be added.
KNOWN_PACKAGE_CYCLES: list[list[str]] = []  # none: a new one is a stage split badly


def package_of(name: str, files: dict[str, Path], library: str = LIBRARY) -> str:
    """The unit of module `name` in the package graph (see above)."""
    if files[name].name == "__init__.py":
        return name
    parent = name.rpartition(".")[0]
    return name if parent == library else parent


def package_edges(files: dict[str, Path], library: str = LIBRARY) -> dict[tuple[str, str], list[str]]:
    """(package, package) -> "module -> module" for each import that goes from one to the other."""
    edges: dict[tuple[str, str], list[str]] = {}
    for module, imported in import_graph(files).items():
        for target in sorted(imported):
            ends = package_of(module, files, library), package_of(target, files, library)
            if ends[0] != ends[1]:
                edges.setdefault(ends, []).append(f"{module} -> {target}")
    return edges


def package_graph(files: dict[str, Path], library: str = LIBRARY) -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {package_of(m, files, library): set() for m in files}
    for source, target in package_edges(files, library):
        graph[source].add(target)
    return graph


def test_the_package_cycle_finder_sees_cycles_no_module_cycle_shows(tmp_path):
    """a and b import each other's modules, never one module back; c imports its subpackage c.inner,
    whose module imports c's; pkg.one and pkg.two are root modules, so d between them is no cycle."""
    bodies = {
        "pkg/one.py": "from pkg.d import m\n",
        "pkg/a/x.py": "from pkg.b.y import g\n",
        "pkg/b/z.py": "def h():\n    import pkg.a.w\n",
        "pkg/c/top.py": "from pkg.c.inner import leaf\n",
        "pkg/c/inner/leaf.py": "from pkg.c import base\n",
        "pkg/d/n.py": "import pkg.two\n",
    }
    empty = ["pkg/two.py", "pkg/a/w.py", "pkg/b/y.py", "pkg/c/base.py", "pkg/d/m.py"]
    empty += [f"{p}/__init__.py" for p in ("pkg", "pkg/a", "pkg/b", "pkg/c", "pkg/c/inner", "pkg/d")]
    files = {}
    for rel, body in {**bodies, **dict.fromkeys(empty, "")}.items():
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(body)
        parts = Path(rel).with_suffix("").parts
        files[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    assert cycles(import_graph(files)) == []
    assert cycles(package_graph(files, library="pkg")) == [["pkg.a", "pkg.b"], ["pkg.c", "pkg.c.inner"]]
    assert package_edges(files, library="pkg")[("pkg.c.inner", "pkg.c")] == [
        "pkg.c.inner.leaf -> pkg.c",
        "pkg.c.inner.leaf -> pkg.c.base",
    ]


def described(cycle: list[str], edges: dict[tuple[str, str], list[str]]) -> str:
    """The packages of a cycle, then every import from one of them to another."""
    between = [e for (a, b), es in sorted(edges.items()) if {a, b} <= set(cycle) for e in es]
    return " <-> ".join(cycle) + "".join(f"\n  {e}" for e in between)


def test_no_package_cycles():
    files = module_files()
    graph = package_graph(files)
    assert {"edgestats.store", "edgestats.contracts", "edgestats.collectors.host"} <= set(graph)
    found = cycles(graph)
    new = [c for c in found if c not in KNOWN_PACKAGE_CYCLES]
    edges = package_edges(files)
    assert not new, "packages that import each other (directly or around a loop):\n" + "\n".join(
        described(c, edges) for c in new
    )
    gone = [c for c in KNOWN_PACKAGE_CYCLES if c not in found]
    assert not gone, f"no longer a cycle (or not this one): update KNOWN_PACKAGE_CYCLES: {gone}"


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
