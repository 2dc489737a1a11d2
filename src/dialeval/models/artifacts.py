"""The one door through which a metric opens a trained model folder.

Every model-backed family used to keep its own way in: its own cache (an LRU of four keyed by
the manifest's modification time, a dict that kept one model and re-hashed the folder on every
call, a dict with no bound), its own moment of loading (the constructor, or the first score) and
its own notion of which folder is "the same" one. A folder read by two metrics of a run was
verified and loaded twice, and `score` loaded every model while it was still planning.

`open_model(folder, kind, load)` is now the only way: it

- keys the loaded object by (kind, real path, the manifest's sha256 and the listed files' sizes
  and times, the caller's extra key), so a folder rewritten in place is verified and loaded
  again, never served stale, and one reached through a link or a relative path is not loaded
  twice;
- verifies the folder once per key (every listed file's sha256), and lets the loader's own
  `store.verify` / `load_artifact` calls skip hashing the same files a second time;
- keeps the loaded objects in the process's one model cache (`dialeval.cache.MODELS`, one budget
  in entries and bytes shared with the backbones), least recently used dropped first, and
  `clear_models()` drops them all;
- names the model by one fingerprint, `model_id`: the manifest's sha256 (the manifest lists every
  file's sha256, so any change to any file changes it), the hash the
  signature's `model:NAME@` field prints (`model_field`).

A folder without a manifest (a causal LM from elsewhere) is keyed by its files' sizes and
modification times instead; it has nothing to verify.

The metrics read their signatures from the manifest and the small JSON files beside it
(`manifest`, `read_json`), never by loading the weights, so planning a run, `compare` and
`report` load nothing.
"""

from __future__ import annotations

import hashlib
import json
import os
from typing import Any, Callable, TypeVar

from ..cache import MODELS, BoundedCache
from ..errors import DialevalError
from . import store

T = TypeVar("T")

PREFIX = "artifact"



def model_id(folder: str | os.PathLike) -> str:
    """sha256 of the folder's manifest: the one fingerprint of a dialeval artifact (the hash
    `model:NAME@` prints; `defaults.model_digest` is the same function, kept light for the
    registry, which must not import numpy for the word-overlap metrics)."""
    from .defaults import model_digest

    return model_digest(os.fspath(folder))


def model_field(name: str, folder: str | os.PathLike) -> str:
    """`NAME@<first 12 hex of model_id>`: the value of the one `model:` field by which every
    metric backed by a trained dialeval artifact names it in its signature. NAME is the kind of
    model the metric reads (`adem`, `mme`, `lm`, `compose`, ...), so a shipped default prints
    the tag `dialeval models list` shows for it and a refit of any file signs differently.
    Weights made elsewhere (a pretrained encoder, a causal LM without a manifest) have no
    manifest and keep the backbone rule, `name:size` (`backbones.fingerprint`)."""
    return f"{name}@{model_id(folder)[:12]}"


def needs_model(metric: str, option: str, what: str = "a trained model", how: str = "") -> DialevalError:
    """The one refusal of a model-backed metric built without its model option."""
    flag = "--" + option.replace("_", "-")
    return DialevalError(f"metric {metric!r} needs {what}: {flag} DIR" + (f" ({how})" if how else ""))


def manifest(folder: str | os.PathLike) -> dict | None:
    """The folder's manifest (None when it has none), read without hashing any file."""
    return store.read_manifest(folder)


def read_json(folder: str | os.PathLike, name: str = store.CONFIG) -> dict:
    """A small JSON file of an artifact (config.json by default), {} when absent: what a metric
    reads to sign itself without loading weights."""
    path = os.path.join(os.fspath(folder), name)
    if not os.path.exists(path):
        return {}
    try:
        with open(path, encoding="utf-8") as handle:
            value = json.load(handle)
    except (OSError, ValueError) as exc:
        raise DialevalError(f"{path}: unreadable ({exc})") from None
    return value if isinstance(value, dict) else {}


def array_shape(folder: str | os.PathLike, name: str, file: str = store.ARRAYS) -> tuple[int, ...]:
    """The shape of array `name` in the folder's npz, read from the member's header alone."""
    import zipfile

    from numpy.lib import format as npformat

    with zipfile.ZipFile(os.path.join(os.fspath(folder), file)) as bundle, bundle.open(f"{name}.npy") as handle:
        version = npformat.read_magic(handle)
        header = (npformat.read_array_header_1_0(handle) if version == (1, 0)
                  else npformat.read_array_header_2_0(handle))
    return tuple(int(n) for n in header[0])


