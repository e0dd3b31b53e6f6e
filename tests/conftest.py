"""Shared fixtures, and the guard that keeps the fast lane fast.

The builders live in tests/builders.py (tests/ is on sys.path via pytest's `pythonpath` setting,
so test modules can `from builders import ...`).

Lanes (markers registered in pyproject.toml): `make test-fast` runs
`-m "not frameworks and not spark and not browser and not packaging"`; `make test` runs all of
them. A test that imports a framework without the `frameworks` marker would slow the fast lane
down by seconds (torch and TensorFlow take 2-10 s each to import), so the guard below fails it.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import uuid
from pathlib import Path

import pytest
from builders import make_results_db, write_inference_run, write_training_run  # noqa: F401  (re-exported)
from quiet_machine import Lane, Wait, busy_during, tell_how_busy, wait_for_quiet

from edgestats.collectors.telemetry.sentinel import read_state

# Two xdist workers on two cores each start framework processes whose OpenMP threads (PyTorch's
# intra-op pool) spin while waiting for work, taking a core from the other worker's tests. Passive
# waiting gives it back; the tests' assertions do not depend on it. A user's setting wins.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

# The user cache (edgestats.cachedir: the report's script bundle, the default model cache) is one
# folder per test run, shared by its xdist workers: tests never write to the user's home, and each
# run starts cold as on a new machine.
_RUN = os.environ.get("PYTEST_XDIST_TESTRUNUID") or f"pid{os.getpid()}"
os.environ["XDG_CACHE_HOME"] = str(Path(tempfile.gettempdir()) / f"edgestats-tests-{_RUN}" / "cache")
# and the user's settings (the name `collect --device-name` remembers) are the run's own too
os.environ["XDG_CONFIG_HOME"] = str(Path(tempfile.gettempdir()) / f"edgestats-tests-{_RUN}" / "config")


def _parallel(config: pytest.Config) -> bool:
    return bool(getattr(config.option, "numprocesses", 0))


def pytest_configure(config: pytest.Config) -> None:
    """The run's id is chosen here, before xdist starts its workers, so the process that ends the
    run knows which cache folder its workers shared and removes it (pytest_sessionfinish)."""
    if not hasattr(config, "workerinput") and _parallel(config) and config.option.testrunuid is None:
        config.option.testrunuid = uuid.uuid4().hex


def pytest_sessionfinish(session: pytest.Session) -> None:
    """The run's cache folder goes with the run (left behind, hundreds piled up in the temp folder)."""
    config = session.config
    if hasattr(config, "workerinput"):
        return  # a worker: the folder is shared with the others until the run ends
    run = config.option.testrunuid if _parallel(config) else f"pid{os.getpid()}"
    shutil.rmtree(Path(tempfile.gettempdir()) / f"edgestats-tests-{run}", ignore_errors=True)


# Top-level names of the framework packages the `frameworks` marker stands for.
FRAMEWORK_MODULES = ("torch", "tensorflow", "keras", "onnxruntime", "ai_edge_litert")
_LOADED_AT_SETUP = pytest.StashKey[frozenset]()


def frameworks_loaded() -> frozenset[str]:
    return frozenset(name for name in FRAMEWORK_MODULES if name in sys.modules)


# Markers of the tests that take seconds to minutes each (framework workers, Spark, Chromium, a wheel build).
HEAVY_MARKERS = ("frameworks", "spark", "browser", "packaging")


# The xdist groups, longest first (measured: the training chain is about 4 minutes, the zoo and the
# adapters about a minute each): the longest starts at once, on its own worker (LPT scheduling).
GROUPS_LONGEST_FIRST = ("training", "zoo", "adapters", "spark-readback", "doctor")


