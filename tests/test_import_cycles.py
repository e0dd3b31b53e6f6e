"""No import cycles (docs/architecture.md §3): no two modules import each other, directly or around
a loop, whichever side defers its import into a function; and no two packages do. Two packages
whose modules import each other are one stage split badly, even when no two modules form a loop
(as store.sandbox -> exports.lake did, with exports.append -> store.results)."""

from __future__ import annotations

from pathlib import Path

from import_graph import cycles, described, import_graph, module_files, package_edges, package_graph


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


def test_no_package_cycles():
    files = module_files()
    graph = package_graph(files)
    assert {"edgestats.store", "edgestats.contracts", "edgestats.collectors.host"} <= set(graph)
    found = cycles(graph)
    edges = package_edges(files)
    assert not found, "packages that import each other (directly or around a loop):\n" + "\n".join(
        described(c, edges) for c in found
    )