def _identity(real: str) -> str:
    """The manifest's sha256 with its listed files' sizes and times (a file replaced, touched or
    removed after the folder was verified makes it verify again: a long-lived process is not
    served a model whose files changed under it), or for a folder without a manifest its files'
    sizes and times."""
    manifest_path = os.path.join(real, store.MANIFEST)
    if os.path.isfile(manifest_path):
        with open(manifest_path, "rb") as handle:
            raw = handle.read()
        digest = hashlib.sha256(hashlib.sha256(raw).hexdigest().encode())
        try:
            files = json.loads(raw).get("files") or {}
        except (ValueError, AttributeError):
            files = {}           # verifying gives the one-line refusal
        for rel in sorted(files):
            try:
                st = os.stat(os.path.join(real, rel))
                digest.update(f"{rel}:{st.st_size}:{st.st_mtime_ns}\n".encode())
            except OSError:
                digest.update(f"{rel}:missing\n".encode())
        return digest.hexdigest()
    digest = hashlib.sha256(b"no-manifest")
    names = [real] if os.path.isfile(real) else [os.path.join(real, n) for n in sorted(os.listdir(real))]
    for name in names:
        if os.path.isfile(name):
            st = os.stat(name)
            digest.update(f"{os.path.basename(name)}:{st.st_size}:{st.st_mtime_ns}".encode())
    return "stat:" + digest.hexdigest()


# (real path, manifest sha256) -> {real file path: sha256} of the folders verified in this process
_verified = BoundedCache(max_items=64, sizeof=lambda entry: 0, name="verified folders")


def check(folder: str | os.PathLike, kind: str | None = None) -> dict | None:
    """The folder's manifest after verifying every listed file, once per folder and content for
    the process (`open_model` then hashes nothing again); None for a folder without a manifest.
    What a metric calls when it signs itself, so a damaged folder is refused while planning,
    with the same line loading would give, and nothing is loaded."""
    path = os.path.abspath(os.fspath(folder))
    if not os.path.exists(path):
        raise DialevalError(f"{path}: no such model folder")
    real = os.path.realpath(path)
    ident = _identity(real)
    if ident.startswith("stat:"):
        return None
    return _verify_once(path, real, ident, kind)[1]


def _verify_once(path: str, real: str, ident: str, kind: str | None) -> tuple[dict[str, str], dict]:
    """({real file path: sha256} of the verified files, the manifest), verified on first call."""
    entry = _verified.get((real, ident))
    if entry is None:
        with store.verified() as checked:
            manifest = store.verify(path, kind)
            entry = (dict(checked), manifest)
        _verified.put((real, ident), entry)
    elif kind is not None and entry[1].get("kind") != kind:
        raise DialevalError(f"{path}: holds a {entry[1].get('kind')!r} artifact, not {kind!r}")
    return entry


def open_model(folder: str | os.PathLike, kind: str | None, load: Callable[[str], T], *,
               what: str | None = None, key: tuple = ()) -> T:
    """The object `load(folder)` makes of the artifact folder `folder`, loaded once per process
    and content (see the module docstring).

    kind: the manifest's expected kind (None: any kind, for a loader that checks the kind itself).
    what: the loading notice ("ADEM model DIR"); None prints none. key: what else tells two loads
    of one folder apart (a device, a precision)."""
    path = os.path.abspath(os.fspath(folder))
    if not os.path.exists(path):
        raise DialevalError(f"{path}: no such model folder")
    real = os.path.realpath(path)
    ident = _identity(real)
    cache_key = (PREFIX, kind, real, ident) + tuple(key)
    if cache_key in MODELS:
        return MODELS.get(cache_key)
    has_manifest = not ident.startswith("stat:")

    def run() -> T:
        known = _verify_once(path, real, ident, kind)[0] if has_manifest else None
        with store.verified(known):
            return load(path)

    if what:
        from ..progress import loading

        with loading(what):
            value = run()
    else:
        value = run()
    return MODELS.put(cache_key, value)


def _entries() -> list[tuple[Any, Any]]:
    return [(k, v) for k, v in MODELS.items() if isinstance(k, tuple) and k and k[0] == PREFIX]


def opened_models() -> list:
    """The loaded objects the door holds, least recently used first."""
    return [v for _, v in _entries()]


def clear_vectors() -> None:
    """Forget what the opened models remember of texts (their `clear_vectors`), keeping them."""
    for value in opened_models():
        forget = getattr(value, "clear_vectors", None)
        if callable(forget):
            forget()


def clear_models() -> None:
    """Drop every model the door holds, and forget which folders were verified (tests use it
    to make a run load and verify again)."""
    for key, _ in _entries():
        MODELS.pop(key)
    _verified.clear()
