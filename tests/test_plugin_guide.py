"""The plug-in guide runs (docs/architecture.md §8). Each recipe (add an analysis, a runtime, a power
source) is followed in a temporary copy of the repository: the example plug-in's files are written
there, exactly those the recipe lists; the registry, property and contract tests that pick a
plug-in up then run on the copy; and the files that changed, golden files included, must be the
recipe's list, no more and no fewer. A recipe that forgets a file, or a test that would need an edit
the recipe does not name, fails here.

The example plug-ins' modules are tests/data/plugin_guide/*.py: an analysis (`throughput`) with its
report section and test, a runtime (`numpyref`: cnn9 in NumPy alone, no framework) and a power
source (`ina260`, on a fake hwmon tree) with its test. Their one-entry edits (registry lines, docs
sections, the extra, the demo sweep, the chart case) are written here, as the recipes say.
"""

from __future__ import annotations

import fnmatch
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from repo_copy import copy_env, copy_repository, package_tree, snapshot

REPO = Path(__file__).parents[1]
GUIDE = REPO / "docs" / "architecture.md"
TEMPLATES = Path(__file__).parent / "data" / "plugin_guide"
ANALYSIS, RUNTIME, POWER = "throughput", "numpyref", "ina260"
# recipe heading in §8 -> the example plug-in's name (NAME in the recipe)
RECIPES = {"### Add an analysis": ANALYSIS, "### Add a runtime": RUNTIME, "### Add a power source": POWER}
# What each recipe promises besides its file list (the rules a newcomer otherwise learns by failing).
RULES = {
    "### Add an analysis": ("bounded.py", "positive_mean", "unit suffix", "EDGESTATS_UPDATE_GOLDEN=NAME"),
    "### Add a runtime": ("check_config", "unknown", "demo", "[all]", "import_framework"),
    "### Add a power source": ("self.root", "auto", "is_available"),
}

ANALYSIS_ENTRY = """    AnalysisEntry(
        "throughput",
        "Throughput: inferences per second",
        "mean inferences per second per configuration, across runs",
        "edgestats.analysis.throughput.analysis:analyse",
        "edgestats.reports.sections.throughput",
        "docs/cli/analyze.md#throughput--inferences-per-second",
    ),
"""
ANALYSIS_PACKAGE_DOC = (
    '''"""The throughput analysis: inferences per second per configuration, across runs."""\n'''
)
ANALYSIS_DOC = """### throughput — inferences per second

- Per group (default: per configuration), `metric: "throughput_per_s"`: the mean across runs of
  batch size / mean latency, with a t interval on the log scale (it stays above 0; `n_unit: runs`).

"""
CHART_CASE = (
    '    "throughput_rates": ("throughput", "rates", lambda f: throughput_section.rates_chart(f["rates"])),\n'
)
CHART_IMPORT = "from edgestats.reports.sections import throughput as throughput_section\n"
RUNTIME_ENTRY = """    RuntimeEntry(
        "numpyref",
        "NumPy reference",
        "edgestats.collectors.adapters.numpyref:NumpyRefAdapter",
        ("numpy",),
        "numpyref",
        "the zoo's cnn9 in NumPy alone, a reference with no framework",
        "docs/runtimes.md#numpyref",
    ),
"""
RUNTIME_DOC = """## numpyref

The zoo's cnn9 computed by NumPy alone (`edgestats.collectors.adapters.numpyref`): a reference
with no framework, the plug-in guide's example.

- **Runtimes:** `numpyref`. **Precisions:** fp32. **Accelerators:** `cpu`. **Models:** cnn9.
- **Model file the worker loads:** `.npz`, cnn9's seeded weights (Glorot uniform, as Keras's).
- **Install:** `pip install 'edgestats[numpyref]'` (module `numpy`).

"""
POWER_ENTRY = """    PowerSourceEntry(
        "ina260",
        "TI INA260",
        "edgestats.collectors.power.ina260:Ina260Source",
        "a TI INA260 power monitor's board input (hwmon sysfs)",
        "docs/power-sources.md#ina260",
    ),
"""
POWER_DOC = """
## ina260

A TI INA260 power monitor on I2C (hwmon driver `ina2xx`), the plug-in guide's example.

- **Reads:** `/sys/class/hwmon/hwmon*/power1_input` (µW) of the device named `ina260`.
- **Rails:** `board`, the board's input. **Tried by auto:** yes, after jetson.
"""


# -- the guide ------------------------------------------------------------------------------------


def recipe_text(heading: str) -> str:
    """One recipe of §8: from its heading to the next heading."""
    text = GUIDE.read_text(encoding="utf-8")
    start = text.index(f"\n{heading}\n") + 1
    ends = [i for i in (text.find("\n### ", start), text.find("\n## ", start)) if i != -1]
    return text[start : min(ends, default=len(text))]


