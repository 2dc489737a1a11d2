"""ROUGE-L as pycocoevalcap computes it.

Tokens are `str.split(" ")`, so a double space makes an empty token that counts. Per reference,
P = LCS/len(hyp) and R = LCS/len(ref); with several references pycocoevalcap combines the best
P with the best R (possibly from different references) into F with beta = 1.2.

The LCS lengths are computed for all (hypothesis, reference) pairs at once with the
bit-parallel algorithm of Allison & Dix / Hyyrö: one 64-bit word per pair holds the DP row,
so a pair costs one vectorised step per hypothesis token. References longer than 64 tokens
fall back to the same algorithm on Python integers.
"""

from __future__ import annotations

import numpy as np

from ...text.ngrams import TokenTable
from ..base import Batch, Metric
from .tokens import compiled, rows_view, take, tokenized

BETA = 1.2
_CHUNK_CELLS = 1 << 22


def _padded(table: TokenTable, width: int, fill: int) -> np.ndarray:
    out = np.full((table.n_sentences, width), fill, dtype=np.int64)
    mask = np.arange(width)[None, :] < table.lengths[:, None]
    out[mask] = table.ids
    return out


def lcs_lengths(hyp: TokenTable, ref: TokenTable) -> np.ndarray:
    """LCS length of hyp sentence j and ref sentence j, for every j."""
    n = ref.n_sentences
    out = np.zeros(n, dtype=np.int64)
    lh, lr = hyp.lengths, ref.lengths
    fast = np.flatnonzero((lr <= 64) & (lr > 0) & (lh > 0))
    fast = fast[np.argsort(np.maximum(lh[fast], lr[fast]), kind="stable")]
    start = 0
    while start < len(fast):
        width = int(max(lh[fast[start]], lr[fast[start]]))
        size = max(1, _CHUNK_CELLS // (width * width))
        rows = fast[start:start + size]
        start += size
        out[rows] = _lcs_bitparallel(take(hyp, rows), take(ref, rows))
    for j in np.flatnonzero((lr > 64) & (lh > 0)):
        out[j] = _lcs_python(hyp.ids[hyp.starts[j]:hyp.starts[j] + lh[j]],
                             ref.ids[ref.starts[j]:ref.starts[j] + lr[j]])
    return out


def _lcs_bitparallel(hyp: TokenTable, ref: TokenTable) -> np.ndarray:
    wh, wr = int(hyp.lengths.max()), int(ref.lengths.max())
    h = _padded(hyp, wh, -1)
    r = _padded(ref, wr, -2)
    eq = h[:, :, None] == r[:, None, :]                       # (pairs, wh, wr)
    packed = np.packbits(eq, axis=2, bitorder="little")      # (pairs, wh, ceil(wr/8))
    if packed.shape[2] < 8:
        packed = np.concatenate(
            [packed, np.zeros(packed.shape[:2] + (8 - packed.shape[2],), dtype=np.uint8)], axis=2)
    masks = np.ascontiguousarray(packed).view("<u8")[:, :, 0]  # (pairs, wh)
    v = np.full(len(h), np.uint64(0xFFFFFFFFFFFFFFFF))
    for j in range(wh):
        u = v & masks[:, j]
        v = (v + u) | (v - u)
    lengths = ref.lengths.astype(np.uint64)
    low = np.where(lengths == 64, np.uint64(0xFFFFFFFFFFFFFFFF),
                   (np.uint64(1) << np.minimum(lengths, 63)) - np.uint64(1))
    return np.bitwise_count(~v & low).astype(np.int64)


def _lcs_python(a: np.ndarray, b: np.ndarray) -> int:
    masks: dict[int, int] = {}
    for i, tok in enumerate(b.tolist()):
        masks[tok] = masks.get(tok, 0) | (1 << i)
    full = (1 << len(b)) - 1
    v = full
    for tok in a.tolist():
        u = v & masks.get(tok, 0)
        v = ((v + u) | (v - u)) & full
    return len(b) - v.bit_count()


class RougeL(Metric):
    """ROUGE-L F-measure (beta 1.2), pycocoevalcap's multi-reference rule in `multi` mode."""

    name = "rouge_l"
    score_range = (0.0, 1.0)
    native_tokenizer = "space"

    def multi_stats(self, batch: Batch) -> np.ndarray:
        n_items = len(batch)
        kernel = compiled()
        if kernel is not None and tokenized(batch.root, self.tokenizer).tok_hash is not None:
            tb, hyp_index, ref_off = rows_view(batch, self.tokenizer)
            ref_item = np.repeat(np.arange(n_items, dtype=np.int64), np.diff(ref_off))
            hyp_of_ref = hyp_index[ref_item]
            lcs = kernel.lcs_pairs(tb.hyp.ids, tb.hyp.starts, tb.hyp.lengths, hyp_of_ref,
                                   tb.ref.ids, tb.ref.starts, tb.ref.lengths).astype(np.float64)
            len_h = tb.hyp.lengths[hyp_of_ref].astype(np.float64)
        else:
            tb = tokenized(batch, self.tokenizer)
            ref_item = tb.ref_item
            lcs = lcs_lengths(take(tb.hyp, ref_item), tb.ref).astype(np.float64)
            len_h = tb.hyp.lengths[ref_item].astype(np.float64)
        len_r = tb.ref.lengths.astype(np.float64)
        with np.errstate(divide="ignore", invalid="ignore"):
            prec = np.where(len_h > 0, lcs / len_h, 0.0)
            rec = np.where(len_r > 0, lcs / len_r, 0.0)
        p = np.full(n_items, -np.inf)
        r = np.full(n_items, -np.inf)
        np.maximum.at(p, ref_item, prec)
        np.maximum.at(r, ref_item, rec)
        b2 = BETA ** 2
        with np.errstate(divide="ignore", invalid="ignore"):
            score = ((1 + b2) * p * r) / (r + b2 * p)
        score = np.where((p != 0) & (r != 0), score, 0.0)
        score[np.isinf(p)] = np.nan  # no references
        return score[:, None]

    def sentence_from_stats(self, stats: np.ndarray) -> np.ndarray:
        return stats[:, 0]

    def signature_options(self):
        return [("beta", BETA)]
