"""Every registry entry is complete: its code resolves, its docs section exists and names it, its
help text is non-empty and shown by the CLI, and an analysis has its chart builders. And the tests
follow the registries: none spells out a registry's whole list (docs/architecture.md §8).

A plug-in added without one of these fails here, not in front of a user."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from edgestats.cli import app
from edgestats.registry import names_text, resolve
from edgestats.registry.analyses import ANALYSES, FRAMES, analysis_names
from edgestats.registry.power import AUTO_ORDER, POWER_SOURCES, power_source_names, spec_help
from edgestats.registry.runtimes import RUNTIMES, runtime_names

REPO = Path(__file__).parents[1]
runner = CliRunner()


def heading_slugs(path: Path) -> set[str]:
    """GitHub's anchors of a Markdown file's headings (lower case, punctuation dropped, spaces -> -)."""
    slugs = set()
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("#"):
            text = line.lstrip("#").strip().lower()
            slugs.add(re.sub(r"[^\w\- ]", "", text).replace(" ", "-"))
    return slugs


def section_text(path: Path, anchor: str) -> str:
    """The text under the heading with this anchor, up to the next heading of any level."""
    lines, out, inside = path.read_text(encoding="utf-8").splitlines(), [], False
    for line in lines:
        if line.startswith("#"):
            text = line.lstrip("#").strip().lower()
            inside = re.sub(r"[^\w\- ]", "", text).replace(" ", "-") == anchor
            continue
        if inside:
            out.append(line)
    return "\n".join(out)


def help_text(*args: str) -> str:
    result = runner.invoke(app, [*args, "--help"], env={"COLUMNS": "400", "TERM": "dumb", "NO_COLOR": "1"})
    assert result.exit_code == 0, result.output
    return " ".join(result.output.split())


ENTRIES = [
    *(("runtime", e) for e in RUNTIMES),
    *(("power", e) for e in POWER_SOURCES),
    *(("analysis", e) for e in ANALYSES),
]


@pytest.mark.parametrize("kind,entry", ENTRIES, ids=[f"{k}-{e.name}" for k, e in ENTRIES])
def test_entry_has_its_docs_section(kind, entry):
    file, _, anchor = entry.doc.partition("#")
    path = REPO / file
    assert path.is_file(), f"{kind} {entry.name}: its docs file {file} does not exist"
    assert anchor in heading_slugs(path), f"{kind} {entry.name}: {file} has no heading with anchor #{anchor}"
    assert section_text(path, anchor).strip(), (
        f"{kind} {entry.name}: the section #{anchor} of {file} is empty"
    )


@pytest.mark.parametrize("kind,entry", ENTRIES, ids=[f"{k}-{e.name}" for k, e in ENTRIES])
def test_entry_has_help_text(kind, entry):
    assert entry.help.strip() and entry.title.strip(), f"{kind} {entry.name}: empty help or title"


def test_cli_help_lists_every_entry_from_the_registries():
    collect = help_text("collect")
    for entry in RUNTIMES:
        assert entry.name in collect, f"collect --help does not list the runtime {entry.name}"
    for text in (collect, help_text("baseline")):
        for entry in POWER_SOURCES:
            assert entry.spec in text, f"--power help does not list {entry.spec}"
    analyze = help_text("analyze")
    for entry in ANALYSES:
        assert entry.name in analyze and entry.help in analyze, (
            f"analyze --help lacks {entry.name}: {entry.help}"
        )
    doctor = help_text("doctor")
    for entry in RUNTIMES:
        assert entry.name in doctor, f"doctor --help does not list the probe {entry.name}"


@pytest.mark.parametrize("entry", RUNTIMES, ids=[e.name for e in RUNTIMES])
def test_runtime_adapter_resolves(entry):
    from edgestats.collectors.adapters.base import Adapter

    cls = entry.adapter_class()
    assert issubclass(cls, Adapter) and cls.framework == entry.name


@pytest.mark.parametrize("entry", POWER_SOURCES, ids=[e.name for e in POWER_SOURCES])
def test_power_source_resolves(entry):
    from edgestats.collectors.power.base import PowerSource

    cls = entry.source_class()
    assert issubclass(cls, PowerSource) and cls.name == entry.name


@pytest.mark.parametrize("entry", ANALYSES, ids=[e.name for e in ANALYSES])
def test_analysis_has_its_function_and_chart_builders(entry):
    assert callable(resolve(entry.analyse)), f"{entry.analyse} is not a function"
    section = resolve(entry.section)
    assert callable(getattr(section, "figures", None)), (
        f"{entry.section} has no figures(result) chart builder"
    )
    assert callable(getattr(section, "sentence", None)), f"{entry.section} has no sentence(result)"
    assert set(entry.needs) <= set(FRAMES), (
        f"{entry.name} needs unknown frames {set(entry.needs) - set(FRAMES)}"
    )


def test_the_demo_extra_installs_every_runtime_the_demo_sweeps_collect():
    """`make demo` installs [demo], not [all] (timed from a fresh clone): a framework added to a
    sample_data/demo_sweep*.toml without its extra would be 'cannot run here' in the demo. The
    sweeps together cover every registered runtime, and make demo collects each of them."""
    import tomllib

    from edgestats.registry.runtimes import RUNTIMES, runtime

    root = Path(__file__).resolve().parents[1]
    makefile = (root / "Makefile").read_text()
    files = sorted((root / "sample_data").glob("demo_sweep*.toml"))
    sweeps = [tomllib.loads(f.read_text())["sweep"] for f in files]
    extras = tomllib.loads((root / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    demo = set(re.fullmatch(r"edgestats\[(.*)\]", extras["demo"][0]).group(1).split(","))
    assert "analyze" in demo, "the demo ends with the report"
    frameworks = {f for sweep in sweeps for f in sweep["framework"]}
    assert {runtime(f).extra for f in frameworks} <= demo
    assert "ncnn" not in frameworks or "pnnx" in demo, "zoo models reach ncnn through pnnx"
    assert frameworks == {r.name for r in RUNTIMES}
    assert any("torch-compile" in sweep.get("runtime", []) for sweep in sweeps)
    for f in files:
        assert f"collect sample_data/{f.name} --db $(DB)" in makefile
    assert "install -c constraints.txt -e '.[demo]'" in makefile


def test_every_runtime_s_extra_is_declared_and_in_all():
    """`pip install 'edgestats[EXTRA]'` is what doctor and collect tell a user to run: the extra
    must exist, and [all] (the dev install) must include it."""
    import tomllib

    extras = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    everything = set(re.fullmatch(r"edgestats\[(.*)\]", extras["all"][0]).group(1).split(","))
    for entry in RUNTIMES:
        assert entry.extra in extras, f"{entry.name}: pyproject.toml has no extra [{entry.extra}]"
        assert entry.extra in everything, f"{entry.name}: [all] does not include [{entry.extra}]"


# -- tests follow the registries -------------------------------------------------------------------
# A test that spells out the whole list of analyses, runtimes or power sources fails the day a
# plug-in is added, in a file the plug-in has no business editing: expectations come from the
# registries instead. Lists of 3 or more names count; fewer are examples, not "the list".

MIN_NAMES = 3


def registered_lists() -> dict[str, tuple[str, ...]]:
    return {
        "analyses": analysis_names(),
        "runtimes": runtime_names(),
        "power sources": power_source_names(),
        "--power auto's order": AUTO_ORDER,
    }


def spelled_out(kind: str, names: tuple[str, ...]) -> set[str]:
    """The ways a message writes a whole list: "a, b, c", "a, b or c", --power's choices."""
    texts = {", ".join(names), names_text(names), names_text(names, "and")}
    if kind == "power sources":
        texts |= {spec_help(), spec_help(with_none=False)}
    return texts


