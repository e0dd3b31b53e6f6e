"""Comparing analysis JSON from the same runs stored in different orders (a merged file, a lake,
a glob of files, a shuffled copy): DuckDB and polars sum floats in scan order, and float addition
is not associative, so only the last bits of floats may differ (bench/RESULTS.md, "lake")."""

from __future__ import annotations

import math


def same_to_12_digits(a, b, path: str = "") -> list[str]:
    """Where two parsed JSON documents differ: floats by more than 1e-12 relative, anything else at all."""
    if isinstance(a, float) and isinstance(b, float):
        return [] if math.isclose(a, b, rel_tol=1e-12, abs_tol=1e-300) else [f"{path}: {a!r} vs {b!r}"]
    if isinstance(a, dict) and isinstance(b, dict) and a.keys() == b.keys():
        return [d for k in a for d in same_to_12_digits(a[k], b[k], f"{path}/{k}")]
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return [d for i, (x, y) in enumerate(zip(a, b)) for d in same_to_12_digits(x, y, f"{path}[{i}]")]
    return [] if a == b else [f"{path}: {a!r:.80} vs {b!r:.80}"]