@pytest.hookimpl(trylast=True)  # after pytest-xdist's, which adds @group to the grouped nodeids
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Under pytest-xdist, the xdist groups go first (each is a chain of long tests that one worker
    runs in a row), then the modules holding heavy tests, then the rest: the workers start on the
    minute-long tests and the many sub-second ones fill in at the end, instead of one worker
    finishing a long test alone. The sort is stable and otherwise keyed by module, so a module's
    tests stay together and its module-scoped fixtures are built once per worker. Serial runs
    keep file order."""
    if not hasattr(config, "workerinput"):
        return
    grouped = [item for item in items if item.get_closest_marker("xdist_group")]
    if config.getvalue("loadgroup") and grouped and "@" not in grouped[0].nodeid:
        raise pytest.UsageError(
            "pytest-xdist's --dist loadgroup left the xdist_group tests ungrouped (pytest "
            f"{pytest.__version__} with this pytest-xdist): install with constraints.txt (pytest<9)"
        )
    heavy_modules = {item.path for item in items if any(item.get_closest_marker(m) for m in HEAVY_MARKERS)}

    def group_rank(item: pytest.Item) -> int:
        marker = item.get_closest_marker("xdist_group")
        if marker is None:
            return len(GROUPS_LONGEST_FIRST) + 1
        name = marker.args[0] if marker.args else marker.kwargs.get("name")
        return GROUPS_LONGEST_FIRST.index(name) if name in GROUPS_LONGEST_FIRST else len(GROUPS_LONGEST_FIRST)

    items.sort(key=lambda item: (group_rank(item), item.path not in heavy_modules))


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_setup(item: pytest.Item):
    item.stash[_LOADED_AT_SETUP] = frameworks_loaded()
    return (yield)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item):
    """Fails an unmarked test that loaded a framework in its fixtures or its body. Once a marked
    test has loaded one, later tests in the same process cannot be checked: the fast lane, where
    no marked test runs, is where this bites."""
    result = yield
    new = frameworks_loaded() - item.stash.get(_LOADED_AT_SETUP, frozenset())
    if new and item.get_closest_marker("frameworks") is None:
        pytest.fail(
            f"{item.nodeid} imported {', '.join(sorted(new))}: mark it @pytest.mark.frameworks "
            "so the fast lane leaves it out",
            pytrace=False,
        )
    return result


@pytest.hookimpl(wrapper=True)
def pytest_make_collect_report(collector: pytest.Collector):
    """Fails, in a lane that leaves framework tests out, the collection of a test module that imports
    a framework at its top: every run of that lane would pay for the import. Import it inside the
    marked tests (or their fixtures) instead."""
    before = frameworks_loaded()
    report = yield
    markexpr = collector.config.getoption("markexpr", "") or ""
    if isinstance(collector, pytest.Module) and "not frameworks" in markexpr and report.outcome == "passed":
        new = frameworks_loaded() - before
        if new:
            report.outcome = "failed"
            report.longrepr = (
                f"{collector.path}: importing this module loads {', '.join(sorted(new))}; "
                "import it inside the @pytest.mark.frameworks tests that need it"
            )
    return report


_QUIET_LANE = Lane()
_QUIET_WAIT = pytest.StashKey[Wait]()
_QUIET_BUSY = pytest.StashKey[dict]()


@pytest.fixture(autouse=True)
def quiet_machine(request: pytest.FixtureRequest):
    """Tests marked `quiet` first wait for a quiet machine, by the noise sentinel's rule, for a
    bounded time (tests/quiet_machine.py); the hooks below measure the machine during the test
    and, when it fails, say how busy it was."""
    if request.node.get_closest_marker("quiet") is not None:
        request.node.stash[_QUIET_WAIT] = wait_for_quiet(_QUIET_LANE)
    yield


@pytest.hookimpl(wrapper=True, specname="pytest_runtest_call")
def pytest_runtest_call_of_quiet_tests(item: pytest.Item):
    """The machine's state before and after a quiet test's call: how busy it was meanwhile."""
    if _QUIET_WAIT not in item.stash:
        return (yield)
    before = read_state()
    try:
        return (yield)
    finally:
        item.stash[_QUIET_BUSY] = {"figures": busy_during(before, read_state()), "before": before}


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    """A quiet test's failure says how busy the machine was while it ran (its summary line too)."""
    report = yield
    measured = item.stash.get(_QUIET_BUSY, None)
    if report.when == "call" and report.failed and measured is not None:
        tell_how_busy(report, measured["figures"], item.stash[_QUIET_WAIT], measured["before"])
    return report


@pytest.fixture(scope="session")
def results_db_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Built once per session (per xdist worker): creating a DB runs every migration."""
    path = make_results_db(tmp_path_factory.mktemp("results-template") / "results.duckdb")
    assert not Path(f"{path}.wal").exists(), (
        "the builder left a WAL: a copy of the file alone would miss rows"
    )
    return path


@pytest.fixture
def results_db(tmp_path: Path, results_db_template: Path) -> Path:
    """A results DB of the test's own (tests may write to it): a copy of the session's template,
    the same rows make_results_db writes, at a fraction of the cost of building it."""
    path = tmp_path / "results.duckdb"
    shutil.copyfile(results_db_template, path)
    return path


@pytest.fixture(scope="session")
def model_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`collect --cache-dir` for every test of the session: preparing a model (ONNX export,
    TFLite conversion) takes a framework import and seconds, and the cache is keyed by everything
    the file depends on, so tests that collect the same model share it safely.

    One folder for the whole test run, shared by its xdist workers: the cache is written the way
    concurrent collects write it (a file and then its sidecar, each renamed into place), so two
    workers preparing one model both succeed. `make test` also hands its quiet lane the parallel
    lane's folder (EDGESTATS_TEST_MODEL_CACHE), so a model is prepared once per `make test`."""
    shared = os.environ.get("EDGESTATS_TEST_MODEL_CACHE")
    if shared:
        folder = Path(shared)
    else:  # the run's base folder (a worker's is popen-gwN inside it), which pytest's retention cleans up
        base = tmp_path_factory.getbasetemp()
        folder = (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / "model-cache"
    folder.mkdir(parents=True, exist_ok=True)
    return folder
