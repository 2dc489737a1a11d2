"""Where dialeval keeps what it builds once and reuses: parsed resource tables, memory-mapped
word vectors, default artifacts. One rule for every family, so one variable moves it all:
$DIALEVAL_CACHE_DIR (or $DIALEVAL_CACHE), else $XDG_CACHE_HOME/dialeval, else ~/.cache/dialeval.
"""

from __future__ import annotations

import os
from pathlib import Path


def cache_dir(*parts: str) -> Path:
    for name in ("DIALEVAL_CACHE_DIR", "DIALEVAL_CACHE"):
        if os.environ.get(name):
            return Path(os.environ[name]).expanduser().joinpath(*parts)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base, "dialeval", *parts)
