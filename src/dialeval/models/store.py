"""Trained artifacts on disk: a folder of plain files plus `manifest.json` with their sha256.

A trained metric must load anywhere, offline, and must refuse a folder that was changed or
half-copied instead of silently scoring with it. So every artifact is a folder holding
`config.json`, arrays (`arrays.npz`, or safetensors written by a library) and any other files,
and a manifest listing each file's sha256; `verify` checks it before anything is read.
Nothing is pickled.
"""

from __future__ import annotations

import contextlib
import contextvars
import hashlib
import json
import os
import shutil
from typing import Any, Callable, Iterator, Mapping

import numpy as np

from ..errors import DialevalError

MANIFEST = "manifest.json"
CONFIG = "config.json"
ARRAYS = "arrays.npz"


def sha256_of(path: str) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def files_under(directory: str) -> list[str]:
    """Every file of an artifact folder but its manifest, as sorted "a/b" paths."""
    found = []
    for root, dirs, files in os.walk(directory):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in sorted(files):
            if name == MANIFEST or name.startswith(".tmp-"):
                continue
            found.append(os.path.relpath(os.path.join(root, name), directory).replace(os.sep, "/"))
    return found


def write_manifest(directory: str | os.PathLike, kind: str, extra: Mapping[str, Any] | None = None) -> dict:
    """Record every file now in `directory` (written by us or by a library) with its sha256."""
    from ..data.writers import atomic_write
    from ..version import __version__

    directory = os.fspath(directory)
    manifest = {"kind": kind, "dialeval_version": __version__, **(extra or {}),
                "files": {rel: {"sha256": sha256_of(os.path.join(directory, rel)),
                                "bytes": os.path.getsize(os.path.join(directory, rel))}
                          for rel in files_under(directory)}}
    with atomic_write(os.path.join(directory, MANIFEST)) as handle:
        json.dump(manifest, handle, indent=1, sort_keys=True)
    return manifest


def read_manifest(directory: str | os.PathLike) -> dict | None:
    path = os.path.join(os.fspath(directory), MANIFEST)
    if not os.path.exists(path):
        return None
    try:
        with open(path, encoding="utf-8") as handle:
            manifest = json.load(handle)
        if not isinstance(manifest.get("files"), dict):
            raise ValueError("no 'files' table")
    except (OSError, ValueError) as exc:
        raise DialevalError(f"{path}: unreadable artifact manifest ({exc})") from None
    return manifest


# real path of a file -> the sha256 it was found to have, while one model is being opened
# (`verified`): an estimator's `load` calls `verify` again, and an MME folder's sub-metrics each
# verify their own folder; a file already hashed against the same digest is not read twice.
_checked: "contextvars.ContextVar[dict[str, str] | None]" = contextvars.ContextVar("checked", default=None)


@contextlib.contextmanager
def verified(known: dict[str, str] | None = None) -> Iterator[dict[str, str]]:
    """While open, `verify` hashes each file at most once (see `_checked`); `known` is what an
    earlier `verified` block found (a folder whose parts load later, MME's sub-metrics)."""
    outer = _checked.get()
    if outer is not None:
        outer.update(known or {})
        yield outer
        return
    token = _checked.set(dict(known or {}))
    try:
        yield _checked.get()
    finally:
        _checked.reset(token)


def verify(directory: str | os.PathLike, kind: str | None = None) -> dict:
    """The manifest of `directory`, after checking that every listed file is there, unchanged."""
    directory = os.fspath(directory)
    if not os.path.isdir(directory):
        raise DialevalError(f"{directory}: no such artifact folder")
    manifest = read_manifest(directory)
    if manifest is None:
        raise DialevalError(f"{directory}: not a dialeval artifact (no {MANIFEST}); train one with `dialeval train`")
    if kind is not None and manifest.get("kind") != kind:
        raise DialevalError(f"{directory}: holds a {manifest.get('kind')!r} artifact, not {kind!r}")
    checked = _checked.get()
    for rel, entry in manifest["files"].items():
        path = os.path.join(directory, rel)
        if not os.path.exists(path):
            raise DialevalError(f"{path}: missing from the artifact (listed in {MANIFEST}); retrain or re-copy it")
        expected = entry.get("sha256")
        real = os.path.realpath(path) if checked is not None else ""
        if checked is not None and checked.get(real) == expected:
            continue
        if sha256_of(path) != expected:
            raise DialevalError(f"{path}: changed since the artifact was saved (sha256 differs from {MANIFEST}); "
                                "the artifact is corrupted, retrain or re-copy it")
        if checked is not None:
            checked[real] = expected
    return manifest


def save_artifact(directory: str | os.PathLike, kind: str, config: Mapping[str, Any] | None,
                  arrays: Mapping[str, np.ndarray] | None = None,
                  files: Mapping[str, str | os.PathLike] | None = None,
                  write: Callable[[str], None] | None = None) -> str:
    """Write config, arrays (npz, no pickle), copies of `files` (name -> source path) and
    whatever `write(staging_dir)` puts there to a fresh folder, then the manifest over all of
    it. The folder is assembled beside the target and renamed, so a crash leaves either the old
    artifact or the new one, and nothing is staged anywhere else (no temporary folder to leak)."""
    directory = os.path.abspath(os.fspath(directory))
    parent = os.path.dirname(directory)
    os.makedirs(parent, exist_ok=True)
    staging = directory + ".tmp-save"
    shutil.rmtree(staging, ignore_errors=True)
    os.makedirs(staging)
    try:
        if config is not None:      # None: `write` provides config.json (a transformers checkpoint)
            with open(os.path.join(staging, CONFIG), "w", encoding="utf-8") as handle:
                json.dump(dict(config), handle, indent=1, sort_keys=True)
        if arrays:
            np.savez(os.path.join(staging, ARRAYS), **{k: np.asarray(v) for k, v in arrays.items()})
        for name, source in (files or {}).items():     # a name may hold a subfolder ("encoder/x")
            target = os.path.join(staging, name)
            os.makedirs(os.path.dirname(target), exist_ok=True)
            shutil.copyfile(os.fspath(source), target)
        if write is not None:
            write(staging)
        write_manifest(staging, kind)
        replace_dir(staging, directory)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return directory


def replace_dir(staging: str, directory: str) -> None:
    """Move a finished staging folder over `directory` (which may already exist)."""
    old = directory + ".tmp-old"
    shutil.rmtree(old, ignore_errors=True)
    if os.path.exists(directory):
        os.replace(directory, old)
    os.replace(staging, directory)
    shutil.rmtree(old, ignore_errors=True)


def load_artifact(directory: str | os.PathLike, kind: str | None = None) -> tuple[dict, dict[str, np.ndarray], str]:
    """(config, arrays, folder) of a verified artifact."""
    directory = os.fspath(directory)
    verify(directory, kind)
    try:
        with open(os.path.join(directory, CONFIG), encoding="utf-8") as handle:
            config = json.load(handle)
    except (OSError, ValueError) as exc:
        raise DialevalError(f"{directory}/{CONFIG}: unreadable ({exc})") from None
    arrays: dict[str, np.ndarray] = {}
    npz = os.path.join(directory, ARRAYS)
    if os.path.exists(npz):
        with np.load(npz, allow_pickle=False) as data:
            arrays = {k: data[k] for k in data.files}
    return config, arrays, directory
