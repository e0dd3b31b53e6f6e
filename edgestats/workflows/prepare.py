"""`edgestats prepare` as one library call: a sweep's model files built into a model pack, for a
device that has only its runtime (collectors/pack.py).

The sweep is built from the file (or a [sweep] table) and prepare's options (collectors/
command_options.py: collect's declarations of the keys that pick model files), with thread counts
left unchecked against this machine's CPUs: the pack is for another device. Each entry is told to
`on_entry` as it is built; the counts come back with the entries.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from edgestats.collectors.command_options import PREPARE_OPTIONS
from edgestats.collectors.sweep import sweep_of
from edgestats.options import check_keywords


@dataclass(frozen=True)
class PrepareResult:
    pack: Path
    manifest: Path  # PACK/pack.json, listing the model files
    entries: list[Any]  # collectors/pack.py's PackEntry, one per model file
    ready: int  # model files in the pack (built, or found already built)
    failed: int
    cannot_run: int  # for a runtime that cannot run here
    in_place: int  # user model files listed where they are, to copy to the device by hand


def prepare(
    cache_dir: Path | str,
    sweep_file: Path | str | dict[str, Any] | None = None,
    *,
    on_entry: Callable[[Any], None] | None = None,
    **options: Any,
) -> PrepareResult:
    """Build the model files of the sweep of `sweep_file` and `options` (prepare's options by
    name: framework=["onnxruntime"], model="cnn9", kind="generation", ...) into the pack `cache_dir`."""
    from edgestats.collectors.pack import MANIFEST, USED_IN_PLACE, prepare_pack  # builds: loads much

    check_keywords(PREPARE_OPTIONS, options, "prepare")
    # runs_here=False: the models are built here for another device, whose CPUs bound its threads
    sweep = sweep_of(sweep_file, PREPARE_OPTIONS, options, runs_here=False)
    pack = Path(cache_dir)
    entries = prepare_pack(sweep, pack, on_entry=on_entry)
    return PrepareResult(
        pack,
        pack / MANIFEST,
        entries,
        ready=sum(e.artifact is not None for e in entries),
        failed=sum(e.status == "failed" for e in entries),
        cannot_run=sum(e.status == "cannot run here" for e in entries),
        in_place=sum(e.status == USED_IN_PLACE for e in entries),
    )
