"""The loaded backbones: their entries in the process's one model cache, and the one rule for
remembered vectors.

Models live in `dialeval.cache.MODELS` (one budget in entries and bytes for every loaded model,
shared with the trained-artifact door `dialeval.models.artifacts`), keyed here by
("backbone", the model file's content key (`fingerprint.content_key`), how it was loaded: kind,
task, device, precision). Every family asks here, so a model is loaded once per process (and so
once per Dask worker) however many metrics read it: MiniLM used to be loaded twice, by
sentence-transformers for sent_cosine and by AutoModel for MME. A plain-transformers reading
("hf") of a sentence-transformers folder whose transformer sits in the folder itself is an entry
of its own that shares the sentence-transformers entry's weights (`loading._hf_view`): it is
stored as derived from that entry, so its weights count once and it leaves with them.

Vectors: each backbone remembers each text's vector per encoding setting (its shared
`TextEncoder` views, bounded memos of `dialeval.cache`). They live as long as their backbone
stays cached, and `clear_vectors()` forgets them all at once (tests use it to make a run really
encode again); `clear_backbones()` drops the models too.
"""

from __future__ import annotations

from typing import Any, Callable, Hashable

from ..cache import MODELS

PREFIX = "backbone"


def get_or_load(key: tuple, load: Callable[[], Any], parent: tuple | None = None, size: int | None = None) -> Any:
    """The backbone stored under `key`, loaded by `load()` on first use; `parent`: the key of the
    backbone it shares its weights with (it is then evicted with it); `size`: its bytes where
    they cannot be measured (memory a native library holds)."""
    return MODELS.get_or_load((PREFIX,) + key, load, parent=None if parent is None else (PREFIX,) + parent,
                              size=size)


def cached(key: tuple) -> Any:
    """The backbone stored under `key` if one is (not marked used), else None."""
    return MODELS.peek((PREFIX,) + key)


def _entries() -> list[tuple[Hashable, Any]]:
    return [(k, v) for k, v in MODELS.items() if isinstance(k, tuple) and k and k[0] == PREFIX]


def cached_backbones() -> list:
    return [v for _, v in _entries()]


def clear_vectors() -> None:
    """Forget every remembered text vector of every cached backbone (the models stay). A
    backbone that remembers none (a judge's llama.cpp model) has nothing to forget."""
    for backbone in cached_backbones():
        forget = getattr(backbone, "clear_vectors", None)
        if forget is not None:
            forget()


def clear_backbones() -> None:
    """Drop every cached backbone (and with them their vectors)."""
    for key, _ in _entries():
        MODELS.pop(key)
