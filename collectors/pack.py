"""Model packs: a sweep's model files built on one machine, run on another (`edgestats prepare`).

A device often has only its runtime installed (ONNX Runtime or LiteRT on a board, no PyTorch or
TensorFlow), while building a zoo model's file needs them (torch.onnx.export, the Keras to TFLite
converter). A pack is a model cache folder (collectors/prepare.py: one folder per cache
key, each with its file, sidecar and artifact.json holding the file's SHA-256 and its name
relative to the folder) with the sweep's models built into it, plus `pack.json`, a manifest of
what it holds. Copied to the device, `edgestats collect --cache-dir PACK` finds every model there
(the lookup checks each file against its hash) and needs nothing but the runtime.

The models of one framework (and runtime) are built in one process of their own, so torch and
TensorFlow never share one and each is imported once per prepare, not once per model.

Nothing outlives a killed prepare: each builder gets its configurations on stdin (no temporary
file) and is SIGKILLed by the kernel when prepare dies (collectors/core/processes.py's
die_with_parent); what a killed build left in the pack is cleared by the next prepare
(collectors/prepare.py's remove_dead_builds), as is a half-written pack.json.
"""

from __future__ import annotations

import fcntl
import json
import os
import shlex
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import suppress
from dataclasses import asdict, dataclass
from pathlib import Path

from edgestats.collectors.core.processes import die_with_parent, module_command
from edgestats.collectors.core.runconfig import RunConfig
from edgestats.collectors.generation.engines import needs_prepare
from edgestats.collectors.prepare import cache_key, lookup, remove_dead_builds
from edgestats.collectors.sweep import Sweep, feasibility
from edgestats.version import __version__

MANIFEST = "pack.json"
USED_IN_PLACE = "used in place"


@dataclass
class PackEntry:
    key: str  # the cache key: the pack's folder holding this model
    framework: str
    runtime: str | None
    model: str
    precision: str
    seed: int
    status: str  # "built", "hit" (already in the pack), "rebuilt: WHY", "failed", "cannot run here",
    # "used in place" (the runtime reads the user's own file: none in the pack)
    artifact: str | None = None  # relative to the pack
    detail: str | None = None  # why it failed or cannot run


def is_pack(folder: Path) -> bool:
    """Whether a --cache-dir is a model pack (`edgestats prepare` wrote its manifest)."""
    return (Path(folder) / MANIFEST).is_file()


def prepare_command(config: RunConfig, pack: Path) -> str:
    """The `edgestats prepare` command that adds this configuration's model file to `pack`: the
    flags of every field its cache key holds that differs from the default."""
    flags = [f"-f {config.framework}", f"-m {shlex.quote(config.model)}"]
    flags += [f"--kind {config.kind}"] if config.kind != "inference" else []
    flags += [f"--runtime {config.runtime}"] if config.runtime else []
    flags += [f"--precision {config.precision}"] if config.precision != "fp32" else []
    flags += [f"--accelerator {config.accelerator}"] if config.accelerator != "cpu" else []
    flags += [f"--seed {config.seed}"] if config.seed else []
    for key, value in sorted(config.extra.items()):
        text = value if isinstance(value, str) else json.dumps(value)
        flags.append(f"--option {shlex.quote(f'{key}={text}')}")
    return f"edgestats prepare {' '.join(flags)} --cache-dir {shlex.quote(str(pack))}"


def missing_from_pack(config: RunConfig, pack: Path, missing: list[str], extras: str) -> str:
    """Why a model cannot run from the pack given: it is not in it, and building it here needs
    packages this device lacks. Names the model and the command that adds it; the same words for
    every run of that model file (batch sizes, threads, repeats), so collect says it once."""
    runtime = f"/{config.runtime}" if config.runtime else ""
    model = f"{config.model} ({config.framework}{runtime}, {config.precision})"
    return (
        f"model {model} is not in the model pack {pack}, and building it here needs {', '.join(missing)} "
        f"(pip install 'edgestats[{extras}]'): add it to the pack where that is installed with "
        f"`{prepare_command(config, pack)}` and copy the pack here again"
    )


def model_configs(sweep: Sweep) -> list[RunConfig]:
    """One configuration per distinct model file of the sweep (batch size, threads and repeats
    share a file: the cache key leaves them out); generation engines that build a file count."""
    unique: dict[str, RunConfig] = {}
    for config in sweep.configs():
        if config.kind == "inference" or (config.kind == "generation" and needs_prepare(config)):
            unique.setdefault(cache_key(config), config)
    return list(unique.values())


def build_one(
    config: RunConfig, pack: Path, python: str = sys.executable
) -> tuple[str, str | None, str | None]:
    """(status, artifact relative to the pack, error) of building one model file into the pack,
    in a fresh process (collectors/prepare.py's entry point) that dies with this one."""
    proc = subprocess.run(
        _builder_command(python, pack),
        input=config.to_json(),
        capture_output=True,
        text=True,
        preexec_fn=die_with_parent(),
    )
    if proc.returncode != 0:
        lines = [line for line in proc.stderr.strip().splitlines() if line.strip()]
        return "failed", None, lines[-1] if lines else f"exit status {proc.returncode}"
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    artifact = result["artifact"]
    return result["cache"], (os.path.relpath(artifact, pack) if artifact else None), None


def _builder_command(python: str, pack: Path) -> list[str]:
    """The builder reads its configurations from stdin ("-"): no file of ours outlives a kill."""
    return [*module_command(python, "edgestats.collectors.prepare"), "-", str(pack)]


