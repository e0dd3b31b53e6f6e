"""The plug-in registries: one declarative list per kind of plug-in.

- `runtimes.RUNTIMES`: framework adapters (what `collect --framework` measures);
- `power.POWER_SOURCES`: power sources (what `collect --power` / `baseline --power` read);
- `analyses.ANALYSES`: analyses (what `analyze --only` runs and the report draws).

Each entry is plain data: names, help text, the docs section that describes it, and dotted
paths ("package.module:attribute") to the code, imported only when the entry is used. This
package imports nothing but the standard library, so `edgestats --help` and the device side
read the lists without loading a framework, DuckDB or the analysis stack. CLI choices, help
text, doctor's checks and the report's sections all come from these lists; adding a plug-in
is its module plus one line here (docs/architecture.md §8 lists every file of each kind).
"""

from __future__ import annotations

import importlib
from typing import Any


def resolve(target: str) -> Any:
    """ "package.module:attribute" -> that attribute ("package.module" -> the module), imported now."""
    module_name, _, attribute = target.partition(":")
    module = importlib.import_module(module_name)
    return getattr(module, attribute) if attribute else module


def names_text(names: list[str] | tuple[str, ...], last: str = "or") -> str:
    """ "a, b, c or d": a list of choices as help text reads it."""
    names = list(names)
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} {last} {names[-1]}"
