"""Where edgestats keeps files it can rebuild: `$XDG_CACHE_HOME/edgestats`, by default
~/.cache/edgestats (the XDG base-directory convention). Stdlib only: collectors use it too."""

from __future__ import annotations

import os
from pathlib import Path


def user_cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "edgestats"