def recipe_files(heading: str) -> list[str]:
    """The files a recipe lists: the path that opens each numbered item, NAME filled in."""
    items = re.findall(r"^\d+\. `([^`]+)`", recipe_text(heading), flags=re.M)
    return [item.replace("NAME", RECIPES[heading]) for item in items]


def test_each_recipe_lists_its_files_and_states_its_rules():
    for heading in RECIPES:
        files = recipe_files(heading)
        assert files, f"{heading}: no numbered `file` items in docs/architecture.md §8"
        for pattern in files:
            folder = Path(pattern).parent
            if RECIPES[heading] in folder.parts:  # a package the recipe makes: its parent exists
                folder = Path(*folder.parts[: folder.parts.index(RECIPES[heading])])
            folder = REPO / folder
            assert folder.is_dir(), f"{heading}: {pattern} is in no folder of the repository"
        text = " ".join(recipe_text(heading).split())
        missing = [rule for rule in RULES[heading] if rule not in text]
        assert not missing, f"{heading} does not say {missing}"


# -- following the recipes in a copy ----------------------------------------------------------------


def edit(path: Path, change) -> None:
    path.write_text(change(path.read_text(encoding="utf-8")), encoding="utf-8")


def before_line(text: str, opening: str, closing: str, insert: str) -> str:
    """`insert` placed at the line `closing` that first follows `opening`."""
    at = text.index(closing, text.index(opening)) + 1
    return text[:at] + insert + text[at:]


def before_heading(text: str, heading: str, insert: str) -> str:
    """`insert` before `heading`, or at the end where the file has no such heading."""
    at = text.find(f"\n{heading}\n")
    return text + "\n" + insert if at == -1 else text[: at + 1] + insert + text[at + 1 :]


def add_analysis(copy: Path) -> None:
    package = copy / "edgestats" / "analysis" / ANALYSIS
    package.mkdir()
    (package / "__init__.py").write_text(ANALYSIS_PACKAGE_DOC, encoding="utf-8")
    shutil.copy(TEMPLATES / "analysis.py", package / "analysis.py")
    edit(
        copy / "pyproject.toml",
        lambda t: t.replace(
            '    "edgestats.analysis",\n',
            f'    "edgestats.analysis",\n    "edgestats.analysis.{ANALYSIS}",\n',
            1,
        ),
    )
    shutil.copy(TEMPLATES / "section.py", copy / "reports" / "sections" / f"{ANALYSIS}.py")
    shutil.copy(TEMPLATES / "analysis_check.py", copy / "tests" / "analysis" / f"test_{ANALYSIS}.py")
    edit(
        copy / "edgestats/registry/analyses.py",
        lambda t: before_line(t, "ANALYSES:", "\n)\n", ANALYSIS_ENTRY),
    )
    edit(
        copy / "docs/cli/analyze.md", lambda t: before_heading(t, "## The report (`--out DIR`)", ANALYSIS_DOC)
    )

    def chart_case(text: str) -> str:
        imports = [m.end() for m in re.finditer(r"^from edgestats\..*\n", text, flags=re.M)]
        text = text[: imports[-1]] + CHART_IMPORT + text[imports[-1] :]
        return before_line(text, "BUILDERS = {", "\n}\n", CHART_CASE)

    edit(copy / "tests/reports/test_charts.py", chart_case)


def add_runtime(copy: Path) -> None:
    shutil.copy(TEMPLATES / "adapter.py", copy / "collectors" / "adapters" / f"{RUNTIME}.py")
    edit(
        copy / "edgestats/registry/runtimes.py", lambda t: before_line(t, "RUNTIMES:", "\n)\n", RUNTIME_ENTRY)
    )
    edit(copy / "docs/runtimes.md", lambda t: before_heading(t, "## Not covered here", RUNTIME_DOC))

    def extras(text: str) -> str:
        text = before_line(text, "[project.optional-dependencies]", "\nall = [", f'{RUNTIME} = ["numpy"]\n')
        text, n = re.subn(r'^((?:all|demo) = \["edgestats\[[^\]]*)\]', rf"\1,{RUNTIME}]", text, flags=re.M)
        assert n == 2, "pyproject.toml's [all] and [demo] extras are no longer one line each"
        return text

    edit(copy / "pyproject.toml", extras)
    demo = copy / "sample_data" / "demo_sweep_new_runtimes.toml"
    edit(demo, lambda t: re.sub(r"^(framework = \[.*)\]$", rf'\1, "{RUNTIME}"]', t, count=1, flags=re.M))


