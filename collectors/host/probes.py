"""Which frameworks, runtimes and tools import here, in which version, and why not.

The framework probes come from the runtime registry (`edgestats.registry.runtimes`): each
entry's modules, pip extra, and its adapter module's `probe_detail(module)`, so a new runtime
is probed without an edit here. Only the probes that are no plug-in (NVML, the analysis
stack) are listed below.

Every probe imports its module in a fresh Python process:
- a broken install (a wheel built for another CPU, a numpy ABI mismatch, a missing CUDA
  library) can crash the importer with SIGILL/SIGSEGV or hang it; the parent only sees a
  dead or timed-out child and reports why;
- the child starts with nothing imported, so its import time is what a fresh worker of
  `edgestats collect` pays, not one made cheap by a module an earlier probe loaded.

Probes run concurrently, each under its own timeout, by default as many at a time as there
are CPUs (at least 2). Measured on a 2-core x86 VM, that finished sooner than starting all
nine at once (9-10 s against 12 s: the imports are CPU-bound) and kept the big imports
(torch, tensorflow, statsmodels) within 2x of their times alone, where starting all at once
inflated import times 2.5-5x. Contention still adds to `import_s` (wall time);
`import_cpu_s` (the child's CPU time) is disturbed less. `--jobs 1` gives uncontended times.

This module imports only the standard library (plus edgestats.errors and the stdlib-only
registry): the probe child imports it first, and anything it pulled in would be counted in, or
hide, a probe's cost. A detail function's module (an adapter) is imported after the timed import.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.metadata
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from typing import Any

from edgestats.errors import EdgestatsError
from edgestats.registry import resolve
from edgestats.registry import runtimes as runtime_registry

DEFAULT_TIMEOUT_S = 120.0  # TensorFlow takes tens of seconds to import on a Raspberry Pi
_MARKER = "EDGESTATS-PROBE-RESULT "  # frameworks may print to stdout; our line is marked
_CHILD_CODE = "import sys; from edgestats.collectors.host.probes import child_main; child_main(sys.argv[1])"


class UnknownProbeError(EdgestatsError):
    """A probe name that is not in the registry."""


class Unusable(Exception):
    """Raised by a detail function: the module imports but cannot be used (e.g. NVML, no driver);
    the probe then tries its next module."""


@dataclass(frozen=True)
class Probe:
    """What to import and how to describe it. Plain data, so it can be sent to the child."""

    name: str
    kind: str  # framework | tool | analysis | module
    modules: tuple[str, ...]  # tried in order; the first that imports is the one used
    extra: str | None = None  # the pip extra of edgestats that installs it
    detail: str | None = None  # "module:function" run in the child on the imported module; a
    # module without that function gives no detail


# The probes that are no plug-in: tools and the analysis stack, optional extras whose absence
# only disables a feature. The frameworks come from the runtime registry (framework_probes).
OTHER_PROBES: tuple[Probe, ...] = (
    Probe("nvml", "tool", ("pynvml",), "nvidia", "edgestats.collectors.power.nvml:probe_detail"),
    Probe("polars", "analysis", ("polars",), "analyze"),
    Probe("statsmodels", "analysis", ("statsmodels.api",), "analyze"),  # .api pulls in scipy: the real cost
    Probe("altair", "analysis", ("altair",), "analyze"),
    Probe("vl_convert", "analysis", ("vl_convert",), "analyze"),
)


def framework_probes() -> list[Probe]:
    """One probe per registered runtime: what `collect` can measure."""
    return [
        Probe(entry.name, "framework", entry.imports, entry.extra, entry.probe_detail)
        for entry in runtime_registry.RUNTIMES
    ]


def all_probes() -> dict[str, Probe]:
    """name -> probe, frameworks first (registry order), then tools and the analysis stack.
    Read at call time, so the list follows the registry."""
    return {probe.name: probe for probe in (*framework_probes(), *OTHER_PROBES)}


def probe_names() -> list[str]:
    return list(all_probes())


def default_jobs() -> int:
    """How many probes import at once by default: one per usable CPU, at least 2 so that
    one hung import cannot hold up all the others until its timeout."""
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return max(2, usable or 1)


def module_probe(module: str) -> Probe:
    """An ad-hoc probe for any importable module (`doctor --module tensorrt`)."""
    return Probe(name=module, kind="module", modules=(module,))


# -- parent side -------------------------------------------------------------------------------


def run_probes(
    names: Iterable[str] | None = None,
    *,
    modules: Iterable[str] = (),
    timeout_s: float = DEFAULT_TIMEOUT_S,
    max_workers: int | None = None,
    on_start: Callable[[list[str]], None] | None = None,
    on_done: Callable[[dict[str, Any]], None] | None = None,
) -> dict[str, dict[str, Any]]:
    """Run the named probes (all by default) plus ad-hoc module probes, concurrently.

    `on_start` gets the probe names before any runs, `on_done` each result as it finishes (from
    the thread that ran it), so a caller can show progress: TensorFlow alone takes seconds.

    Returns name -> result (see `run_probe`), in `all_probes()` order. `max_workers` is how many
    children import at once (default `default_jobs()`; lower it where TensorFlow and PyTorch
    together do not fit in RAM, raise it to start everything at once).
    """
    known = all_probes()
    selected = list(known) if names is None else list(names)
    unknown = [n for n in selected if n not in known]
    if unknown:
        raise UnknownProbeError(f"unknown probe {', '.join(unknown)}: choose from {', '.join(known)}")
    # An ad-hoc module named like a selected probe would overwrite its result: drop it.
    extra = [m for m in dict.fromkeys(modules) if m not in selected]
    probes = [known[n] for n in dict.fromkeys(selected)] + [module_probe(m) for m in extra]
    if not probes:
        return {}
    if on_start:
        on_start([p.name for p in probes])

    def run(probe: Probe) -> dict[str, Any]:
        result = run_probe(probe, timeout_s=timeout_s)
        if on_done:
            on_done(result)
        return result

    with ThreadPoolExecutor(max_workers=min(max_workers or default_jobs(), len(probes))) as pool:
        results = list(pool.map(run, probes))
    return {r["name"]: r for r in results}


def run_probe(probe: Probe, *, timeout_s: float = DEFAULT_TIMEOUT_S) -> dict[str, Any]:
    """Import `probe`'s module in a fresh interpreter and report.

    {name, kind, available, version, import_s, import_cpu_s, detail, reason}; reason says why
    not (and what to install) when available is false, and is None otherwise.
    """
    proc = subprocess.Popen(
        [sys.executable, "-c", _CHILD_CODE, json.dumps(asdict(probe))],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        errors="replace",
        start_new_session=True,  # own process group: a timeout kills its children too
    )
    try:
        out, err = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        with contextlib.suppress(subprocess.TimeoutExpired):  # a grandchild that left the group
            proc.communicate(timeout=5)  # may still hold the pipes
        return _unavailable(
            probe,
            f"importing {probe.modules[0]} did not finish within {timeout_s:g} s "
            "(hung, or very slow here: raise --timeout)",
        )
    result = _parse_child_output(out)
    if result is None:
        return _unavailable(
            probe,
            f"the probe process {_describe_exit(proc.returncode)} while importing "
            f"{probe.modules[0]}{_last_line(err)}",
        )
    return result


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (OSError, AttributeError):  # already gone, or no process groups (Windows)
        proc.kill()


def _parse_child_output(out: str) -> dict[str, Any] | None:
    for line in reversed(out.splitlines()):
        if line.startswith(_MARKER):
            try:
                return json.loads(line[len(_MARKER) :])
            except json.JSONDecodeError:
                return None
    return None


def _describe_exit(returncode: int) -> str:
    if returncode < 0:
        try:
            return f"was killed by {signal.Signals(-returncode).name}"
        except ValueError:
            return f"was killed by signal {-returncode}"
    return f"exited with status {returncode} without a result"


def _last_line(stderr: str) -> str:
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    return f": {lines[-1][:300]}" if lines else ""


def _result(probe: Probe, **fields: Any) -> dict[str, Any]:
    """A probe result with every key present, so JSON consumers never miss one."""
    base = {
        "name": probe.name,
        "kind": probe.kind,
        "available": False,
        "version": None,
        "import_s": None,
        "import_cpu_s": None,
        "detail": {},
        "reason": None,
    }
    return {**base, **fields}


def _unavailable(probe: Probe, reason: str) -> dict[str, Any]:
    return _result(probe, reason=reason)


def install_hint(probe: Probe) -> str:
    return f": pip install 'edgestats[{probe.extra}]'" if probe.extra else ""


# -- child side (runs in the fresh interpreter) -----------------------------------------------


def child_main(spec_json: str) -> None:
    """Entry point of the probe process: probe, print one marked JSON line."""
    spec = json.loads(spec_json)
    probe = Probe(**{**spec, "modules": tuple(spec["modules"])})
    result = probe_here(probe)
    sys.stdout.write(_MARKER + json.dumps(result, default=str) + "\n")
    sys.stdout.flush()


def probe_here(probe: Probe) -> dict[str, Any]:
    """Try the probe's modules in order in this process; the first that imports is reported."""
    failures = []
    for module_name in probe.modules:
        wall0, cpu0 = time.perf_counter(), time.process_time()
        try:
            module = importlib.import_module(module_name)
        except ImportError as exc:
            failures.append(str(exc))
            continue
        except Exception as exc:  # a broken install raises all sorts (AttributeError, RuntimeError, ...)
            failures.append(f"importing {module_name} failed: {type(exc).__name__}: {first_line(exc)}")
            continue
        import_s, import_cpu_s = time.perf_counter() - wall0, time.process_time() - cpu0
        try:
            detail = _detail(probe, module)
        except Unusable as exc:
            failures.append(str(exc))
            continue
        except Exception as exc:  # the import worked; only the extra facts are missing
            detail = {"detail_error": f"{type(exc).__name__}: {first_line(exc)}"}
        return _result(
            probe,
            available=True,
            version=version_of(module_name),
            import_s=round(import_s, 4),
            import_cpu_s=round(import_cpu_s, 4),
            detail={"module": module_name, **detail},
        )
    hint = install_hint(probe) if all(f.startswith("No module named") for f in failures) else ""
    return _unavailable(probe, "; ".join(failures) + hint)


def _detail(probe: Probe, module: Any) -> dict[str, Any]:
    """The probe's detail function on the imported module; {} when it has none."""
    if not probe.detail:
        return {}
    module_name, _, function = probe.detail.partition(":")
    detail_function = getattr(resolve(module_name), function, None)
    return detail_function(module) if detail_function else {}


def first_line(exc: BaseException) -> str:
    """An exception's message, first line, at most 300 characters: one line of a report."""
    text = str(exc).strip()
    return text.splitlines()[0][:300] if text else ""


def version_of(module_name: str) -> str | None:
    """`__version__` of the top-level package, else its distribution's version."""
    top = module_name.split(".")[0]
    version = getattr(sys.modules.get(top), "__version__", None)
    if isinstance(version, str):
        return version
    for dist in importlib.metadata.packages_distributions().get(top, []):
        try:
            return importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            continue
    return None