def build_group(
    configs: list[RunConfig], pack: Path, python: str = sys.executable
) -> Iterator[tuple[RunConfig, str, str | None, str | None]]:
    """Build several model files (one framework's) in one fresh process; yields (config, status,
    artifact relative to the pack, error) for each, as it finishes. A configuration the process
    never reported (it crashed on an earlier one) is built again on its own by `build_one`.

    The process is SIGKILLed by the kernel when this one dies (`die_with_parent`): iterate this
    generator from the thread that will outlive the build (the main thread)."""
    pending = {cache_key(c): c for c in configs}
    # each failure's reason is on its own stdout line; the tracebacks on stderr are not kept
    with subprocess.Popen(
        _builder_command(python, pack),
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        stdin=subprocess.PIPE,
        text=True,
        preexec_fn=die_with_parent(),
    ) as proc:
        with suppress(BrokenPipeError):  # a builder that died at once: its models are built one by one
            proc.stdin.write(json.dumps([json.loads(c.to_json()) for c in configs]))
        with suppress(BrokenPipeError):
            proc.stdin.close()
        for line in proc.stdout:
            result = _result_line(line)
            config = pending.pop(result.get("key"), None) if result else None
            if config is None:
                continue
            if "error" in result:
                yield config, "failed", None, result["error"]
            else:
                artifact = result["artifact"]
                yield (
                    config,
                    result["cache"],
                    (os.path.relpath(artifact, pack) if artifact else None),
                    None,
                )
    for config in pending.values():
        yield (config, *build_one(config, pack, python))


def _result_line(line: str) -> dict | None:
    """A line of prepare_many's output; None for anything else a converter printed to stdout
    (a library's text may even precede the JSON on the same line)."""
    start = line.find('{"key"')
    try:
        return json.loads(line[start:]) if start >= 0 else None
    except ValueError:
        return None


def prepare_pack(
    sweep: Sweep, pack: Path, *, on_entry: Callable[[PackEntry], None] | None = None
) -> list[PackEntry]:
    """Build every model file of the sweep into `pack` and write its manifest (pack.json)."""
    pack = Path(pack)
    pack.mkdir(parents=True, exist_ok=True)
    remove_dead_builds(pack)
    _remove_dead_manifest_temps(pack)
    configs = model_configs(sweep)
    skipped = feasibility(configs)[1]
    reasons = {cache_key(c): why for c, why in skipped}
    entries = {
        cache_key(c): PackEntry(cache_key(c), c.framework, c.runtime, c.model, c.precision, c.seed, "")
        for c in configs
    }
    groups: dict[tuple[str, str | None], list[RunConfig]] = {}
    for config in configs:
        key = cache_key(config)
        if key in reasons:
            entries[key].status, entries[key].detail = "cannot run here", reasons[key]
            if on_entry:
                on_entry(entries[key])
        else:
            groups.setdefault((config.framework, config.runtime), []).append(config)
    for group in groups.values():
        for config, status, artifact, detail in build_group(group, pack):
            entry = entries[cache_key(config)]
            entry.status, entry.artifact, entry.detail = status, artifact, detail
            if artifact is None and status != "failed":
                entry.status, entry.detail = (
                    USED_IN_PLACE,
                    (
                        f"{config.framework} reads this file itself, so the pack holds no copy: "
                        f"put it at the same path on the device"
                    ),
                )
            if on_entry:
                on_entry(entry)
    write_manifest(pack, list(entries.values()), {cache_key(c): c for c in configs})
    return list(entries.values())


def write_manifest(pack: Path, entries: list[PackEntry], configs: dict[str, RunConfig]) -> None:
    """pack.json: what the pack holds, each file's SHA-256 (from its artifact.json), and the
    edgestats that built it. Written through a temporary file, so a reader never sees half."""
    files = [m for m in _earlier_models(pack) if m.get("key") not in configs]  # a pack grows by prepares
    for entry in entries:
        record = asdict(entry)
        if entry.artifact:
            record["sha256"] = json.loads((pack / entry.key / "artifact.json").read_text()).get("sha256")
            record["intact"] = lookup(configs[entry.key], pack)[1] is None
        files.append(record)
    document = {"edgestats_version": __version__, "python": sys.version.split()[0], "models": files}
    tmp = pack / f".{MANIFEST}.{os.getpid()}"
    with open(tmp, "w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)  # held while it is written: see _remove_dead_manifest_temps
        f.write(json.dumps(document, indent=2) + "\n")
        f.flush()
        os.replace(tmp, pack / MANIFEST)


def _remove_dead_manifest_temps(pack: Path, min_age_s: float = 60.0) -> None:
    """Delete the half-written pack.json of a prepare killed while writing it: a temporary file
    whose lock nobody holds and older than `min_age_s` (a live writer holds the lock, and takes
    it a moment after creating the file, far less than a minute)."""
    for path in pack.glob(f".{MANIFEST}.*"):
        try:
            fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)  # no O_CREAT: it may have just been renamed
        except OSError:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            if time.time() - os.fstat(fd).st_mtime > min_age_s:
                path.unlink()
        except OSError:  # BlockingIOError: a live writer holds it
            pass
        finally:
            os.close(fd)


def _earlier_models(pack: Path) -> list[dict]:
    """The models an earlier `prepare` into this pack listed whose files are still there."""
    try:
        models = json.loads((pack / MANIFEST).read_text()).get("models", [])
    except (OSError, ValueError, AttributeError):
        return []
    return [
        m for m in models if isinstance(m, dict) and m.get("artifact") and (pack / m["artifact"]).is_file()
    ]
