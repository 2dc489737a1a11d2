"""BLEU-1..4 exactly as pycocoevalcap (and so nlg-eval and the DSTC6 organisers) compute it.

The rules that make its numbers what they are: whitespace tokens, case kept; the reference
length is that of the reference closest in length to the hypothesis (the shorter on a tie);
clipped n-gram counts against the maximum count over references; no smoothing beyond adding
1e-15 to matches and 1e-9 to guesses; a brevity factor exp(1 - 1/ratio) whenever
ratio = (testlen + 1e-15) / (reflen + 1e-9) < 1, which includes equal lengths. Corpus BLEU
applies the same formula to statistics summed over the corpus.
"""

from __future__ import annotations


import numpy as np

from ..base import Batch, Metric
from .tokens import compiled, ngram_counts, rows_view, tokenized

MAX_ORDER = 4
TINY = 1e-15
SMALL = 1e-9


def bleu_statistics(batch: Batch, tokenizer: str) -> np.ndarray:
    """Rows [testlen, reflen, guess_1..4, correct_1..4]; NaN rows for samples without references."""
    def build() -> np.ndarray:
        if compiled() is not None and tokenized(batch.root, tokenizer).tok_hash is not None:
            return _compiled_statistics(batch, tokenizer)
        tb = tokenized(batch, tokenizer)
        n_items = len(batch)
        stats = np.zeros((n_items, 2 + 2 * MAX_ORDER))
        testlen = tb.hyp.lengths
        stats[:, 0] = testlen
        ref_counts = np.bincount(tb.ref_item, minlength=n_items)
        has_ref = ref_counts > 0
        # closest reference length: minimise (|len_r - testlen|, len_r)
        rlen = tb.ref.lengths
        bound = int(max(rlen.max(initial=0), testlen.max(initial=0))) + 1
        key = np.abs(rlen - testlen[tb.ref_item]) * bound + rlen
        starts = np.concatenate([[0], np.cumsum(ref_counts)[:-1]])
        closest = np.zeros(n_items, dtype=np.int64)
        if has_ref.any():
            closest[has_ref] = np.minimum.reduceat(key, starts[has_ref]) % bound
        stats[:, 1] = closest
        for n in range(1, MAX_ORDER + 1):
            stats[:, 1 + n] = np.maximum(testlen - n + 1, 0)
            c = ngram_counts(batch, tokenizer, n)
            bound_g = c.bound
            h_item, h_gram, h_count = c.hyp_item, c.hyp_gram, c.hyp_count
            r_ref, r_gram, r_count = c.ref_index, c.ref_gram, c.ref_count
            # maximum count of each n-gram over the references of an item: sort (item, gram,
            # count) packed in one int64; the last entry of each (item, gram) run is the maximum
            scale = int(r_count.max(initial=0)) + 1
            item_gram = tb.ref_item[r_ref] * bound_g + r_gram
            if n_items * bound_g * scale < 2 ** 62:
                packed = np.sort(item_gram * scale + r_count)
                keys, counts = packed // scale, packed % scale
            else:  # too large to pack: sort by two keys
                order = np.lexsort((r_count, item_gram))
                keys, counts = item_gram[order], r_count[order]
            last = np.ones(len(keys), dtype=bool)
            last[:-1] = keys[1:] != keys[:-1]
            ref_keys, ref_max = keys[last], counts[last]
            hyp_keys = h_item * bound_g + h_gram
            pos = np.searchsorted(ref_keys, hyp_keys)
            pos_ok = np.minimum(pos, max(len(ref_keys) - 1, 0))
            found = (pos < len(ref_keys)) & (ref_keys[pos_ok] == hyp_keys) if len(ref_keys) else np.zeros(len(hyp_keys), bool)
            clipped = np.where(found, np.minimum(h_count, ref_max[pos_ok] if len(ref_keys) else 0), 0)
            stats[:, 1 + MAX_ORDER + n] = np.bincount(h_item, weights=clipped, minlength=n_items)
        stats[~has_ref] = np.nan
        return stats
    return batch.memo(("bleu-stats", tokenizer), build)


def _compiled_statistics(batch: Batch, tokenizer: str) -> np.ndarray:
    """`bleu_statistics` with the clipped matches counted by the kernel, on the root's token ids
    (a `pairs()` batch re-uses them: row j is a root hypothesis against root reference j)."""
    kernel = compiled()
    tb, hyp_index, ref_off = rows_view(batch, tokenizer)
    n_items = len(batch)
    stats = np.zeros((n_items, 2 + 2 * MAX_ORDER))
    testlen = tb.hyp.lengths[hyp_index]
    stats[:, 0] = testlen
    ref_counts = np.diff(ref_off)
    has_ref = ref_counts > 0
    rlen = tb.ref.lengths
    bound = int(max(rlen.max(initial=0), testlen.max(initial=0))) + 1
    key = np.abs(rlen - np.repeat(testlen, ref_counts)) * bound + rlen
    if has_ref.any():
        stats[has_ref, 1] = np.minimum.reduceat(key, ref_off[:-1][has_ref]) % bound
    for n in range(1, MAX_ORDER + 1):
        stats[:, 1 + n] = np.maximum(testlen - n + 1, 0)
    stats[:, 2 + MAX_ORDER:] = kernel.bleu_matches(hyp_index, ref_off, tb.hyp.ids, tb.hyp.starts, tb.hyp.lengths,
                                                   tb.ref.ids, tb.ref.starts, tb.ref.lengths, tb.vocab_size,
                                                   MAX_ORDER)
    stats[~has_ref] = np.nan
    return stats


def bleu_from_stats(stats: np.ndarray, order: int) -> np.ndarray:
    """Sentence (or, on summed rows, corpus) BLEU-`order` from statistics rows."""
    stats = np.atleast_2d(stats)
    testlen, reflen = stats[:, 0], stats[:, 1]
    value = np.ones(len(stats))
    for k in range(1, order + 1):
        value = value * ((stats[:, 1 + MAX_ORDER + k] + TINY) / (stats[:, 1 + k] + SMALL))
    value = value ** (1.0 / order)
    ratio = (testlen + TINY) / (reflen + SMALL)
    short = ratio < 1
    with np.errstate(divide="ignore", over="ignore"):
        value[short] *= np.exp(1 - 1 / ratio[short])
    return value


class Bleu(Metric):
    """BLEU-n (pycocoevalcap). Corpus BLEU is computed from summed statistics."""

    native_tokenizer = "whitespace"
    corpus_from_summed_stats = True
    score_range = (0.0, 1.0)

    def __init__(self, order: int = 4, refs_mode: str = "multi", tokenizer: str | None = None):
        super().__init__(refs_mode=refs_mode, tokenizer=tokenizer)
        if not 1 <= order <= MAX_ORDER:
            raise ValueError(f"BLEU order must be 1..{MAX_ORDER}")
        self.order = order
        self.name = f"bleu{order}"

    def multi_stats(self, batch: Batch) -> np.ndarray:
        return bleu_statistics(batch, self.tokenizer)

    def sentence_from_stats(self, stats: np.ndarray) -> np.ndarray:
        return bleu_from_stats(stats, self.order)

    def corpus_from_stats(self, total: np.ndarray) -> float:
        return float(bleu_from_stats(total, self.order)[0])

    def corpus_from_summed_rows(self, totals: np.ndarray) -> np.ndarray:
        return bleu_from_stats(totals, self.order)

    def signature_options(self):
        return [("smooth", "coco"), ("reflen", "closest")]
