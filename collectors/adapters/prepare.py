"""Before a measured run, in its own process: turn a zoo model into the file the worker loads.

    python -m edgestats.collectors.adapters.prepare CONFIG_JSON CACHE_DIR   -> prints {"artifact": PATH}

Conversions (Keras -> .tflite, PyTorch -> .onnx, TorchScript tracing) are slow and need other
frameworks than the one measured, so they happen here, once per (framework, runtime, model,
precision, seed), cached; the worker's load_model phase then loads a file, as a deployed
application would.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

from edgestats.collectors.runconfig import RunConfig
from edgestats.registry.runtimes import runtime

ARTIFACT_FIELDS = ("framework", "runtime", "model", "precision", "seed", "accelerator", "extra")


def cache_key(config: RunConfig) -> str:
    """What the model file depends on (not batch size, threads or iterations)."""
    data = {name: getattr(config, name) for name in ARTIFACT_FIELDS}
    return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()[:20]


MARKER = "artifact.json"  # written last: its presence means the cached model file is complete


def cached_artifact(config: RunConfig, cache_root: Path) -> tuple[bool, str | None]:
    """(True, path) when an earlier prepare of this model finished; no subprocess needed."""
    marker = cache_root / cache_key(config) / MARKER
    if not marker.is_file():
        return False, None
    artifact = json.loads(marker.read_text())["artifact"]
    return (artifact is None or Path(artifact).exists()), artifact


def prepare(config: RunConfig, cache_root: Path) -> Path | None:
    cache_dir = cache_root / cache_key(config)
    cache_dir.mkdir(parents=True, exist_ok=True)
    artifact = runtime(config.framework).adapter_class().prepare(config, cache_dir)
    (cache_dir / MARKER).write_text(json.dumps({"artifact": str(artifact) if artifact else None}))
    return artifact


def main(argv: list[str] | None = None) -> int:
    args = argv if argv is not None else sys.argv[1:]
    config = RunConfig.from_dict(json.loads(Path(args[0]).read_text()))
    artifact = prepare(config, Path(args[1]))
    print(json.dumps({"artifact": str(artifact) if artifact else None}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
