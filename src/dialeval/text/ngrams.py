"""Sentences as integer arrays, and n-grams as integer keys.

Word-overlap metrics spend their time counting n-grams. Counting them with Python dictionaries
per sentence (as the reference implementations do) is what makes those slow; here a whole set
of sentences becomes one flat id array, each n-gram one int64 key, and counting becomes a few
vectorised sorts.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import chain
from typing import Sequence

import numpy as np


@dataclass(frozen=True)
class TokenTable:
    """Token ids of many sentences laid end to end; sentence s is ids[starts[s]:starts[s]+lengths[s]]."""

    ids: np.ndarray      # int64 (T,)
    lengths: np.ndarray  # int64 (S,)
    starts: np.ndarray   # int64 (S,)

    @property
    def n_sentences(self) -> int:
        return len(self.lengths)

    @property
    def sentence_of_token(self) -> np.ndarray:
        return np.repeat(np.arange(self.n_sentences, dtype=np.int64), self.lengths)


def encode(sentences: Sequence[Sequence[str]], vocab: dict[str, int]) -> TokenTable:
    """Map token lists to ids, growing `vocab` (shared between tables that must be compared)."""
    lengths = np.fromiter(map(len, sentences), dtype=np.int64, count=len(sentences))
    return encode_flat(list(chain.from_iterable(sentences)), lengths, vocab)


def encode_flat(flat: list[str], lengths: np.ndarray, vocab: dict[str, int]) -> TokenTable:
    """As `encode`, from all tokens laid end to end and the sentence lengths."""
    for tok in dict.fromkeys(flat):  # Python-level work only once per distinct token
        if tok not in vocab:
            vocab[tok] = len(vocab)
    ids = np.fromiter(map(vocab.__getitem__, flat), dtype=np.int64, count=len(flat))
    starts = np.zeros(len(lengths), dtype=np.int64)
    if len(lengths) > 1:
        np.cumsum(lengths[:-1], out=starts[1:])
    return TokenTable(ids=ids, lengths=lengths, starts=starts)


def ngram_keys(tables: Sequence[TokenTable], n: int, vocab_size: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """For each table: (sentence index, n-gram key) of every n-gram occurrence, in text order.

    Keys are equal exactly when the n-grams are equal, across all `tables` (which must share one
    vocabulary). They are dense ranks in [0, number of distinct n-grams), so callers can pack
    them with sentence indices into one int64 without overflow.
    """
    raw = []
    for table in tables:
        pos_in_sent = np.arange(len(table.ids), dtype=np.int64) - np.repeat(table.starts, table.lengths)
        sent = table.sentence_of_token
        valid = pos_in_sent + n <= table.lengths[sent]
        starts = np.flatnonzero(valid)
        raw.append((sent[starts], starts, table.ids))
    base = max(vocab_size, 1)
    if n == 1 or base ** n < 2 ** 62:
        keys = []
        for sent, starts, ids in raw:
            key = ids[starts].copy()
            for k in range(1, n):
                key *= base
                key += ids[starts + k]
            keys.append(key)
    else:  # large vocabulary: build the key order by order, re-ranking after each step
        keys = [ids[starts].copy() for _, starts, ids in raw]
        for k in range(1, n):
            ranked = dense_rank(keys)
            keys = [r * base + ids[starts + k] for r, (_, starts, ids) in zip(ranked, raw)]
    ranked = dense_rank(keys)
    return [(sent, key) for (sent, _, _), key in zip(raw, ranked)]


def dense_rank(arrays: Sequence[np.ndarray]) -> list[np.ndarray]:
    """Replace values by their rank among the distinct values of all arrays together."""
    sizes = [len(a) for a in arrays]
    if sum(sizes) == 0:
        return [a.astype(np.int64) for a in arrays]
    _, inverse = np.unique(np.concatenate(arrays), return_inverse=True)
    inverse = inverse.astype(np.int64, copy=False)
    return list(np.split(inverse, np.cumsum(sizes)[:-1]))


def count_pairs(outer: np.ndarray, key: np.ndarray, key_bound: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Distinct (outer, key) pairs with their multiplicities, sorted by (outer, key)."""
    packed = outer * max(key_bound, 1) + key
    uniq, counts = np.unique(packed, return_counts=True)
    bound = max(key_bound, 1)
    return uniq // bound, uniq % bound, counts