def literal_strings(node: ast.AST) -> list[str] | None:
    """The strings of a list, tuple or set literal made only of strings; None for anything else."""
    if not isinstance(node, (ast.List, ast.Tuple, ast.Set)) or not node.elts:
        return None
    if not all(isinstance(e, ast.Constant) and isinstance(e.value, str) for e in node.elts):
        return None
    return [e.value for e in node.elts]


def whole_list_of(values: list[str], kind: str, names: tuple[str, ...]) -> bool:
    if kind == "--power auto's order":  # the order is the point: tried first to last
        return tuple(values) == names
    return set(values) == set(names)


def hard_coded_lists(path: Path) -> list[str]:
    """ "file:line: ..." for each literal in `path` that is a registry's whole list (as a set) or
    --power auto's order (in order), or a string that spells one out."""
    lists = {kind: names for kind, names in registered_lists().items() if len(set(names)) >= MIN_NAMES}
    texts = {kind: spelled_out(kind, names) for kind, names in lists.items()}
    where = path.relative_to(REPO) if path.is_relative_to(REPO) else path
    source = path.read_text(encoding="utf-8")
    if not any(all(name in source for name in names) for names in lists.values()):
        return []  # no list can be whole where one of its names is missing: no need to parse
    found = []
    for node in ast.walk(ast.parse(source, filename=str(path))):
        values = literal_strings(node)
        if values is not None:
            found += [
                f"{where}:{node.lineno}: the list of {kind}"
                for kind, names in lists.items()
                if whole_list_of(values, kind, names)
            ]
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            found += [
                f"{where}:{node.lineno}: a string that spells out the {kind}"
                for kind, spelled in texts.items()
                if any(text in node.value for text in spelled)
            ]
    return sorted(found, key=lambda hit: int(hit.split(":")[1]))


def test_the_hard_coded_list_finder_sees_each_form(tmp_path):
    runtimes, auto = list(runtime_names()), list(AUTO_ORDER)
    planted = tmp_path / "test_planted.py"
    planted.write_text(
        f"A = {sorted(runtimes)!r}\n"
        f"B = {set(analysis_names())!r}\n"
        f"C = {tuple(power_source_names())!r}\n"
        f"D = {auto!r}\n"
        f"E = {auto[::-1]!r}\n"
        f"F = {'use one of ' + ', '.join(runtimes)!r}\n"
        f"G = {runtimes[:2]!r}\n"
    )
    found = [line.split(": ", 1)[1] for line in hard_coded_lists(planted)]
    assert [line.split(":")[1] for line in hard_coded_lists(planted)] == ["1", "2", "3", "4", "6"]
    assert found == [
        "the list of runtimes",
        "the list of analyses",
        "the list of power sources",
        "the list of --power auto's order",
        "a string that spells out the runtimes",
    ]


def test_no_test_spells_out_a_registry_s_whole_list():
    found = [hit for path in sorted((REPO / "tests").rglob("*.py")) for hit in hard_coded_lists(path)]
    assert not found, (
        "take these from edgestats.registry (analysis_names(), runtime_names(), power_source_names(), "
        "AUTO_ORDER), so a plug-in needs no edit here:\n" + "\n".join(found)
    )
