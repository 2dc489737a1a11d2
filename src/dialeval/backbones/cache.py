"""The one process-wide cache of loaded backbones, and the one rule for remembered vectors.

Models: a small LRU (`MAX_MODELS`, 3: a sentence backbone, a second one for comparison and a
causal LM fit in memory together; a fourth evicts the least recently used) keyed by the model
file's content key (`fingerprint.content_key`) plus how it was loaded (kind, task, device). Every
family asks here, so a model is loaded once per process (and so once per Dask worker) however
many metrics read it: MiniLM used to be loaded twice, by sentence-transformers for sent_cosine
and by AutoModel for MME. A plain-transformers reading ("hf") of a sentence-transformers folder
whose transformer sits in the folder itself is an entry of its own that shares the
sentence-transformers entry's weights (`loading._hf_view`), so sent_cosine, ADEM, BERTScore
and MME hold one MiniLM between them.

Trained dialeval artifacts (ADEM, AM-FM, MME, LMs, compositions, word vectors) have their own
bounded cache with the same rules, `dialeval.models.artifacts` (below this layer).

Vectors: each backbone remembers each text's vector per encoding setting (its shared
`TextEncoder` views). They live as long as their backbone stays in this cache, and
`clear_vectors()` forgets them all at once (tests use it to make a run really encode again);
`clear_backbones()` drops the models too.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any, Callable

MAX_MODELS = 3

_lock = threading.RLock()
_models: "OrderedDict[tuple, Any]" = OrderedDict()


def get_or_load(key: tuple, load: Callable[[], Any]) -> Any:
    with _lock:
        if key in _models:
            _models.move_to_end(key)
            return _models[key]
        value = load()
        _models[key] = value
        while len(_models) > MAX_MODELS:
            _models.popitem(last=False)
        return value


def cached_backbones() -> list:
    with _lock:
        return list(_models.values())


def clear_vectors() -> None:
    """Forget every remembered text vector of every cached backbone (the models stay)."""
    with _lock:
        for backbone in _models.values():
            backbone.clear_vectors()


def clear_backbones() -> None:
    """Drop every cached backbone (and with them their vectors)."""
    with _lock:
        _models.clear()
