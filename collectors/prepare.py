"""Before a measured run, in its own process: turn a zoo model into the file the worker loads.

    python -m edgestats.collectors.prepare CONFIG_JSON CACHE_DIR
        -> prints {"artifact": PATH, "cache": "hit" | "built" | "rebuilt: WHY"}
    python -m edgestats.collectors.prepare CONFIGS_JSON CACHE_DIR   (a JSON list; "-": stdin)
        -> prints one line per configuration, as it finishes:
           {"key": KEY, "artifact": PATH, "cache": ...} or {"key": KEY, "error": "Type: why"}

Conversions (Keras -> .tflite, PyTorch -> .onnx, TorchScript tracing) are slow and need other
frameworks than the one measured, so they happen here, once per (framework, runtime, model,
precision, seed), cached; the worker's load_model phase then loads a file, as a deployed
application would.

The cache: one folder per key (`cache_key`) holding the model file, its sidecar and
`artifact.json`, written last. artifact.json names the file relative to its folder, so a cache
folder copied elsewhere works from there, and carries the file's SHA-256, computed when it was
written. A lookup that finds the file missing, changed (cut short, corrupt) or without a hash
(an artifact.json of an older edgestats, which held absolute paths) is a miss: the folder is
emptied and the model built again, and the rebuild says why on stderr (the run's log) and in
the printed "cache" field. Builds of one key are serialised by a lock on the folder, so
concurrent collects never build, or clear, the same folder at once.

A killed build leaves nothing outside its key's folder: the converters' temporary files go to
`.tmp-<pid>` inside it for the build. What it leaves inside (that folder, the half-built files,
a half-written artifact.json) is cleared by the next build of the key, or by
`remove_dead_builds` (`edgestats prepare` calls it first), which touches only folders whose
lock nobody holds.
"""

from __future__ import annotations

import contextlib
import fcntl
import gc
import hashlib
import json
import os
import shutil
import sys
import tempfile
import traceback
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from edgestats.collectors.core.runconfig import RunConfig
from edgestats.collectors.generation.engines import builder_class
from edgestats.registry.runtimes import runtime

ARTIFACT_FIELDS = ("framework", "runtime", "model", "precision", "seed", "accelerator", "extra")
MARKER = "artifact.json"  # written last: its presence means the cached model file is complete
MARKER_FORMAT = 2  # 2: a path relative to the key's folder and the file's sha256
LOCK = ".lock"
NO_ENTRY = "not cached yet"
BUILD_TMP = ".tmp-"  # + the builder's pid: its temporary folder inside the key's folder


def cache_key(config: RunConfig) -> str:
    """What the model file depends on (not threads or iterations; batch size only where the
    adapter's file fixes it: its `artifact_fields`, left out of the key when empty, so every
    other adapter's key is what it always was; for generation, the engine's)."""
    data = {name: getattr(config, name) for name in ARTIFACT_FIELDS}
    try:
        fields = getattr(_builder(config), "artifact_fields", ())
    except KeyError:  # not a registered framework: the sweep checks report it
        fields = ()
    data.update({name: getattr(config, name) for name in fields})
    return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()[:20]


def _builder(config: RunConfig) -> Any:
    """The class whose prepare() builds `config`'s file: the generation engine for kind
    "generation", else the runtime's adapter (looked up through this module's `runtime`)."""
    if config.kind == "generation":
        return builder_class(config)
    return runtime(config.framework).adapter_class()


def content_sha256(path: Path) -> str:
    """SHA-256 of a file's bytes (through a link); for a folder (a SavedModel), of every file in
    it by relative name and bytes."""
    digest = hashlib.sha256()
    files = [path] if not path.is_dir() else sorted(p for p in path.rglob("*") if p.is_file())
    for file in files:
        if file != path:
            digest.update(str(file.relative_to(path)).encode() + b"\0")
        with open(file, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                digest.update(chunk)
    return digest.hexdigest()


def lookup(config: RunConfig, cache_root: Path) -> tuple[str | None, str | None]:
    """(artifact path, None) for a usable cache entry (the path is None when the runtime loads
    no prepared file), or (None, why the entry cannot be used)."""
    folder = Path(cache_root) / cache_key(config)
    marker = folder / MARKER
    if not marker.is_file():
        return None, NO_ENTRY
    try:
        entry = json.loads(marker.read_text())
        named = entry["artifact"]
    except (OSError, ValueError, TypeError, KeyError):
        return None, f"{marker} is unreadable"
    if named is None:
        return None, None
    path = folder / named  # an absolute path (older artifact.json) stays as it is
    if not entry.get("sha256"):
        return None, f"{MARKER} holds no content hash (written by an older edgestats)"
    if not path.exists():
        return None, f"the cached model file {path} is missing"
    if content_sha256(path) != entry["sha256"]:
        return None, f"the cached model file {path} does not match its SHA-256 (cut short or corrupt)"
    return str(path), None


def cached_artifact(config: RunConfig, cache_root: Path) -> tuple[bool, str | None]:
    """(True, path) when an earlier prepare of this model finished and its file is intact; no
    subprocess needed. (False, None) sends the run to prepare(), which rebuilds."""
    artifact, problem = lookup(config, cache_root)
    return problem is None, artifact


@contextlib.contextmanager
def _locked(folder: Path) -> Iterator[None]:
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / LOCK, "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        yield


def _clear(folder: Path) -> None:
    """Empty a key's folder (but its lock) so the adapter builds every file again: its own
    "already prepared" checks would otherwise take the damaged file back."""
    for entry in folder.iterdir():
        if entry.name == LOCK:
            continue
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry)
        else:
            entry.unlink()


