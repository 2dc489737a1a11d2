"""Tokenised views of a batch shared by the word-overlap metrics (memoised per batch)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...text.ngrams import TokenTable, encode
from ...text.tokenizers import get_tokenizer
from ..base import Batch


@dataclass(frozen=True)
class TokenizedBatch:
    hyp: TokenTable        # one sentence per row of the batch
    ref: TokenTable        # all references, row by row, in order
    ref_item: np.ndarray   # row of the batch each reference belongs to
    vocab_size: int


def take(table: TokenTable, rows: np.ndarray) -> TokenTable:
    """The sentences `rows` of `table`, in that order (rows may repeat)."""
    lengths = table.lengths[rows]
    starts = np.zeros(len(rows), dtype=np.int64)
    if len(rows) > 1:
        np.cumsum(lengths[:-1], out=starts[1:])
    offsets = np.arange(int(lengths.sum()), dtype=np.int64) - np.repeat(starts, lengths)
    ids = table.ids[np.repeat(table.starts[rows], lengths) + offsets]
    return TokenTable(ids=ids, lengths=lengths, starts=starts)


def tokenized(batch: Batch, tokenizer: str) -> TokenizedBatch:
    def build() -> TokenizedBatch:
        if batch.root is not batch and batch.item_of_row is not None:
            root = tokenized(batch.root, tokenizer)
            return TokenizedBatch(hyp=take(root.hyp, batch.item_of_row), ref=root.ref,
                                  ref_item=np.arange(len(batch), dtype=np.int64),
                                  vocab_size=root.vocab_size)
        tok = get_tokenizer(tokenizer)
        vocab: dict[str, int] = {}
        hyp = encode([tok(h) for h in batch.hyps], vocab)
        ref = encode([tok(r) for refs in batch.refs for r in refs], vocab)
        counts = np.fromiter((len(r) for r in batch.refs), dtype=np.int64, count=len(batch.refs))
        ref_item = np.repeat(np.arange(len(batch), dtype=np.int64), counts)
        return TokenizedBatch(hyp=hyp, ref=ref, ref_item=ref_item, vocab_size=len(vocab))
    return batch.memo(("tokens", tokenizer), build)