def add_power_source(copy: Path) -> None:
    shutil.copy(TEMPLATES / "power_source.py", copy / "collectors" / "power" / f"{POWER}.py")
    shutil.copy(TEMPLATES / "power_check.py", copy / "tests" / "collectors" / f"test_power_{POWER}.py")
    edit(
        copy / "edgestats/registry/power.py", lambda t: before_line(t, "POWER_SOURCES:", "\n)\n", POWER_ENTRY)
    )
    edit(copy / "docs/power-sources.md", lambda t: t + POWER_DOC)


# The tests that pick a plug-in up, run on the copy: every registry check, the bounded-interval
# property test over every analysis, the chart case (written by EDGESTATS_UPDATE_GOLDEN=NAME, then
# the checks every chart gets), the adapter contract, and power-source selection.
TESTS = [
    "tests/test_registries.py",
    "tests/test_module_index.py",
    "tests/analysis/test_bounded_intervals.py::test_no_analysis_gives_an_interval_outside_its_quantity_s_range",
    f"tests/analysis/test_{ANALYSIS}.py",
    f"tests/reports/test_charts.py::test_chart_spec_matches_golden[{ANALYSIS}_rates]",
    "tests/reports/test_charts.py::test_update_golden_names_a_golden_file",
    "tests/reports/test_charts.py::test_every_chart_draws_its_intervals",
    f"tests/collectors/test_adapters.py::test_every_adapter_is_available_here[{RUNTIME}]",
    f"tests/collectors/test_adapters.py::test_cnn9_runs_through_every_phase[{RUNTIME}-{RUNTIME}]",
    f"tests/collectors/test_adapters.py::test_check_config_rejects_unknown_runtime_and_precision[{RUNTIME}]",
    "tests/collectors/test_adapters.py::test_adapter_modules_import_no_framework",
    "tests/collectors/test_power.py",
    f"tests/collectors/test_power_{POWER}.py",
]


def write_module_index(copy: Path) -> None:
    """The recipes' last step, docs/architecture.md's module index, as they say: run in the copy."""
    command = [sys.executable, "tests/module_index.py", "--write"]
    subprocess.run(command, cwd=copy, env=copy_env(copy), check=True, capture_output=True, text=True)


def run_tests(copy: Path, packages: Path, basetemp: Path) -> subprocess.CompletedProcess:
    env = copy_env(packages)
    env["EDGESTATS_UPDATE_GOLDEN"] = ANALYSIS
    # its own --basetemp: pytest's rotation of numbered temp folders must not reach this session's
    options = ["-q", "-p", "no:cacheprovider", "-n", "0", f"--basetemp={basetemp}"]
    command = [sys.executable, "-m", "pytest", *options, *TESTS]
    return subprocess.run(command, cwd=copy, env=env, capture_output=True, text=True, timeout=600)


def lint(copy: Path, changed: list[str]) -> None:
    """ruff (make lint's) on the Python files the recipes wrote, where ruff is installed."""
    ruff = shutil.which("ruff", path=str(Path(sys.executable).parent)) or shutil.which("ruff")
    python = [path for path in changed if path.endswith(".py")]
    if ruff is None or not python:
        return
    for command in (["check"], ["format", "--check"]):
        result = subprocess.run(
            [ruff, *command, "--no-cache", *python], cwd=copy, capture_output=True, text=True
        )
        assert result.returncode == 0, f"ruff {' '.join(command)}:\n{result.stdout}{result.stderr}"


@pytest.mark.slow
def test_the_recipes_add_one_plug_in_of_each_kind_touching_only_their_files(tmp_path):
    copy = copy_repository(tmp_path / "repo")
    before = snapshot(copy)
    add_analysis(copy)
    add_runtime(copy)
    add_power_source(copy)
    write_module_index(copy)
    result = run_tests(copy, package_tree(copy, tmp_path / "packages"), tmp_path / "basetemp")
    assert result.returncode == 0, (
        f"the tests fail on the plug-ins:\n{result.stdout[-8000:]}{result.stderr[-2000:]}"
    )

    after = snapshot(copy)
    changed = sorted(path for path in before.keys() | after.keys() if before.get(path) != after.get(path))
    listed = [pattern for heading in RECIPES for pattern in recipe_files(heading)]
    unlisted = [path for path in changed if not any(fnmatch.fnmatch(path, p) for p in listed)]
    assert not unlisted, f"changed, but no recipe of docs/architecture.md §8 lists them: {unlisted}"
    untouched = [pattern for pattern in listed if not any(fnmatch.fnmatch(path, pattern) for path in changed)]
    assert not untouched, f"listed by a recipe, but the example plug-in did not need them: {untouched}"
    lint(copy, changed)
