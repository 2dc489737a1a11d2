"""CIDEr-D (pycocoevalcap's `Cider`, what nlg-eval reports as "CIDEr") and plain CIDEr
(Vedantam et al. 2015, vrama91/cider with corpus document frequencies).

Both weight each n-gram (n = 1..4) by tf * (ln N - ln max(1, df)), where df counts the items
whose reference set contains the n-gram and N is the number of items, both taken from the
evaluated set itself. CIDEr-D clips the hypothesis weight at the reference weight and
multiplies by a Gaussian penalty on the difference in bigram counts (sigma 6); plain CIDEr is
the cosine. score = 10 * mean over n of (sum over references of sim_n) / number of references.

Document frequencies always come from the batch's full reference sets (`Batch.root`), so in
`max` / `mean` mode only the similarity is taken against one reference at a time, as in the
reference runs.
"""

from __future__ import annotations

import numpy as np

from ..base import Batch, Metric
from .tokens import ngram_counts, tokenized

MAX_ORDER = 4
SIGMA = 6.0


def cider_pair_similarities(root: Batch, tokenizer: str, variant: str) -> np.ndarray:
    """sim_n of every (item, reference) pair of `root`: shape (number of references, 4)."""
    def build() -> np.ndarray:
        tb = tokenized(root, tokenizer)
        n_items = len(root)
        n_refs = tb.ref.n_sentences
        log_n = np.log(float(n_items)) if n_items else 0.0
        sims = np.zeros((n_refs, MAX_ORDER))
        for n in range(1, MAX_ORDER + 1):
            c = ngram_counts(root, tokenizer, n)
            bound = c.bound
            h_item, h_gram, h_tf = c.hyp_item, c.hyp_gram, c.hyp_count
            r_ref, r_gram, r_tf = c.ref_index, c.ref_gram, c.ref_count
            # document frequency: items whose reference set contains the n-gram
            item_gram = np.sort(tb.ref_item[r_ref] * bound + r_gram)
            item_gram = item_gram[np.r_[True, item_gram[1:] != item_gram[:-1]]] if len(item_gram) else item_gram
            df = np.bincount(item_gram % bound, minlength=bound).astype(np.float64)
            idf = log_n - np.log(np.maximum(1.0, df))
            v_h = h_tf * idf[h_gram]
            v_r = r_tf * idf[r_gram]
            norm_h = np.sqrt(np.bincount(h_item, weights=v_h * v_h, minlength=n_items).astype(np.float64))
            norm_r = np.sqrt(np.bincount(r_ref, weights=v_r * v_r, minlength=n_refs).astype(np.float64))
            hyp_keys = h_item * bound + h_gram
            ref_keys = tb.ref_item[r_ref] * bound + r_gram
            pos = np.searchsorted(hyp_keys, ref_keys)
            pos_ok = np.minimum(pos, max(len(hyp_keys) - 1, 0))
            if len(hyp_keys):
                found = (pos < len(hyp_keys)) & (hyp_keys[pos_ok] == ref_keys)
                v_hm = np.where(found, v_h[pos_ok], 0.0)
            else:
                v_hm = np.zeros(len(ref_keys))
            term = np.minimum(v_hm, v_r) * v_r if variant == "d" else v_hm * v_r
            val = np.bincount(r_ref, weights=term, minlength=n_refs).astype(np.float64)
            nh = norm_h[tb.ref_item]
            ok = (nh != 0) & (norm_r != 0)
            val[ok] /= nh[ok] * norm_r[ok]
            sims[:, n - 1] = val
        if variant == "d":
            len_h = np.maximum(tb.hyp.lengths - 1, 0)[tb.ref_item]
            len_r = np.maximum(tb.ref.lengths - 1, 0)
            delta = (len_h - len_r).astype(np.float64)
            sims *= (np.e ** (-(delta ** 2) / (2 * SIGMA ** 2)))[:, None]
        return sims
    return root.memo(("cider-sims", tokenizer, variant), build)


class Cider(Metric):
    """CIDEr-D (`variant='d'`, name `cider_d`) or plain CIDEr (`variant='plain'`, name `cider`)."""

    native_tokenizer = "whitespace"

    def __init__(self, variant: str = "d", refs_mode: str = "multi", tokenizer: str | None = None):
        super().__init__(refs_mode=refs_mode, tokenizer=tokenizer)
        if variant not in ("d", "plain"):
            raise ValueError("CIDEr variant is 'd' or 'plain'")
        self.variant = variant
        self.name = "cider_d" if variant == "d" else "cider"

    def multi_stats(self, batch: Batch) -> np.ndarray:
        sims = cider_pair_similarities(batch.root, self.tokenizer, self.variant)
        if batch.root is not batch:
            # single-reference rows: row j is the root's reference j
            return (np.mean(sims, axis=1) * 10.0)[:, None]
        tb = tokenized(batch, self.tokenizer)
        n_items = len(batch)
        summed = np.zeros((n_items, MAX_ORDER))
        np.add.at(summed, tb.ref_item, sims)
        counts = np.bincount(tb.ref_item, minlength=n_items).astype(np.float64)
        with np.errstate(invalid="ignore", divide="ignore"):
            score = np.mean(summed, axis=1) / counts * 10.0
        return score[:, None]

    def sentence_from_stats(self, stats: np.ndarray) -> np.ndarray:
        return stats[:, 0]

    def signature_options(self):
        opts = [("df", "corpus"), ("n", MAX_ORDER)]
        if self.variant == "d":
            opts.append(("sigma", SIGMA))
        return opts
