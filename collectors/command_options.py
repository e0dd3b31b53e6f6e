"""The options of `edgestats prepare` and `edgestats baseline`. Those they share with collect are its
declarations (collectors/options.py), changed only where they mean something else here.
"""

from __future__ import annotations

from dataclasses import replace

from edgestats.collectors.options import COLLECT_OPTIONS
from edgestats.options import Opt, by_name
from edgestats.registry import names_text
from edgestats.registry import power as power_sources

_COLLECT = by_name(COLLECT_OPTIONS)

# `edgestats prepare`: the sweep's keys that pick model files, as collect takes them; the pack is
# its --cache-dir, which it must be given, and it builds inference and generation models only.
PREPARE_OPTIONS: tuple[Opt, ...] = (
    replace(
        _COLLECT["sweep_file"],
        help="The sweep the device will collect (its [sweep] table); flags override its keys.",
        metavar="[SWEEP.toml]",
    ),
    replace(
        _COLLECT["cache_dir"],
        help="The pack folder to build into (created if missing); copy it to the device and collect there "
        "with --cache-dir PACK.",
        metavar="PACK",
        required=True,
    ),
    *(_COLLECT[name] for name in ("framework", "model", "runtime", "precision", "accelerator")),
    replace(_COLLECT["seed"], help="Model weight seed (repeatable).", repeatable=True),
    replace(
        _COLLECT["kind"],
        help="inference (default) or generation (a generation zoo model: its ONNX graph with the KV cache, "
        "its GGUF for llama.cpp, ...).",
    ),
    _COLLECT["option"],
)

# `edgestats baseline`: the DB, the power source, the meter's clock and the device's name are
# collect's; how long and how often it reads, and a logged stretch to use, its own.
BASELINE_OPTIONS: tuple[Opt, ...] = (
    replace(_COLLECT["db"], help="Results DB to store the baseline in (created if missing).", metavar=None),
    Opt(
        "seconds",
        float,
        "How long to measure; keep the device idle meanwhile.",
        default=60.0,
        flags=("--seconds", "-s"),
    ),
    replace(
        _COLLECT["power"],
        help=f"{power_sources.spec_help(with_none=False)} (docs/power-sources.md).",
        default="auto",
        metavar=None,
    ),
    Opt(
        "hz",
        float,
        "Reads per second of a source read live on this device (not a meter's log).",
        default=10.0,
    ),
    replace(
        _COLLECT["clock_offset"],
        help="Seconds added to a meter's timestamps to put them on this host's clock.",
        default=0.0,
        metavar=None,
    ),
    Opt(
        "start",
        str,
        f"With --power {names_text(power_sources.file_specs())}: use an idle stretch the meter logged "
        "earlier, starting at this time (Unix seconds or ISO 8601), instead of waiting.",
    ),
    replace(
        _COLLECT["device_name"],
        help="The device's name, as collect --device-name gives it: the baseline is stored under it "
        "and the name is remembered for this machine. Without it: the remembered name, else the host name.",
    ),
)
