"""Making a built folder depend only on the data and the recipe: archive timestamps fixed,
wall-clock and memory measurements dropped, the data root and the output folder written as
`<data-root>` and `<models>`, every manifest rewritten after those edits."""

from __future__ import annotations

import json
import os
import re
import zipfile
from typing import Any

from ..models.store import MANIFEST, write_manifest
from .table import DATA_ROOT, MODELS

_VOLATILE = re.compile(r"(seconds|elapsed|wall|cpu_s|rss|memory|timestamp|created|^date$|_date$|_time$|^time$)")
FIXED_DATE = (1980, 1, 1, 0, 0, 0)
# JSON written by tokenizers / transformers: vocabularies map words ("time", "date") to ids, so
# they are never scrubbed (and they record neither time nor place)
LIBRARY_JSON = ("tokenizer", "vocab", "special_tokens", "added_tokens", "generation_config")


def _scrub(value: Any, roots: list[tuple[str, str]]) -> Any:
    if isinstance(value, dict):
        return {k: (None if _VOLATILE.search(str(k).lower()) and isinstance(v, (int, float)) else _scrub(v, roots))
                for k, v in value.items()}
    if isinstance(value, list):
        return [_scrub(v, roots) for v in value]
    if isinstance(value, str):
        for path, name in roots:
            value = value.replace(path, name)
        return value
    return value


def _normalise_npz(path: str) -> None:
    with zipfile.ZipFile(path) as src:
        entries = [(info, src.read(info.filename)) for info in src.infolist()]
    if all(info.date_time == FIXED_DATE for info, _ in entries):
        return
    tmp = path + ".tmp-npz"
    with zipfile.ZipFile(tmp, "w") as dst:
        for info, data in entries:
            fixed = zipfile.ZipInfo(info.filename, date_time=FIXED_DATE)
            fixed.compress_type = info.compress_type
            fixed.external_attr = 0o644 << 16
            dst.writestr(fixed, data)
    os.replace(tmp, path)


def normalise(folder: str, data_root: str, out_root: str, final: str | None = None) -> None:
    """Make `folder` depend only on the data and the recipe (see the module docstring). Paths
    under `data_root` and `out_root` are written `<data-root>/...` and `<models>/...`; `folder`
    itself (a staging folder) as `<models>/<final>`."""
    roots = {(os.path.abspath(data_root), DATA_ROOT), (os.path.abspath(out_root), MODELS)}
    if final:
        roots.add((os.path.abspath(folder), f"{MODELS}/{final}"))
    roots = sorted(roots, key=lambda p: -len(p[0]))
    manifests = []
    for base, dirs, files in os.walk(folder):
        dirs.sort()
        for name in sorted(files):
            path = os.path.join(base, name)
            if name == MANIFEST:
                manifests.append(base)
            elif name.endswith(".npz"):
                _normalise_npz(path)
            elif name.endswith(".json") and not name.startswith(LIBRARY_JSON):
                with open(path, encoding="utf-8") as handle:
                    text = handle.read()
                data = json.loads(text)
                clean = _scrub(data, roots)
                if clean != data:
                    with open(path, "w", encoding="utf-8") as handle:
                        json.dump(clean, handle, indent=1, sort_keys=True, ensure_ascii=False)
    # deepest first, so that a folder's manifest is written after the files below it settle
    for base in sorted(manifests, key=lambda b: -b.count(os.sep)):
        with open(os.path.join(base, MANIFEST), encoding="utf-8") as handle:
            old = json.load(handle)
        extra = _scrub({k: v for k, v in old.items() if k not in ("kind", "dialeval_version", "files")}, roots)
        write_manifest(base, old.get("kind", "dialeval-model"), extra)
