"""Default models: what a model-needing metric loads when no model option is given.

The trained defaults ship as a separate, data-only Python package (`dialeval_models`, built
from `packages/dialeval-models/` in the repository and installed by install.sh), one ordinary
artifact folder per default. They are found through `importlib.resources`, never through a
path relative to a checkout, so an installed dialeval finds them wherever it runs; without the
package a metric keeps its one-line "needs a model" error.

`DIALEVAL_MODELS_DIR` names another folder laid out like the package (a fresh `dialeval
models build` output, or a test's tiny model); it is read instead of the package.

Which metric uses which default is declared once, on its registry entry
(`MetricSpec.default_model` and `model_option`); `fill_default` is the one place that acts on it.
"""

from __future__ import annotations

import hashlib
import os
from typing import Any

PACKAGE = "dialeval_models"
ENV = "DIALEVAL_MODELS_DIR"
MANIFEST = "manifest.json"


def models_root() -> str | None:
    """The folder holding the default models, or None when none is installed."""
    env = os.environ.get(ENV)
    if env:
        return env if os.path.isdir(env) else None
    try:
        from importlib.resources import files

        root = files(PACKAGE)
    except (ImportError, TypeError):   # not installed (TypeError: a namespace leftover)
        return None
    path = os.fspath(root) if hasattr(root, "__fspath__") else str(root)
    return path if os.path.isdir(path) else None


def default_model_dir(name: str) -> str | None:
    """The folder of default model `name`, or None when it is not installed."""
    root = models_root()
    if root is None:
        return None
    folder = os.path.join(root, name)
    return folder if os.path.isfile(os.path.join(folder, MANIFEST)) else None


def model_digest(folder: str) -> str:
    """sha256 of the folder's manifest, which lists every file's sha256: one hash for the model."""
    digest = hashlib.sha256()
    with open(os.path.join(folder, MANIFEST), "rb") as handle:
        digest.update(handle.read())
    return digest.hexdigest()


def default_tag(name: str) -> str | None:
    """`name@<first 12 hex of the model hash>`, as signatures print it; None when absent."""
    folder = default_model_dir(name)
    return f"{name}@{model_digest(folder)[:12]}" if folder else None


def fill_default(spec: Any, options: dict[str, Any]) -> str | None:
    """Put the default model of registry entry `spec` into `options` (in place) when its model
    option is unset and the default is installed; returns the default's tag, or None."""
    name, option = getattr(spec, "default_model", None), getattr(spec, "model_option", None)
    if not name or not option or options.get(option) is not None:
        return None
    folder = default_model_dir(name)
    if folder is None:
        return None
    options[option] = folder
    return f"{name}@{model_digest(folder)[:12]}"


def installed_models() -> list[str]:
    """Names of the default model folders present (sorted)."""
    root = models_root()
    if root is None:
        return []
    return sorted(d for d in os.listdir(root)
                  if os.path.isfile(os.path.join(root, d, MANIFEST)))
