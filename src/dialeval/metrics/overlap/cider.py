"""CIDEr-D (pycocoevalcap's `Cider`, what nlg-eval reports as "CIDEr") and plain CIDEr
(Vedantam et al. 2015, vrama91/cider with corpus document frequencies).

Both weight each n-gram (n = 1..4) by tf * (ln N - ln max(1, df)), where df counts the items
whose reference set contains the n-gram and N is the number of items, both taken from the
evaluated set itself. CIDEr-D clips the hypothesis weight at the reference weight and
multiplies by a Gaussian penalty on the difference in bigram counts (sigma 6); plain CIDEr is
the cosine. score = 10 * mean over n of (sum over references of sim_n) / number of references.

Document frequencies are a corpus-wide quantity, so CIDEr plans two passes (`corpus_pass_key`):
the engine first gathers, shard by shard, how many items' reference sets contain each n-gram
(`DocumentFrequencies`, keyed by a 64-bit hash of the n-gram's tokens so that shards tokenised
apart agree), merges them, and only then scores; any sharding of a set gives the numbers of
the set scored whole. A batch scored on its own (no merged state in `Batch.corpus`) takes its
document frequencies from its own full reference sets (`Batch.root`), as before. In `max` /
`mean` mode only the similarity is taken against one reference at a time, as in the reference
runs.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..base import Batch, Metric
from .tokens import compiled, grams, mix64, ngram_counts, ngram_occurrences, rows_view, token_hashes, tokenized

MAX_ORDER = 4
SIGMA = 6.0
_MULT = np.uint64(0x9E3779B97F4A7C15)


# --------------------------------------------------------------------------- n-gram hashes

def _occurrence_hashes(table, n: int, tok_hash: np.ndarray) -> np.ndarray:
    """Hash of every n-gram occurrence of a token table, in text order (as `ngram_keys`):
    mix64((t1 * M + t2) * M + ... + tn + n) of the token hashes t (the kernel's `ngram_ids`)."""
    pos_in_sent = np.arange(len(table.ids), dtype=np.int64) - np.repeat(table.starts, table.lengths)
    valid = pos_in_sent + n <= table.lengths[table.sentence_of_token]
    starts = np.flatnonzero(valid)
    with np.errstate(over="ignore"):
        h = tok_hash[table.ids[starts]].copy()
        for k in range(1, n):
            h = h * _MULT + tok_hash[table.ids[starts + k]]
        return mix64(h + np.uint64(n))


def gram_hashes(batch: Batch, tokenizer: str, n: int) -> np.ndarray:
    """Hash of each dense n-gram key of `batch` (`ngram_counts(...).bound` entries)."""
    def build() -> np.ndarray:
        tb = tokenized(batch, tokenizer)
        tok_hash = token_hashes(batch, tokenizer)
        (_, h_key), (_, r_key) = ngram_occurrences(batch, tokenizer, n)
        bound = ngram_counts(batch, tokenizer, n).bound
        out = np.zeros(bound, dtype=np.uint64)
        out[h_key] = _occurrence_hashes(tb.hyp, n, tok_hash)
        out[r_key] = _occurrence_hashes(tb.ref, n, tok_hash)
        return out
    return batch.memo(("gram-hashes", tokenizer, n), build)


# --------------------------------------------------------------------------- document frequencies

@dataclass
class DocumentFrequencies:
    """For one evaluated set: its number of items, and per order the sorted n-gram hashes with
    the number of items whose reference set contains each. Merging adds counts, so the state of
    a set is the same however it was sharded."""

    n_items: int
    keys: list[np.ndarray]     # per order, distinct uint64 (sorted after a merge; the kernel's
                               # first pass leaves them in order of first appearance)
    counts: list[np.ndarray]   # per order, int64

    def merge(self, other: "DocumentFrequencies") -> "DocumentFrequencies":
        keys, counts = [], []
        for k1, c1, k2, c2 in zip(self.keys, self.counts, other.keys, other.counts):
            if not len(k2):
                keys.append(k1), counts.append(c1)
                continue
            if not len(k1):
                keys.append(k2), counts.append(c2)
                continue
            uniq, inverse = np.unique(np.concatenate([k1, k2]), return_inverse=True)
            keys.append(uniq)
            counts.append(np.bincount(inverse.ravel(), weights=np.concatenate([c1, c2]),
                                      minlength=len(uniq)).astype(np.int64))
        return DocumentFrequencies(self.n_items + other.n_items, keys, counts)

    def lookup(self, order: int, hashes: np.ndarray) -> np.ndarray:
        keys, counts = self.keys[order - 1], self.counts[order - 1]
        if not len(keys):
            return np.zeros(len(hashes), dtype=np.float64)
        kernel = compiled()
        if kernel is not None:
            return kernel.lookup_counts(keys, counts, np.ascontiguousarray(hashes, dtype=np.uint64))
        if len(keys) > 1 and not (keys[1:] > keys[:-1]).all():
            order = np.argsort(keys)
            keys, counts = keys[order], counts[order]
        pos = np.minimum(np.searchsorted(keys, hashes), len(keys) - 1)
        return np.where(keys[pos] == hashes, counts[pos], 0).astype(np.float64)

    def digest(self) -> bytes:
        """Content hash: equal states (systems with the same references) can share one object."""
        import hashlib   # here, not at import: it loads OpenSSL, and only several shards digest

        h = hashlib.blake2b(digest_size=16)
        h.update(str(self.n_items).encode())
        for k, c in zip(self.keys, self.counts):
            h.update(len(k).to_bytes(8, "little"))
            h.update(k.tobytes())
            h.update(c.tobytes())
        return h.digest()

    @property
    def nbytes(self) -> int:
        return sum(k.nbytes + c.nbytes for k, c in zip(self.keys, self.counts))

    def to_arrays(self) -> dict[str, np.ndarray]:
        """Named arrays that `from_arrays` turns back into an equal state (exact integers)."""
        out = {"n_items": np.array([self.n_items], dtype=np.int64)}
        for n, (k, c) in enumerate(zip(self.keys, self.counts), start=1):
            out[f"keys{n}"] = np.asarray(k, dtype=np.uint64)
            out[f"counts{n}"] = np.asarray(c, dtype=np.int64)
        return out

    @classmethod
    def from_arrays(cls, arrays: dict[str, np.ndarray]) -> "DocumentFrequencies":
        orders = range(1, MAX_ORDER + 1)
        return cls(int(arrays["n_items"][0]), [np.asarray(arrays[f"keys{n}"], dtype=np.uint64) for n in orders],
                   [np.asarray(arrays[f"counts{n}"], dtype=np.int64) for n in orders])


def document_frequencies(batch: Batch, tokenizer: str) -> DocumentFrequencies:
    """The first-pass state of one shard: only its reference sets matter."""
    kernel = compiled()
    if kernel is not None and tokenizer == "whitespace" and batch.root is batch:
        # straight from the texts: no token or n-gram ids, only hashes
        counts = np.fromiter(map(len, batch.refs), dtype=np.int64, count=len(batch.refs))
        ref_off = np.zeros(len(batch) + 1, dtype=np.int64)
        np.cumsum(counts, out=ref_off[1:])
        try:
            found = kernel.reference_doc_freq([r for refs in batch.refs for r in refs], ref_off, MAX_ORDER)
        except UnicodeEncodeError:
            pass
        else:
            return DocumentFrequencies(len(batch), [k for k, _ in found], [c for _, c in found])
    tb = tokenized(batch, tokenizer)
    keys, counts = [], []
    if kernel is not None and tb.tok_hash is not None:
        _, _, ref_off = rows_view(batch, tokenizer)
        for n in range(1, MAX_ORDER + 1):
            _, gid_r, hashes = grams(batch, tokenizer, n)
            df = kernel.doc_freq(ref_off, tb.ref.starts, tb.ref.lengths, gid_r, len(hashes), n)
            present = np.flatnonzero(df)
            keys.append(hashes[present])   # in order of first appearance (see the class doc)
            counts.append(df[present])
        return DocumentFrequencies(len(batch), keys, counts)
    for n in range(1, MAX_ORDER + 1):
        c = ngram_counts(batch, tokenizer, n)
        bound = max(c.bound, 1)
        # distinct (item, n-gram) pairs, packed in one int64 (dense keys are below `bound`)
        pairs = np.unique(tb.ref_item[c.ref_index] * bound + c.ref_gram)
        df = np.bincount(pairs % bound, minlength=bound)
        present = np.flatnonzero(df)
        hashes = gram_hashes(batch, tokenizer, n)[present]
        order = np.argsort(hashes, kind="stable")
        keys.append(hashes[order])
        counts.append(df[present][order].astype(np.int64))
    return DocumentFrequencies(len(batch), keys, counts)


def idf_of_counts(df: np.ndarray, log_n: float) -> np.ndarray:
    """log N - log max(1, df) of integer document frequencies, through a table of the values
    df takes (0..N): the same operations on the same values as computing it per n-gram, with
    N + 1 logarithms instead of one per distinct n-gram (hundreds of thousands)."""
    top = int(df.max(initial=0))
    table = log_n - np.log(np.maximum(1.0, np.arange(top + 1, dtype=np.float64)))
    return table[df]


def cider_pair_similarities(root: Batch, tokenizer: str, variant: str) -> np.ndarray:
    """sim_n of every (item, reference) pair of `root`: shape (number of references, 4).
    Document frequencies come from the merged first pass in `root.corpus` when there is one."""
    def build() -> np.ndarray:
        tb = tokenized(root, tokenizer)
        corpus_df: DocumentFrequencies | None = root.corpus.get(("cider-df", tokenizer))
        n_items = len(root) if corpus_df is None else corpus_df.n_items
        n_rows = len(root)
        n_refs = tb.ref.n_sentences
        log_n = np.log(float(n_items)) if n_items else 0.0
        sims = np.zeros((n_refs, MAX_ORDER))
        kernel = compiled()
        fast = kernel is not None and tb.tok_hash is not None
        for n in range(1, MAX_ORDER + 1):
            if fast:
                _, hyp_index, ref_off = rows_view(root, tokenizer)
                gid_h, gid_r, hashes = grams(root, tokenizer, n)
                if corpus_df is not None:
                    df = corpus_df.lookup(n, hashes)
                    idf = log_n - np.log(np.maximum(1.0, df))
                else:
                    df = kernel.doc_freq(ref_off, tb.ref.starts, tb.ref.lengths, gid_r, len(hashes), n)
                    idf = idf_of_counts(df, log_n)
                sims[:, n - 1] = kernel.cider_sims(hyp_index, ref_off, tb.hyp.starts, tb.hyp.lengths, gid_h,
                                                   tb.ref.starts, tb.ref.lengths, gid_r, hashes, idf, n,
                                                   variant == "d")
                continue
            c = ngram_counts(root, tokenizer, n)
            bound = c.bound
            h_item, h_gram, h_tf = c.hyp_item, c.hyp_gram, c.hyp_count
            r_ref, r_gram, r_tf = c.ref_index, c.ref_gram, c.ref_count
            if corpus_df is not None:
                df = corpus_df.lookup(n, gram_hashes(root, tokenizer, n))
            else:
                # document frequency: items whose reference set contains the n-gram
                item_gram = np.sort(tb.ref_item[r_ref] * bound + r_gram)
                item_gram = item_gram[np.r_[True, item_gram[1:] != item_gram[:-1]]] if len(item_gram) else item_gram
                df = np.bincount(item_gram % bound, minlength=bound).astype(np.float64)
            idf = log_n - np.log(np.maximum(1.0, df))
            v_h = h_tf * idf[h_gram]
            v_r = r_tf * idf[r_gram]
            # sum each item's n-grams in hash order, not in this batch's vocabulary order, so
            # that a sample's value is bit-for-bit the same in any shard (and on either path)
            gh = gram_hashes(root, tokenizer, n)
            perm_h = np.lexsort((gh[h_gram], h_item))
            perm_r = np.lexsort((gh[r_gram], r_ref))
            norm_h = np.sqrt(np.bincount(h_item[perm_h], weights=(v_h * v_h)[perm_h], minlength=n_rows).astype(np.float64))
            norm_r = np.sqrt(np.bincount(r_ref[perm_r], weights=(v_r * v_r)[perm_r], minlength=n_refs).astype(np.float64))
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
            val = np.bincount(r_ref[perm_r], weights=term[perm_r], minlength=n_refs).astype(np.float64)
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
    state_kind = "sum"
    score_range = (0.0, None)
    corpus_pass_type = DocumentFrequencies

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

    def corpus_pass_key(self):
        return ("cider-df", self.tokenizer)

    def corpus_pass_state(self, batch: Batch) -> DocumentFrequencies:
        return document_frequencies(batch, self.tokenizer)

    def signature_options(self):
        opts = [("df", "corpus"), ("n", MAX_ORDER)]
        if self.variant == "d":
            opts.append(("sigma", SIGMA))
        return opts
