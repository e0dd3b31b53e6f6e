"""The import graph of the installed package read from the sources with `ast` (docs/architecture.md
§3): every import at any depth (a lazy import is still a dependency), relative ones resolved, and
strings given to importlib; the cycles of the module graph and of the package graph. The import
tests (test_import_boundaries.py, test_import_cycles.py) hold the code to its layer rules with it.
"""

from __future__ import annotations

import ast
import functools
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).parents[1]
# Source folder -> the package it installs as (pyproject's package-dir mapping).
PACKAGES = {"edgestats": "edgestats", "collectors": "edgestats.collectors", "reports": "edgestats.reports"}
# The package graph: a module's unit is the package directly holding it (its __init__ is that
# package's), so a subpackage is a unit apart from its parent; a module directly at the library root
# is a unit of its own, since the root holds only what every stage shares.
LIBRARY = "edgestats"


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


def imports_in(path: Path, name: str | None = None) -> tuple[Import, ...]:
    """Every import in one file, at any depth; `name` is its module name (default: from its path).
    Read once per version of the file in a test session: a dozen tests walk the same 270 files."""
    return _imports_in(path, name or module_name(path), path.stat().st_mtime_ns)


@functools.cache
def _imports_in(path: Path, name: str, _version: int) -> tuple[Import, ...]:
    tree = ast.parse(path.read_text(), filename=str(path))
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
    return tuple(found)


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


def described(cycle: list[str], edges: dict[tuple[str, str], list[str]]) -> str:
    """The packages of a cycle, then every import from one of them to another."""
    between = [e for (a, b), es in sorted(edges.items()) if {a, b} <= set(cycle) for e in es]
    return " <-> ".join(cycle) + "".join(f"\n  {e}" for e in between)
