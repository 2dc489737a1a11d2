"""Tokenised views of a batch shared by the word-overlap metrics (memoised per batch)."""

from __future__ import annotations

from dataclasses import dataclass
from itertools import repeat

import numpy as np

from ...text.ngrams import TokenTable, count_pairs, encode, encode_flat, ngram_keys
from ...text.tokenizers import tokenize_all
from ..base import Batch


@dataclass(frozen=True)
class TokenizedBatch:
    hyp: TokenTable        # one sentence per row of the batch
    ref: TokenTable        # all references, row by row, in order
    ref_item: np.ndarray   # row of the batch each reference belongs to
    vocab_size: int
    vocab: tuple[str, ...] = ()  # token of each id (for keys that must agree across batches)


def take(table: TokenTable, rows: np.ndarray) -> TokenTable:
    """The sentences `rows` of `table`, in that order (rows may repeat)."""
    lengths = table.lengths[rows]
    starts = np.zeros(len(rows), dtype=np.int64)
    if len(rows) > 1:
        np.cumsum(lengths[:-1], out=starts[1:])
    offsets = np.arange(int(lengths.sum()), dtype=np.int64) - np.repeat(starts, lengths)
    ids = table.ids[np.repeat(table.starts[rows], lengths) + offsets]
    return TokenTable(ids=ids, lengths=lengths, starts=starts)


# Every character str.split() splits on, except the plain space.
_OTHER_WHITESPACE = tuple("\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f\x85\xa0\u1680\u2000\u2001\u2002\u2003"
                          "\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000")


def _space_is_whitespace(batch: Batch) -> bool:
    """True when splitting on single spaces gives the same tokens as splitting on whitespace
    (no empty text, no double, leading or trailing space, no other whitespace), so that ROUGE-L
    can share the BLEU/CIDEr tokens. Substring tests on the joined texts keep this cheap."""
    texts = batch.hyps + [r for refs in batch.refs for r in refs]
    joined = "\x00" + "\x00".join(texts) + "\x00"
    if any(not t for t in texts) or "  " in joined or "\x00 " in joined or " \x00" in joined:
        return False
    if joined.isascii():
        return not any(c in joined for c in _OTHER_WHITESPACE[:9])
    return not any(c in joined for c in _OTHER_WHITESPACE)


def tokenized(batch: Batch, tokenizer: str) -> TokenizedBatch:
    if tokenizer == "space" and batch.root is batch and batch.memo("space==whitespace",
                                                                   lambda: _space_is_whitespace(batch)):
        tokenizer = "whitespace"

    def build() -> TokenizedBatch:
        if batch.root is not batch and batch.item_of_row is not None:
            root = tokenized(batch.root, tokenizer)
            return TokenizedBatch(hyp=take(root.hyp, batch.item_of_row), ref=root.ref,
                                  ref_item=np.arange(len(batch), dtype=np.int64),
                                  vocab_size=root.vocab_size, vocab=root.vocab)
        vocab: dict[str, int] = {}
        refs = [r for refs in batch.refs for r in refs]
        if tokenizer in ("whitespace", "space") and batch.memo("space==whitespace",
                                                               lambda: _space_is_whitespace(batch)):
            # plain text (single spaces only): one C-level split of all texts at once
            hyp, ref = (encode_flat(" ".join(texts).split(" ") if texts else [],
                                    np.fromiter(map(str.count, texts, repeat(" ")), np.int64, len(texts)) + 1,
                                    vocab) for texts in (batch.hyps, refs))
        else:
            hyp = encode(tokenize_all(tokenizer, batch.hyps), vocab)
            ref = encode(tokenize_all(tokenizer, refs), vocab)
        counts = np.fromiter((len(r) for r in batch.refs), dtype=np.int64, count=len(batch.refs))
        ref_item = np.repeat(np.arange(len(batch), dtype=np.int64), counts)
        return TokenizedBatch(hyp=hyp, ref=ref, ref_item=ref_item, vocab_size=len(vocab), vocab=tuple(vocab))
    return batch.memo(("tokens", tokenizer), build)


@dataclass(frozen=True)
class NgramCounts:
    """Distinct n-grams of one order per hypothesis and per reference, with their counts.

    Gram keys are dense ranks shared by hypotheses and references, below `bound`.
    """

    hyp_item: np.ndarray
    hyp_gram: np.ndarray
    hyp_count: np.ndarray
    ref_index: np.ndarray
    ref_gram: np.ndarray
    ref_count: np.ndarray
    bound: int


def ngram_counts(batch: Batch, tokenizer: str, n: int) -> NgramCounts:
    """Memoised per batch, so BLEU and CIDEr count each order once."""
    def build() -> NgramCounts:
        tb = tokenized(batch, tokenizer)
        (h_sent, h_key), (r_sent, r_key) = ngram_occurrences(batch, tokenizer, n)
        bound = int(max(h_key.max(initial=-1), r_key.max(initial=-1))) + 1
        return NgramCounts(*count_pairs(h_sent, h_key, bound), *count_pairs(r_sent, r_key, bound), bound)
    return batch.memo(("ngram-counts", tokenizer, n), build)


def ngram_occurrences(batch: Batch, tokenizer: str, n: int):
    """[(sentence, dense key) of each hypothesis n-gram, the same for references], text order;
    memoised so that CIDEr can map dense keys to batch-independent hashes."""
    def build():
        tb = tokenized(batch, tokenizer)
        return ngram_keys([tb.hyp, tb.ref], n, tb.vocab_size)
    return batch.memo(("ngram-occurrences", tokenizer, n), build)
