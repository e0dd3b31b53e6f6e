"""The Vega + Vega-Lite + vega-embed script that every report page inlines (about 0.9 MB).

vl-convert builds it on request, which takes 2-3 s; it depends only on the vl-convert version, so
it is kept on disk (`$XDG_CACHE_HOME/edgestats`, default ~/.cache/edgestats) with its SHA-256
beside it. A file whose hash does not match (cut short, edited) is rebuilt, never served. A cache
that cannot be written (read-only home) costs only the time: the bundle is built in memory.
"""

from __future__ import annotations

import functools
import hashlib
import os
import tempfile
from pathlib import Path

from edgestats.cachedir import user_cache_dir


def _cached(path: Path) -> str | None:
    try:
        data = path.read_bytes()
        expected = path.with_name(path.name + ".sha256").read_text().strip()
    except OSError:
        return None
    return data.decode("utf-8") if hashlib.sha256(data).hexdigest() == expected else None


def _store(path: Path, text: str) -> None:
    data = text.encode("utf-8")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        for target, payload in (
            (path, data),
            (path.with_name(path.name + ".sha256"), hashlib.sha256(data).hexdigest().encode()),
        ):
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{target.name}.")
            with os.fdopen(fd, "wb") as handle:
                handle.write(payload)
            os.replace(tmp, target)  # atomic: a reader sees the old file or the new one, never half
    except OSError:
        pass  # no cache: the next report builds the bundle again


@functools.lru_cache(maxsize=1)
def vega_bundle() -> str:
    """The script, from the disk cache when it is intact, else from vl-convert."""
    import vl_convert

    path = user_cache_dir() / f"vega-bundle-vl-convert-{vl_convert.__version__}.js"
    bundle = _cached(path)
    if bundle is None:
        bundle = vl_convert.javascript_bundle()
        _store(path, bundle)
    if "</script" in bundle.lower():  # would end our <script> early; never seen, but fail loudly
        raise RuntimeError("vl-convert's JavaScript bundle contains '</script'; cannot inline it")
    return bundle