def _write_marker(folder: Path, artifact: Path | None) -> None:
    entry: dict[str, object] = {"format": MARKER_FORMAT, "artifact": None}
    if artifact is not None:
        artifact = Path(artifact)
        try:
            named = str(artifact.relative_to(folder))  # the adapters build into the folder
        except ValueError:
            named = str(artifact.resolve())
        entry.update(artifact=named, sha256=content_sha256(artifact))
    tmp = folder / f".{MARKER}.{os.getpid()}"
    tmp.write_text(json.dumps(entry, sort_keys=True))
    os.replace(tmp, folder / MARKER)


def prepare_cached(config: RunConfig, cache_root: Path) -> tuple[Path | None, str]:
    """The model file for `config`, from the cache or built into it; and what the cache did:
    "hit", "built", or "rebuilt: WHY" (also written to stderr, the run's log)."""
    folder = Path(cache_root) / cache_key(config)
    with _locked(folder):
        artifact, problem = lookup(config, cache_root)  # again: another process may have just built it
        if problem is None:
            return (Path(artifact) if artifact else None), "hit"
        if problem != NO_ENTRY:
            print(
                f"edgestats: rebuilding the cached model in {folder}: {problem}", file=sys.stderr, flush=True
            )
        _clear(folder)  # nothing there is vouched for by an artifact.json: build it all
        with _private_tmp(folder):
            built = _builder(config).prepare(config, folder)
        _write_marker(folder, built)
    return built, "built" if problem == NO_ENTRY else f"rebuilt: {problem}"


@contextlib.contextmanager
def _private_tmp(folder: Path) -> Iterator[None]:
    """Point the converters' temporary files (tempfile, and $TMPDIR for their helper processes)
    at a folder inside the key's locked folder for the build: a builder killed mid-build then
    leaves them where the next build of the key, or `remove_dead_builds`, clears them, not in
    /tmp. Removed when the build ends, before artifact.json is written."""
    private = folder / f"{BUILD_TMP}{os.getpid()}"
    private.mkdir()
    saved = tempfile.tempdir, os.environ.get("TMPDIR")
    tempfile.tempdir = os.environ["TMPDIR"] = str(private)
    try:
        yield
    finally:
        tempfile.tempdir = saved[0]
        if saved[1] is None:
            os.environ.pop("TMPDIR", None)
        else:
            os.environ["TMPDIR"] = saved[1]
        shutil.rmtree(private, ignore_errors=True)


def remove_dead_builds(cache_root: Path) -> list[Path]:
    """Clear what killed builds left in the cache (their temporary folders, a half-written
    artifact.json, an entry's half-built files): only in key folders whose lock nobody holds,
    so a build running in another process is never touched. Returns the folders cleared."""
    cleared = []
    for folder in _entries(Path(cache_root)):
        leftovers = [*folder.glob(f"{BUILD_TMP}*"), *folder.glob(f".{MARKER}.*")]
        finished = (folder / MARKER).is_file()
        if finished and not leftovers:
            continue  # the usual entry: no lock taken
        with contextlib.suppress(OSError), _try_lock(folder) as held:
            if not held:
                continue  # a live build
            if not (folder / MARKER).is_file():
                leftovers = [p for p in folder.iterdir() if p.name != LOCK]  # half-built: all of it
            for path in leftovers:
                if path.is_dir() and not path.is_symlink():
                    shutil.rmtree(path)
                else:
                    path.unlink(missing_ok=True)
            if leftovers:
                cleared.append(folder)
    return cleared


def _entries(cache_root: Path) -> Iterator[Path]:
    try:
        yield from (p for p in cache_root.iterdir() if (p / LOCK).is_file())
    except OSError:  # no cache yet, or unreadable: nothing to clear
        return


@contextlib.contextmanager
def _try_lock(folder: Path) -> Iterator[bool]:
    with open(folder / LOCK, "a") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        yield True


def prepare(config: RunConfig, cache_root: Path) -> Path | None:
    return prepare_cached(config, cache_root)[0]


def prepare_many(configs: list[RunConfig], cache_root: Path) -> None:
    """Build several models of one framework in this one process (`edgestats prepare`): the
    framework is imported once, not once per model (TensorFlow's import alone is about 6 s here).
    One line per configuration on stdout as it finishes; a model that fails says why on its line,
    its traceback goes to stderr, and the next one is built. Where the kernel cannot kill a builder
    with its parent (not Linux: processes.die_with_parent), it stops before the next model once its
    parent is gone."""
    parent = os.getppid()
    for config in configs:
        if os.getppid() != parent:
            return
        key = cache_key(config)
        try:
            artifact, cache = prepare_cached(config, cache_root)
            line = {"key": key, "artifact": str(artifact) if artifact else None, "cache": cache}
        except Exception as exc:  # one model's failure is its own line; the others still build
            traceback.print_exc(file=sys.stderr)
            line = {"key": key, "error": traceback.format_exception_only(exc)[-1].strip()}
        print(json.dumps(line), flush=True)
        gc.collect()  # the last model's framework objects, before the next one is built


def main(argv: list[str] | None = None) -> int:
    args = argv if argv is not None else sys.argv[1:]
    # "-": the configurations come on stdin (`edgestats prepare`), so no file is left if we are killed
    document = json.loads(sys.stdin.read() if args[0] == "-" else Path(args[0]).read_text())
    if isinstance(document, list):
        prepare_many([RunConfig.from_dict(d) for d in document], Path(args[1]))
        return 0
    artifact, cache = prepare_cached(RunConfig.from_dict(document), Path(args[1]))
    print(json.dumps({"artifact": str(artifact) if artifact else None, "cache": cache}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
