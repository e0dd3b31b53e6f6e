"""Every registry entry is complete: its code resolves, its docs section exists and names it, its
help text is non-empty and shown by the CLI, and an analysis has its chart builders.

A plug-in added without one of these fails here, not in front of a user."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from edgestats.cli import app
from edgestats.registry import resolve
from edgestats.registry.analyses import ANALYSES, FRAMES
from edgestats.registry.power import POWER_SOURCES
from edgestats.registry.runtimes import RUNTIMES

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
