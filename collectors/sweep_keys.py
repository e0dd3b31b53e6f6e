"""What makes an option a key of the sweep (`SweepKey`), and the options' values as the sweep's keys.

collect's options (collectors/options.py) are declared with the record of every command's options
(edgestats/options.py); those that are sweep keys carry here whether they are an axis, which kinds
of workload they are for, and how a flag's value becomes the key's. collectors/sweep.py reads the
keys' types from them, and `sweep_values` puts a command's values under their keys.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from edgestats.collectors.core.sweep_limits import SweepError
from edgestats.options import Opt


@dataclass(frozen=True)
class SweepKey(Opt):
    """An option that is a key of the sweep: given as a flag or in a sweep file's [sweep] table
    (under `feeds`), its values checked as `type` by collectors/sweep.py."""

    axis: bool = False  # a list in a sweep, one configuration per value; else a setting (one value)
    table: bool = False  # a table of adapter options (the sweep's `options`)
    kinds: tuple[str, ...] = ()  # the kinds of workload it is for (training, ...); (): every kind
    to_sweep: Callable[[Any], Any] | None = None  # the flag's value as the sweep takes it


def axis(name: str, type: type, help: str, **fields: Any) -> SweepKey:  # noqa: A002  (Opt's names)
    """A repeatable sweep key that is an axis: each value given is a configuration of its own."""
    return SweepKey(name, type, help, repeatable=True, axis=True, **fields)


def parse_option_flags(items: Iterable[str] | Mapping[str, Any]) -> dict[str, Any]:
    """--option KEY=VALUE; VALUE is read as JSON when it parses (3, true, [3,224,224]), else text.
    A mapping (the Python API's options={...}) is taken as it is."""
    if isinstance(items, Mapping):
        return dict(items)
    options = {}
    for item in items:
        if "=" not in item:
            raise SweepError(f"--option {item!r}: expected KEY=VALUE, e.g. --option xnnpack=false")
        key, value = item.split("=", 1)
        try:
            options[key.strip()] = json.loads(value)
        except json.JSONDecodeError:
            options[key.strip()] = value
    return options


def not_given(opt: Opt, value: Any) -> bool:
    """None, an empty list, or a flag at its default (--retry-failed absent): the sweep file's applies."""
    return (
        value is None
        or (isinstance(value, list | tuple) and not value)
        or (opt.type is bool and value is opt.default)
    )


def sweep_values(options: Iterable[Opt], values: Mapping[str, Any]) -> dict[str, Any]:
    """The values (by option name) of the options that are sweep keys, under their keys, as
    collectors/sweep.py's `combine` takes them, in the order declared (the axes' order, so the
    configurations' and a seeded shuffle's); the options not given are left out."""
    keys = {}
    for opt in options:
        if isinstance(opt, SweepKey) and opt.name in values and not not_given(opt, values[opt.name]):
            value = values[opt.name]
            keys[opt.feeds] = opt.to_sweep(value) if opt.to_sweep else value
    return keys


def sweep_keys(options: Iterable[Opt]) -> tuple[SweepKey, ...]:
    return tuple(opt for opt in options if isinstance(opt, SweepKey))
