"""Short identities of a model folder: one for signatures, one for the process cache.

`model_fingerprint` (name + size of the weight file) is what signatures have always printed;
it must not change, or every stored signature would. `content_key` decides when a cached model
may be reused: the folder's real path, its manifest's sha256 where it has one (artifacts saved
by dialeval), else each weight/config file's size and modification time, so a folder rewritten
in place is loaded again rather than served stale.
"""

from __future__ import annotations

import hashlib
import os

WEIGHT_FILES = ("model.safetensors", "pytorch_model.bin")


def model_fingerprint(model_dir: str) -> str:
    """Short id of the model's weights, for the signature (name + size of the weight file)."""
    for name in WEIGHT_FILES:
        path = os.path.join(model_dir, name)
        if os.path.exists(path):
            return f"{os.path.basename(os.path.normpath(model_dir))}:{os.path.getsize(path)}"
    if os.path.isfile(model_dir):          # a single .gguf file
        return f"{os.path.basename(model_dir)}:{os.path.getsize(model_dir)}"
    return os.path.basename(os.path.normpath(model_dir))


def content_key(path: str) -> str:
    """A key that changes whenever the model's files do (see the module docstring)."""
    real = os.path.realpath(path)
    digest = hashlib.sha256(real.encode())
    manifest = os.path.join(real, "manifest.json")
    if os.path.isfile(manifest):
        with open(manifest, "rb") as handle:
            digest.update(handle.read())
        return digest.hexdigest()[:16]
    names = [real] if os.path.isfile(real) else [os.path.join(real, n) for n in sorted(os.listdir(real))]
    for name in names:
        if os.path.isfile(name):
            st = os.stat(name)
            digest.update(f"{os.path.basename(name)}:{st.st_size}:{st.st_mtime_ns}".encode())
    return digest.hexdigest()[:16]
